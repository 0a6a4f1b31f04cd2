#include "grammar/compiled_grammar.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "grammar/stack_pool.h"
#include "grammar/token_walk.h"

namespace strata::grammar {
namespace {

bool merge_into(ByteSet* to, const ByteSet& from) {
  bool changed = false;
  for (int w = 0; w < 4; ++w) {
    const uint64_t merged = to->bits[w] | from.bits[w];
    changed = changed || merged != to->bits[w];
    to->bits[w] = merged;
  }
  return changed;
}

}  // namespace

CompiledGrammar::CompiledGrammar(std::shared_ptr<const Grammar> grammar,
                                 std::shared_ptr<const TokenVocabulary> vocabulary)
    : grammar_(std::move(grammar)), vocabulary_(std::move(vocabulary)) {}

Result<std::shared_ptr<const CompiledGrammar>> CompiledGrammar::compile(
    std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocabulary) {
  if (!grammar || !vocabulary) {
    return make_error(ErrorCode::kInvalidArgument, "compile needs a grammar and a vocabulary");
  }
  std::shared_ptr<CompiledGrammar> compiled(
      new CompiledGrammar(std::move(grammar), std::move(vocabulary)));
  STRATA_RETURN_IF_ERROR(compiled->precompute());
  return std::shared_ptr<const CompiledGrammar>(std::move(compiled));
}

// Textbook FIRST / nullable / FOLLOW fixpoints over the byte-level rules.
std::vector<ByteSet> CompiledGrammar::follow_sets() const {
  const Grammar& g = *grammar_;
  const size_t n = g.rules().size();
  std::vector<bool> nullable(n, false);
  std::vector<ByteSet> first(n), follow(n);
  // FIRST of the sequence from pos to its kEnd; sets *seq_nullable.
  auto sequence_first = [&](uint32_t pos, ByteSet* out, bool* seq_nullable) {
    for (;; ++pos) {
      const Element& e = g.element(pos);
      if (e.kind == ElementKind::kEnd) {
        *seq_nullable = true;
        return;
      }
      if (e.kind == ElementKind::kBytes) {
        merge_into(out, g.byte_set(e.value));
        *seq_nullable = false;
        return;
      }
      merge_into(out, first[e.value]);
      if (!nullable[e.value]) {
        *seq_nullable = false;
        return;
      }
    }
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t r = 0; r < n; ++r) {
      for (uint32_t alt : g.rules()[r].alternatives) {
        ByteSet f;
        bool alt_nullable = false;
        sequence_first(alt, &f, &alt_nullable);
        changed = merge_into(&first[r], f) || changed;
        if (alt_nullable && !nullable[r]) nullable[r] = changed = true;
      }
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t h = 0; h < n; ++h) {
      for (uint32_t alt : g.rules()[h].alternatives) {
        for (uint32_t pos = alt; g.element(pos).kind != ElementKind::kEnd; ++pos) {
          const Element& e = g.element(pos);
          if (e.kind != ElementKind::kRule) continue;
          ByteSet f;
          bool rest_nullable = false;
          sequence_first(pos + 1, &f, &rest_nullable);
          if (rest_nullable) merge_into(&f, follow[h]);
          changed = merge_into(&follow[e.value], f) || changed;
        }
      }
    }
  }
  return follow;
}

Status CompiledGrammar::precompute() {
  const Grammar& g = *grammar_;
  const TokenVocabulary& vocab = *vocabulary_;
  const size_t words = mask_words();
  by_position_.resize(g.elements().size());
  std::vector<uint32_t> rule_of(g.elements().size(), 0);
  for (uint32_t r = 0; r < g.rules().size(); ++r) {
    for (uint32_t alt : g.rules()[r].alternatives) {
      for (uint32_t pos = alt;; ++pos) {
        rule_of[pos] = r;
        if (g.element(pos).kind == ElementKind::kEnd) break;
      }
    }
  }
  const std::vector<ByteSet> follow = follow_sets();
  StackPool pool;
  Advancer advancer(g, &pool);
  TokenWalkScratch scratch;
  StackSet start;
  std::vector<uint32_t> indices;
  std::vector<int32_t> accepted;
  std::vector<std::pair<std::string_view, int32_t>> uncertain;
  auto piece_of = [&](uint32_t k) { return vocab.sorted_piece(k); };
  for (uint32_t pos = 0; pos < g.elements().size(); ++pos) {
    const Element& e = g.element(pos);
    if (e.kind != ElementKind::kBytes) continue;
    // Only tokens whose first byte the position takes can be accepted or uncertain.
    const ByteSet& first = g.byte_set(e.value);
    indices.clear();
    for (unsigned b = 0; b < 256; ++b) {
      if (!first.test(static_cast<uint8_t>(b))) continue;
      for (uint32_t k = vocab.first_byte_begin(b); k < vocab.first_byte_begin(b + 1); ++k) {
        indices.push_back(k);
      }
    }
    pool.clear();
    advancer.start_at(pos, &start);
    accepted.clear();
    uncertain.clear();
    walk_strings(indices, piece_of, vocab.max_piece_length(), advancer, start,
                 &follow[rule_of[pos]], scratch, [&](uint32_t k, bool ok, size_t dead) {
                   if (ok) {
                     accepted.push_back(vocab.sorted_id(k));
                     return;
                   }
                   const std::string_view piece = vocab.sorted_piece(k);
                   for (size_t j = 1; j < dead; ++j) {
                     if (scratch.escape_at[j]) {
                       uncertain.push_back({piece.substr(j), vocab.sorted_id(k)});
                     }
                   }
                 });
    PositionTokens& out = by_position_[pos];
    std::sort(accepted.begin(), accepted.end());
    if (accepted.size() > words) {
      out.accepted_bits.assign(words, 0);
      for (int32_t id : accepted) out.accepted_bits[id >> 5] |= uint32_t{1} << (id & 31);
    } else {
      out.accepted_ids = accepted;
    }
    std::sort(uncertain.begin(), uncertain.end());
    for (const auto& [leftover, id] : uncertain) {
      if (out.leftovers.empty() || out.leftovers.back() != leftover) {
        out.leftovers.emplace_back(leftover);
        out.max_leftover_length = std::max(out.max_leftover_length, leftover.size());
      }
      out.uncertain.push_back({static_cast<uint32_t>(out.leftovers.size() - 1), id});
    }
    ++stats_.positions;
    stats_.uncertain_tokens += out.uncertain.size();
    stats_.max_uncertain = std::max(stats_.max_uncertain, out.uncertain.size());
    stats_.leftovers += out.leftovers.size();
    stats_.max_leftovers = std::max(stats_.max_leftovers, out.leftovers.size());
    stats_.cache_bytes +=
        out.accepted_bits.size() * 4 + out.accepted_ids.size() * 4 + out.uncertain.size() * 8;
    for (const auto& s : out.leftovers) stats_.cache_bytes += s.size() + sizeof(std::string);
    if (advancer.overflowed()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "GBNF: the grammar is too ambiguous to match (more than " +
                            std::to_string(Advancer::kMaxStepWork) +
                            " parse stacks after one byte); repetitions of repetitions nested "
                            "many levels deep, like ((x+)+)+, are the usual cause");
    }
  }
  return ok_status();
}

}  // namespace strata::grammar
