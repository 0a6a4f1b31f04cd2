#include "engine/constraint.h"

#include <algorithm>

#include "grammar/constraint_grammar.h"
#include "sampling/token_bitmask.h"

namespace strata::engine {

Result<std::shared_ptr<const grammar::CompiledGrammar>> ConstraintCompiler::compile(
    const OutputConstraint& c, const CompileBudget& budget) {
  std::string key = std::to_string(static_cast<int>(c.kind)) + (c.best_effort ? "b" : "s") +
                    (c.formats == FormatPolicy::kAssert ? "f" : "a");
  key += c.root + '\0' + c.text;
  std::shared_ptr<const grammar::TokenVocabulary> vocabulary;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
    if (!vocabulary_) vocabulary_ = grammar::TokenVocabulary::from_tokenizer(tokenizer_);
    vocabulary = vocabulary_;
  }
  // Two threads may compile the same constraint at once; the second insert finds the first.
  // One meter for both stages: the budget and the work cap cover the whole compilation.
  grammar::CompileMeter meter(budget);
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const grammar::Grammar> parsed,
                          grammar::grammar_for_constraint(c, &meter));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const grammar::CompiledGrammar> compiled,
                          grammar::CompiledGrammar::compile(std::move(parsed), vocabulary, &meter));
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = index_.find(key); it != index_.end()) return it->second->second;
  lru_.emplace_front(std::move(key), compiled);
  index_[lru_.front().first] = lru_.begin();
  if (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return compiled;
}

SequenceConstraint::SequenceConstraint(
    const std::shared_ptr<const grammar::CompiledGrammar>& grammar,
    std::vector<std::string> triggers, size_t max_new_tokens)
    : matcher_(grammar),
      vocabulary_(grammar->vocabulary()),
      triggers_(std::move(triggers)),
      active_(triggers_.empty()),
      max_new_tokens_(max_new_tokens),
      mask_(grammar->vocabulary().size()) {}

bool SequenceConstraint::fill_mask(size_t n_generated) {
  if (!active_) return false;
  matcher_.fill_next_token_bitmask(
      mask_.words(), n_generated < max_new_tokens_ ? max_new_tokens_ - n_generated : 1);
  mask_.clear_padding();
  return true;
}

Status SequenceConstraint::accept(TokenId token) {
  Undo undo{active_, text_, matcher_.n_accepted_tokens()};
  Status status = advance(token);
  if (status.ok()) undo_.push_back(std::move(undo));
  return status;
}

void SequenceConstraint::rollback(size_t n_tokens) {
  n_tokens = std::min(n_tokens, undo_.size());
  if (n_tokens == 0) return;
  Undo& to = undo_[undo_.size() - n_tokens];
  matcher_.rollback(matcher_.n_accepted_tokens() - to.matcher_tokens);
  active_ = to.active;
  text_ = std::move(to.text);
  undo_.resize(undo_.size() - n_tokens);
}

Status SequenceConstraint::advance(TokenId token) {
  if (active_) {
    if (!matcher_.accept_token(token)) {
      return make_error(ErrorCode::kInternal,
                        "token " + std::to_string(token) + " does not fit the output's grammar");
    }
    return ok_status();
  }
  if (token < 0 || static_cast<size_t>(token) >= vocabulary_.size()) return ok_status();
  // Look for a trigger that ends in this token's bytes (it may have begun in earlier ones).
  const size_t searched = text_.size();
  text_ += vocabulary_.piece(token);
  size_t first = std::string::npos;
  for (const std::string& trigger : triggers_) {
    const size_t from = searched >= trigger.size() ? searched - trigger.size() + 1 : 0;
    first = std::min(first, text_.find(trigger, from));
  }
  if (first == std::string::npos) {
    // Only a trigger's first bytes can still begin in what was seen; drop the rest.
    size_t keep = 0;
    for (const std::string& trigger : triggers_) keep = std::max(keep, trigger.size() - 1);
    if (text_.size() > keep) text_.erase(0, text_.size() - keep);
    return ok_status();
  }
  active_ = true;
  if (!matcher_.accept_string(std::string_view(text_).substr(first))) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the text after the tool-call trigger does not start a valid call");
  }
  text_.clear();
  return ok_status();
}

}  // namespace strata::engine
