// Structured output without a model: a vocabulary read from any GGUF file (vocab-only files
// have no weights), an OutputConstraint compiled against it, and a matcher that says which
// tokens may come next and advances token by token. `strata grammar-check` and
// `strata bench-grammar` are built on this; the engine applies the same constraints internally.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/compile_budget.h"
#include "strata/engine.h"
#include "strata/result.h"

namespace strata {

namespace internal {
struct StructuredAccess;  // the engine's way to the implementations (src/engine/)
}  // namespace internal

class ConstraintVocabulary {
 public:
  static Result<std::shared_ptr<const ConstraintVocabulary>> load(const std::string& gguf_path);
  ~ConstraintVocabulary();

  size_t size() const;
  // Text as the model would write it: no BOS, special-token texts not parsed.
  std::vector<TokenId> tokenize(std::string_view text) const;
  // The bytes a token appends to the output ("" for control tokens).
  std::string token_bytes(TokenId id) const;
  bool is_eog(TokenId id) const;

 private:
  friend struct internal::StructuredAccess;
  struct Impl;
  explicit ConstraintVocabulary(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct ConstraintStats {
  size_t grammar_positions = 0;  // byte positions with precomputed token sets
  size_t uncertain_tokens = 0;   // tokens left to the mask-time check, summed over positions
  size_t cache_bytes = 0;
};

class CompiledConstraint {
 public:
  // kGrammar: GBNF text (root rule `constraint.root`); kJsonSchema: a JSON Schema; kJsonObject:
  // any JSON object. Errors say what is wrong with the grammar or schema; past `budget`,
  // kDeadlineExceeded or kCancelled, and kOutOfRange past the fixed work cap
  // (strata/compile_budget.h).
  static Result<std::shared_ptr<const CompiledConstraint>> compile(
      const OutputConstraint& constraint, std::shared_ptr<const ConstraintVocabulary> vocabulary,
      const CompileBudget& budget = {});
  ~CompiledConstraint();
  ConstraintStats stats() const;

 private:
  friend struct internal::StructuredAccess;
  struct Impl;
  explicit CompiledConstraint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class ConstraintMatcher {
 public:
  explicit ConstraintMatcher(std::shared_ptr<const CompiledConstraint> constraint);
  ~ConstraintMatcher();
  ConstraintMatcher(const ConstraintMatcher&) = delete;
  ConstraintMatcher& operator=(const ConstraintMatcher&) = delete;

  // ceil(vocabulary size / 32).
  size_t mask_words() const;
  // Bit (id % 32) of word (id / 32) set = token allowed next; end-of-generation tokens are
  // allowed exactly when can_end().
  void fill_next_token_bitmask(std::span<uint32_t> words);
  bool accept_token(TokenId id);  // false (state unchanged) when not allowed
  bool can_end() const;
  bool is_terminated() const;
  void rollback(size_t n_tokens);
  size_t n_accepted_tokens() const;
  // The bytes that may come next, as a character class, for error messages.
  std::string expected() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata
