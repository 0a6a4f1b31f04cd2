// The public structured-output facade (include/strata/structured.h) over strata::grammar.
#include "strata/structured.h"

#include "engine/structured_access.h"
#include "gguf/gguf.h"
#include "grammar/compiled_grammar.h"
#include "grammar/constraint_grammar.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_vocabulary.h"
#include "tokenizer/tokenizer.h"

namespace strata {

struct ConstraintVocabulary::Impl {
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::shared_ptr<const grammar::TokenVocabulary> vocabulary;
};

ConstraintVocabulary::ConstraintVocabulary(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ConstraintVocabulary::~ConstraintVocabulary() = default;

Result<std::shared_ptr<const ConstraintVocabulary>> ConstraintVocabulary::load(
    const std::string& gguf_path) {
  STRATA_ASSIGN_OR_RETURN(auto file, gguf::File::open(gguf_path));
  auto impl = std::make_unique<Impl>();
  STRATA_ASSIGN_OR_RETURN(impl->tokenizer, tokenizer::Tokenizer::from_gguf(*file));
  impl->vocabulary = grammar::TokenVocabulary::from_tokenizer(*impl->tokenizer);
  return std::shared_ptr<const ConstraintVocabulary>(new ConstraintVocabulary(std::move(impl)));
}

size_t ConstraintVocabulary::size() const { return impl_->vocabulary->size(); }

std::vector<TokenId> ConstraintVocabulary::tokenize(std::string_view text) const {
  return impl_->tokenizer->encode(text, /*add_special=*/false, /*parse_special=*/false);
}

std::string ConstraintVocabulary::token_bytes(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= size()) return {};
  return impl_->vocabulary->piece(id);
}

bool ConstraintVocabulary::is_eog(TokenId id) const {
  return id >= 0 && static_cast<size_t>(id) < size() && impl_->vocabulary->is_eog(id);
}

struct CompiledConstraint::Impl {
  std::shared_ptr<const grammar::CompiledGrammar> compiled;
};

CompiledConstraint::CompiledConstraint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CompiledConstraint::~CompiledConstraint() = default;

Result<std::shared_ptr<const CompiledConstraint>> CompiledConstraint::compile(
    const OutputConstraint& constraint, std::shared_ptr<const ConstraintVocabulary> vocabulary,
    const CompileBudget& budget) {
  if (!vocabulary) return make_error(ErrorCode::kInvalidArgument, "no vocabulary");
  grammar::CompileMeter meter(budget);
  STRATA_ASSIGN_OR_RETURN(auto parsed, grammar::grammar_for_constraint(constraint, &meter));
  auto impl = std::make_unique<Impl>();
  STRATA_ASSIGN_OR_RETURN(
      impl->compiled,
      grammar::CompiledGrammar::compile(
          parsed, internal::StructuredAccess::impl(*vocabulary).vocabulary, &meter));
  return std::shared_ptr<const CompiledConstraint>(new CompiledConstraint(std::move(impl)));
}

ConstraintStats CompiledConstraint::stats() const {
  const auto& s = impl_->compiled->stats();
  return {s.positions, s.uncertain_tokens, s.cache_bytes};
}

struct ConstraintMatcher::Impl {
  explicit Impl(std::shared_ptr<const CompiledConstraint> c)
      : constraint(std::move(c)), matcher(internal::StructuredAccess::impl(*constraint).compiled) {}
  std::shared_ptr<const CompiledConstraint> constraint;
  grammar::GrammarMatcher matcher;
};

ConstraintMatcher::ConstraintMatcher(std::shared_ptr<const CompiledConstraint> constraint)
    : impl_(std::make_unique<Impl>(std::move(constraint))) {}
ConstraintMatcher::~ConstraintMatcher() = default;

size_t ConstraintMatcher::mask_words() const {
  return internal::StructuredAccess::impl(*impl_->constraint).compiled->mask_words();
}
void ConstraintMatcher::fill_next_token_bitmask(std::span<uint32_t> words) {
  impl_->matcher.fill_next_token_bitmask(words);
}
bool ConstraintMatcher::accept_token(TokenId id) { return impl_->matcher.accept_token(id); }
bool ConstraintMatcher::can_end() const { return impl_->matcher.can_end(); }
bool ConstraintMatcher::is_terminated() const { return impl_->matcher.is_terminated(); }
void ConstraintMatcher::rollback(size_t n_tokens) { impl_->matcher.rollback(n_tokens); }
size_t ConstraintMatcher::n_accepted_tokens() const { return impl_->matcher.n_accepted_tokens(); }
std::string ConstraintMatcher::expected() const { return impl_->matcher.expected_bytes(); }

}  // namespace strata
