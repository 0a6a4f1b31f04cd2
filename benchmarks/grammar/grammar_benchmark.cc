// Token-mask latency along a real JSON document (deepseek-llm's 102K vocabulary, one thread),
// the way MaskBench measures engines: the mask before every token of the document, each timed
// on its own; p50 / p99 / mean per mask are reported as counters (microseconds of thread CPU
// time). reuse:1 lets the matcher reuse the previous mask when the parse state repeats (as in
// generation); reuse:0 computes every mask. Run from the repository root:
//   build-gram/benchmarks/grammar/grammar_benchmark
#include <benchmark/benchmark.h>

#include <algorithm>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/token_vocabulary.h"
#include "tokenizer/tokenizer.h"

namespace strata::grammar {
namespace {

constexpr std::string_view kJsonGrammar = R"gbnf(
root   ::= value
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( member ("," ws member)* )? "}" ws
member ::= string ":" ws value
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]+)? ([eE] [-+]? [0-9]+)? ws
ws     ::= | " " | "\n" [ \t]{0,20}
)gbnf";

constexpr std::string_view kDocument = R"json({
  "id": "chatcmpl-8f3a2c", "object": "chat.completion", "created": 1718031234,
  "model": "deepseek-llm-7b-chat",
  "user": {"name": "Ada Lovelace", "email": "ada@example.org", "age": 36, "verified": true,
           "address": {"street": "12 St James's Square", "city": "London", "zip": "SW1Y 4JH"},
           "languages": ["English", "French", "Italian"], "score": -12.75e-2},
  "items": [
    {"sku": "A-1001", "title": "Notes on the Analytical Engine", "price": 19.99, "qty": 2},
    {"sku": "B-2002", "title": "Sketch of the \"Engine\"\ninvented by Babbage", "price": 7.5,
     "qty": 1, "tags": ["history", "computing", "caf\u00e9"]},
    {"sku": "C-3003", "title": "Bernoulli numbers — a table", "price": 0, "qty": 10}
  ],
  "notes": null, "total": 122.48
})json";

// Per-mask time is this thread's CPU time: the machines these run on are shared, and wall time
// would count the time other processes held the core.
double thread_cpu_us() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

struct Setup {
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::shared_ptr<const TokenVocabulary> vocab;
};

Setup* setup() {
  static Setup* s = [] {
    auto* out = new Setup;
    auto file = gguf::File::open("../shared/testdata/vocab/ggml-vocab-deepseek-llm.gguf");
    if (!file.ok()) return out;
    auto tok = tokenizer::Tokenizer::from_gguf(**file);
    if (!tok.ok()) return out;
    out->tok = std::move(*tok);
    out->vocab = TokenVocabulary::from_tokenizer(*out->tok);
    return out;
  }();
  return s;
}

std::shared_ptr<const CompiledGrammar> compile(std::string_view gbnf) {
  auto g = parse_gbnf(gbnf);
  if (!g.ok()) return nullptr;
  auto c = CompiledGrammar::compile(*g, setup()->vocab);
  return c.ok() ? *c : nullptr;
}

void BM_CompileJsonGrammar(benchmark::State& state) {
  if (!setup()->vocab) return state.SkipWithError("deepseek-llm vocabulary not found");
  std::shared_ptr<const CompiledGrammar> c;
  for (auto _ : state) c = compile(kJsonGrammar);
  state.counters["positions"] = static_cast<double>(c->stats().positions);
  state.counters["uncertain"] = static_cast<double>(c->stats().uncertain_tokens);
  state.counters["max_uncertain"] = static_cast<double>(c->stats().max_uncertain);
  state.counters["leftovers"] = static_cast<double>(c->stats().leftovers);
  state.counters["max_leftovers"] = static_cast<double>(c->stats().max_leftovers);
  state.counters["cache_MB"] = static_cast<double>(c->stats().cache_bytes) / 1e6;
}
BENCHMARK(BM_CompileJsonGrammar)->Unit(benchmark::kMillisecond);

void masks_along_document(benchmark::State& state, std::string_view gbnf, bool reuse) {
  if (!setup()->vocab) return state.SkipWithError("deepseek-llm vocabulary not found");
  auto compiled = compile(gbnf);
  if (!compiled) return state.SkipWithError("grammar does not compile");
  const auto ids = setup()->tok->encode(kDocument, false, false);
  std::vector<uint32_t> words(compiled->mask_words());
  std::vector<double> us;
  for (auto _ : state) {
    GrammarMatcher m(compiled);
    m.set_reuse_masks(reuse);
    for (auto id : ids) {
      const double t0 = thread_cpu_us();
      m.fill_next_token_bitmask(words);
      us.push_back(thread_cpu_us() - t0);
      if (!m.accept_token(id)) return state.SkipWithError("document rejected");
    }
  }
  std::sort(us.begin(), us.end());
  double sum = 0;
  for (double u : us) sum += u;
  state.counters["tokens"] = static_cast<double>(ids.size());
  state.counters["mask_us_p50"] = us[us.size() / 2];
  state.counters["mask_us_p99"] = us[us.size() * 99 / 100];
  state.counters["mask_us_max"] = us.back();
  state.counters["mask_us_mean"] = sum / static_cast<double>(us.size());
}

void BM_JsonGrammarMasks(benchmark::State& state) {
  masks_along_document(state, kJsonGrammar, state.range(0) != 0);
}
BENCHMARK(BM_JsonGrammarMasks)->Arg(1)->Arg(0)->ArgName("reuse")->Unit(benchmark::kMillisecond);

void BM_JsonObjectModeMasks(benchmark::State& state) {
  const std::string gbnf = json_object_gbnf();
  masks_along_document(state, gbnf, state.range(0) != 0);
}
BENCHMARK(BM_JsonObjectModeMasks)->Arg(1)->Arg(0)->ArgName("reuse")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace strata::grammar

BENCHMARK_MAIN();
