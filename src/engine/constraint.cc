#include "engine/constraint.h"

#include <algorithm>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "sampling/token_bitmask.h"

namespace strata::engine {
namespace {

Result<std::string> to_gbnf(const OutputConstraint& c) {
  switch (c.kind) {
    case ConstraintKind::kGrammar:
      return c.text;
    case ConstraintKind::kJsonSchema: {
      grammar::JsonSchemaOptions options;
      options.best_effort = c.best_effort;
      return grammar::json_schema_to_gbnf(c.text, options);
    }
    case ConstraintKind::kJsonObject:
      return grammar::json_object_gbnf();
    case ConstraintKind::kNone:
      break;
  }
  return make_error(ErrorCode::kInternal, "no grammar for an empty constraint");
}

}  // namespace

Result<std::shared_ptr<const grammar::CompiledGrammar>> ConstraintCompiler::compile(
    const OutputConstraint& c) {
  std::string key = std::to_string(static_cast<int>(c.kind)) + (c.best_effort ? "b" : "s");
  key += c.root + '\0' + c.text;
  if (auto it = index_.find(key); it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }
  STRATA_ASSIGN_OR_RETURN(std::string gbnf, to_gbnf(c));
  const std::string root = c.kind == ConstraintKind::kGrammar ? c.root : "root";
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const grammar::Grammar> parsed,
                          grammar::parse_gbnf(gbnf, root));
  if (!vocabulary_) vocabulary_ = grammar::TokenVocabulary::from_tokenizer(tokenizer_);
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const grammar::CompiledGrammar> compiled,
                          grammar::CompiledGrammar::compile(std::move(parsed), vocabulary_));
  lru_.emplace_front(std::move(key), compiled);
  index_[lru_.front().first] = lru_.begin();
  if (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return compiled;
}

SequenceConstraint::SequenceConstraint(std::shared_ptr<const grammar::CompiledGrammar> grammar,
                                       std::vector<std::string> triggers)
    : matcher_(grammar),
      vocabulary_(grammar->vocabulary()),
      triggers_(std::move(triggers)),
      active_(triggers_.empty()),
      mask_(grammar->vocabulary().size()) {}

void SequenceConstraint::apply(std::span<float> logits, const sampling::SequenceHistory&) {
  if (!active_) return;
  matcher_.fill_next_token_bitmask(mask_.words());
  mask_.clear_padding();
  sampling::apply_token_bitmask(logits, mask_);
}

Status SequenceConstraint::accept(TokenId token) {
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
  if (first == std::string::npos) return ok_status();
  active_ = true;
  if (!matcher_.accept_string(std::string_view(text_).substr(first))) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the text after the tool-call trigger does not start a valid call");
  }
  text_.clear();
  return ok_status();
}

}  // namespace strata::engine
