// Encode throughput (MB/s of UTF-8 input) on ~1 MB of mixed English prose, C++ code and Chinese,
// generated here from a fixed seed. Run from the repository root (vocabularies are read from
// ../shared/testdata/vocab/).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace strata::tokenizer {
namespace {

std::string mixed_text(size_t target_bytes) {
  static const char* const kEnglish[] = {
      "the",   "quick",   "brown", "fox",       "jumps",  "over",   "lazy", "dog",
      "model", "weights", "are",   "quantized", "into",   "blocks", "of",   "thirty-two",
      "and",   "every",   "token", "matters",   "Hello,", "world!", "it's", "they'll"};
  static const char* const kCode[] = {"for (int i = 0; i < n; ++i) {\n",
                                      "  sum += a[i] * b[i];\n",
                                      "}\n",
                                      "if (x != nullptr && x->ok()) return x->value();\n",
                                      "    std::vector<float> out(rows * cols, 0.0f);\n",
                                      "def f(x):\n    return x ** 2\n"};
  static const char* const kChinese[] = {"我们", "今天", "学习", "语言模型", "的", "推理",
                                         "引擎", "，",   "非常", "有趣",     "。", "中文分词"};
  std::string text;
  uint32_t state = 20260101;
  auto next = [&](uint32_t n) {
    state = state * 1664525u + 1013904223u;
    return (state >> 8) % n;
  };
  while (text.size() < target_bytes) {
    switch (next(3)) {
      case 0:
        for (int w = 0; w < 40; ++w) {
          text += kEnglish[next(std::size(kEnglish))];
          text += next(12) == 0 ? ". " : " ";
        }
        text += "\n\n";
        break;
      case 1:
        for (int l = 0; l < 8; ++l) text += kCode[next(std::size(kCode))];
        break;
      default:
        for (int w = 0; w < 40; ++w) text += kChinese[next(std::size(kChinese))];
        text += "\n";
        break;
    }
  }
  return text;
}

std::unique_ptr<Tokenizer> load(benchmark::State& state, const std::string& vocab) {
  const std::string path = "../shared/testdata/vocab/ggml-vocab-" + vocab + ".gguf";
  auto file = gguf::File::open(path);
  if (!file.ok()) {
    state.SkipWithError((path + ": " + file.error().message).c_str());
    return nullptr;
  }
  auto tokenizer = Tokenizer::from_gguf(**file);
  if (!tokenizer.ok()) {
    state.SkipWithError(tokenizer.error().message.c_str());
    return nullptr;
  }
  return std::move(*tokenizer);
}

void run_encode(benchmark::State& state, const Tokenizer& tokenizer, const std::string& text) {
  size_t n_tokens = 0;
  for (auto _ : state) {
    std::vector<TokenId> ids = tokenizer.encode(text, false, false);
    n_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(n_tokens);
}

void BM_Encode(benchmark::State& state, const std::string& vocab) {
  auto tokenizer = load(state, vocab);
  if (tokenizer) run_encode(state, *tokenizer, mixed_text(1 << 20));
}

// 256 KiB of one repeated character: a single huge pre-token (or SentencePiece word), which
// must stay O(n log n) rather than O(n^2).
void BM_EncodeLongRun(benchmark::State& state, const std::string& vocab) {
  static const char kRuns[] = {'a', ' ', '\n', '7'};
  auto tokenizer = load(state, vocab);
  if (tokenizer) run_encode(state, *tokenizer, std::string(256 << 10, kRuns[state.range(0)]));
}

BENCHMARK_CAPTURE(BM_Encode, gpt2, std::string("gpt-2"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, deepseek_llm, std::string("deepseek-llm"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, llama_spm, std::string("llama-spm"))->Unit(benchmark::kMillisecond);
// Args: 0 = 'a', 1 = ' ', 2 = '\n', 3 = '7'.
BENCHMARK_CAPTURE(BM_EncodeLongRun, gpt2, std::string("gpt-2"))
    ->DenseRange(0, 3)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EncodeLongRun, deepseek_llm, std::string("deepseek-llm"))
    ->DenseRange(0, 3)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EncodeLongRun, llama_spm, std::string("llama-spm"))
    ->DenseRange(0, 3)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace strata::tokenizer

BENCHMARK_MAIN();
