// Each architecture against the reference engine: a random-weight file written by `strata synth
// --arch NAME --preset tiny-gqa --type F32` (seed 0) runs a 345-token prompt (longer than three of
// its 96-position sliding windows) and must give llama.cpp's last-position logits (NMSE at most
// 1e-5) and its 64-token greedy continuation, with token-by-token decode of the prompt agreeing
// with the batched prefill, while the sliding-window layers' KV of pages behind every window goes
// back to the pool. The reference answers are in tests/model/reference/ (README there
// says how they were made); llama.cpp is not needed to run this test.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/model.h"
#include "strata/model_tools.h"
#include "test_files.h"

namespace strata::model {
namespace {

struct Reference {
  std::vector<int32_t> prompt;
  std::vector<float> logits;  // [n_vocab] after the prompt
  std::vector<int32_t> greedy;
};

Reference read_reference(const std::string& arch) {
  std::ifstream in("tests/model/reference/" + arch + ".json");
  EXPECT_TRUE(in.good()) << arch;
  const nlohmann::json j = nlohmann::json::parse(in);
  return {j["prompt"].get<std::vector<int32_t>>(), j["logits"].get<std::vector<float>>(),
          j["greedy"].get<std::vector<int32_t>>()};
}

std::unique_ptr<Model> synthesize(const std::string& arch) {
  const test_files::TempFile file_path("differential-" + arch + ".gguf");
  SynthOptions options;
  options.arch = arch;
  options.preset = "tiny-gqa";
  options.type = "F32";
  options.vocab_path = test_files::kStories;
  options.output_path = file_path.path();
  options.threads = 2;
  EXPECT_TRUE(synthesize_model(options).ok());
  Result<std::unique_ptr<gguf::File>> file =
      gguf::File::open(options.output_path, MappedFile::Mode::kResident);
  EXPECT_TRUE(file.ok()) << file.error().message;
  Result<std::unique_ptr<Model>> m = Model::load(std::move(file).value());
  EXPECT_TRUE(m.ok()) << m.error().message;
  // The reference ran with a 1,024-token context: past phi3's original 256, so LongRoPE's long
  // factors (short ones give an NMSE of 0.3).
  (*m)->use_context(1024);
  return std::move(m).value();
}

// sum (a - b)^2 / sum b^2
double nmse(const std::vector<float>& a, const std::vector<float>& b) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    err += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
    ref += double{b[i]} * b[i];
  }
  return err / ref;
}

constexpr size_t kPage = 16;

// Pages, and window parts for the sliding-window layers: as many as a window and a chunk of
// `chunk` tokens span, so that the window parts must go back as the session moves on
// (KvCache::release_windows, as the engine calls it before each step).
std::vector<kv::ArenaSpec> arenas(const Model& m, size_t chunk) {
  const size_t window = m.kv_shape(kPage).window;
  return {{kv::KvPrecision::kF16, 32, (window + chunk) / kPage + 2}};
}

class Session {
 public:
  Session(Model& m, size_t chunk) : m_(m), cache_(m.kv_shape(kPage), arenas(m, chunk)) {
    // The reference engine's CPU flash attention accumulates in f32, as the fast path does; the
    // exact path reproduces its older f16-accumulating attention (docs/numerics.md).
    cache_.set_attention_mode(kv::AttentionMode::kFast);
  }

  // Runs tokens at the next positions in `chunk`-sized batches; the last one's logits.
  std::vector<float> feed(const std::vector<int32_t>& tokens, size_t chunk) {
    std::vector<float> logits(m_.config().n_vocab);
    for (size_t begin = 0; begin < tokens.size(); begin += chunk) {
      const size_t end = std::min(tokens.size(), begin + chunk);
      cache_.release_windows(0);
      EXPECT_TRUE(cache_.reserve(0, pos_ + end - begin).ok()) << "at position " << pos_;
      Batch batch;
      for (size_t i = begin; i < end; ++i) batch.push_back({0, pos_++, tokens[i], i + 1 == end});
      EXPECT_TRUE(m_.forward(batch, cache_, pool_, logits.data()).ok());
    }
    return logits;
  }
  // Window parts held (0 without sliding-window layers).
  size_t window_parts() const { return cache_.pool().used_window_slots(kv::KvPrecision::kF16); }

 private:
  Model& m_;
  ThreadPool pool_{2};
  kv::KvCache cache_;
  uint32_t pos_ = 0;
};

int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

class DifferentialTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DifferentialTest, MatchesTheReferenceEngine) {
  const Reference ref = read_reference(GetParam());
  std::unique_ptr<Model> m = synthesize(GetParam());
  ASSERT_TRUE(m);
  ASSERT_EQ(ref.logits.size(), m->config().n_vocab);
  ASSERT_GT(ref.prompt.size(), 300u);

  Session batched(*m, ref.prompt.size());
  std::vector<float> logits = batched.feed(ref.prompt, ref.prompt.size());
  EXPECT_LE(nmse(logits, ref.logits), 1e-5);

  // Decode one token at a time takes other kernels (matrix-vector products, the decode
  // attention path) than the batched prefill; they agree to rounding. Its window parts (a
  // window's and three more pages) run out within the prompt unless they go back.
  Session stepwise(*m, 1);
  EXPECT_LE(nmse(stepwise.feed(ref.prompt, 1), logits), 1e-7);

  std::vector<int32_t> greedy;
  while (greedy.size() < ref.greedy.size()) {
    greedy.push_back(argmax(logits));
    logits = batched.feed({greedy.back()}, 1);
  }
  EXPECT_EQ(greedy, ref.greedy);
  const size_t window = m->kv_shape(kPage).window;
  if (window > 0) {
    EXPECT_LE(batched.window_parts(), window / kPage + 2);
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, DifferentialTest,
                         ::testing::Values("llama", "gemma", "gemma2", "gemma3", "smollm3",
                                           "granite", "mistral3", "phi3", "olmo2"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace strata::model
