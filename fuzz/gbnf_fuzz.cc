// libFuzzer target: any bytes as a GBNF grammar. Loading must never crash or hang; a grammar
// that loads is compiled against a tiny vocabulary (single bytes, multi-byte pieces, a split
// UTF-8 character, an end-of-generation token) and driven for a few steps: every mask must agree
// with accept_token on the tokens it allows, and rollback must restore the mask.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_vocabulary.h"

namespace {

const std::shared_ptr<const strata::grammar::TokenVocabulary>& vocabulary() {
  static const auto vocab = strata::grammar::TokenVocabulary::from_pieces(
      {"a",   "b", "c",   "ab", "abc", "{", "}",    "\"",   "\":",  "[",        "]",
       ",",   " ", "\n",  "0",  "12",  "-", "true", "\xC3", "\xA9", "\xC3\xA9", "\xE2\x82\xAC",
       "x\"", "",  "</s>"},
      {24});
  return vocab;
}

bool allowed(const std::vector<uint32_t>& words, size_t id) {
  return (words[id / 32] >> (id % 32)) & 1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto grammar = strata::grammar::parse_gbnf(text);
  if (!grammar.ok()) return 0;
  auto compiled = strata::grammar::CompiledGrammar::compile(*grammar, vocabulary());
  if (!compiled.ok()) return 0;  // too ambiguous to match: a load-time error, as intended
  strata::grammar::GrammarMatcher matcher(*compiled);
  const size_t n = vocabulary()->size();
  std::vector<uint32_t> words((n + 31) / 32), again(words.size());
  uint64_t pick = size;
  for (int step = 0; step < 8 && matcher.n_stacks() < 500; ++step) {
    matcher.fill_next_token_bitmask(words);
    std::vector<int32_t> choices;
    for (size_t id = 0; id < n; ++id) {
      const bool ok = matcher.accept_token(static_cast<int32_t>(id));
      if (ok) matcher.rollback(1);
      if (ok != allowed(words, id)) std::abort();  // mask and parser disagree
      if (ok && !vocabulary()->is_eog(static_cast<int32_t>(id))) {
        choices.push_back(static_cast<int32_t>(id));
      }
    }
    if (allowed(words, 24) != matcher.can_end()) std::abort();
    if (choices.empty()) break;
    pick = pick * 6364136223846793005ULL + 1442695040888963407ULL;
    if (!matcher.accept_token(choices[(pick >> 33) % choices.size()])) std::abort();
    if ((pick >> 20) % 4 == 0) {
      matcher.rollback(1);
      matcher.fill_next_token_bitmask(again);
      if (again != words) std::abort();  // rollback restores the mask
      break;
    }
  }
  return 0;
}
