// A Grammar bound to a TokenVocabulary, with the per-position token sets that make masks cheap
// (the XGrammar split): for every kBytes position, walking the whole vocabulary from a stack
// that holds only that position sorts each token into
//   accepted  - consumed entirely without popping below the position's rule: allowed whatever
//               the stack below holds;
//   rejected  - dies before it could pop: never allowed from here;
//   uncertain - pops below the rule with bytes left, and the next byte may follow the rule
//               somewhere in the grammar (its FOLLOW set): decided at mask time by feeding what
//               is left of the token to the real stack below.
// Most tokens land in the first two, so a mask is an OR of cached sets plus a trie walk over
// the distinct leftovers of the few uncertain tokens. Accepted sets are stored as a bitmask or
// a sorted id list, whichever is smaller.
//
// Compiling walks the vocabulary once per distinct situation, not once per position: the tokens
// that start with byte b are walked from the stacks after b, and positions whose stacks after b
// look alike to every token of that group (bounded_signature.h) share the walk. Thousands of
// positions of a counted repetition or of a key automaton cost a handful of walks.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "grammar/grammar.h"
#include "grammar/token_vocabulary.h"

namespace strata::grammar {

struct PositionTokens {
  std::vector<uint32_t> accepted_bits;  // vocabulary bitmask words, or empty when ids are used
  std::vector<int32_t> accepted_ids;    // ascending token ids
  // What is left of uncertain tokens where they leave the rule, ascending and unique, and the
  // (leftover index, token id) pairs: a token is allowed when one of its leftovers is accepted
  // by the stacks below the position. Leftovers are tails of the vocabulary's pieces, which the
  // compiled grammar holds.
  std::vector<std::string_view> leftovers;
  std::vector<std::pair<uint32_t, int32_t>> uncertain;
  size_t max_leftover_length = 0;
};

struct CompileStats {
  size_t positions = 0;         // kBytes positions; the other figures count distinct token sets
  size_t uncertain_tokens = 0;  // (leftover, token) pairs summed over positions
  size_t max_uncertain = 0;
  size_t leftovers = 0;  // distinct leftovers summed over positions
  size_t max_leftovers = 0;
  size_t cache_bytes = 0;
};

class CompileMeter;

class CompiledGrammar {
 public:
  // `meter` (compile_meter.h), when given, is charged for every position and vocabulary walk and
  // stops compilation past its budget or cap.
  static Result<std::shared_ptr<const CompiledGrammar>> compile(
      std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocabulary,
      CompileMeter* meter = nullptr);

  const Grammar& grammar() const { return *grammar_; }
  const TokenVocabulary& vocabulary() const { return *vocabulary_; }
  const std::shared_ptr<const TokenVocabulary>& vocabulary_ptr() const { return vocabulary_; }
  // For a kBytes position.
  const PositionTokens& tokens_at(uint32_t pos) const { return tokens_[tokens_index_[pos]]; }
  size_t mask_words() const { return (vocabulary_->size() + 31) / 32; }
  const CompileStats& stats() const { return stats_; }
  // For a position that follows a rule call (where a stack frame returns): the bounded signature
  // (bounded_signature.h) of what it accepts next, as deep as the longest leftover of an
  // uncertain token. Frames with equal signatures down a stack accept the same leftovers, so the
  // matcher's mask-time check is cached by them, not by the frames themselves: the 1000 calls
  // of `char` in `char{1000}` share one check instead of walking the leftovers at each.
  uint32_t return_signature(uint32_t pos) const { return return_signature_[pos]; }
  // True when no leftover can pop past a frame returning to `pos` (the fewest bytes that finish
  // its alternative exceed the longest leftover): a leftover key stops at such a frame, so the
  // key, and the check, do not depend on what lies below it.
  bool closes_leftovers(uint32_t pos) const { return grammar_->min_rest(pos) > leftover_depth_; }

  // The mask-time check's results (which leftovers a stack below accepts), shared by every
  // matcher of this grammar. A key is the top's position, then the return signature of each
  // frame below it, down to the first frame that closes leftovers or to the bottom (uint32
  // words). Keys name positions and signatures, not stack nodes, so a check is paid once per
  // grammar, not once per request; checks below frames that close are made when compiling (a
  // long string's first one took 30 ms on a 102K vocabulary). Thread-safe; bounded to
  // kMaxSharedLeftoverBytes, then started over.
  static void append_key_word(std::string* key, uint32_t word) {
    key->append(reinterpret_cast<const char*>(&word), sizeof(word));
  }
  using LeftoverFlags = std::shared_ptr<const std::vector<uint8_t>>;
  LeftoverFlags shared_leftovers(const std::string& key) const;
  void share_leftovers(const std::string& key, LeftoverFlags flags) const;
  static constexpr size_t kMaxSharedLeftoverBytes = size_t{64} << 20;

 private:
  CompiledGrammar(std::shared_ptr<const Grammar> grammar,
                  std::shared_ptr<const TokenVocabulary> vocabulary);
  Status precompute(CompileMeter* meter);
  // The leftover checks below frames that close leftovers, for the positions of the rule
  // called (return signatures must be set).
  Status precompute_closed_leftovers(CompileMeter* meter);
  // Per rule: the bytes it may start with (FIRST), whether it matches the empty string, and the
  // bytes that may come right after it ends, in any context (FOLLOW).
  struct RuleSets {
    std::vector<ByteSet> first, follow;
    std::vector<bool> nullable;
    // FIRST of the sequence from `pos` to its alternative's end; *nullable: it may be empty.
    ByteSet sequence_first(const Grammar& g, uint32_t pos, bool* nullable) const;
  };
  Result<RuleSets> rule_sets(CompileMeter* meter) const;

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenVocabulary> vocabulary_;
  // Positions with the same token sets share them (a long counted repetition has thousands).
  std::vector<PositionTokens> tokens_;
  std::vector<uint32_t> tokens_index_;      // per element position, into tokens_
  std::vector<uint32_t> return_signature_;  // per element position; 0 where no call returns
  uint32_t leftover_depth_ = 0;             // the longest leftover of an uncertain token
  mutable std::mutex leftover_mutex_;
  mutable std::unordered_map<std::string, LeftoverFlags> leftover_cache_;
  mutable size_t leftover_bytes_ = 0;
  CompileStats stats_;
};

}  // namespace strata::grammar
