// Every bad model file or flag makes a `strata` command exit 2 with exactly one `error: ...` line
// on stderr: never an abort, a crash, a multi-GB allocation or a silent exit 0.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/writer.h"

namespace strata {
namespace {

const char* kStories = "../shared/models/stories260K.gguf";

struct Outcome {
  int exit_code = -1;  // -1: killed by a signal
  std::string err;
};

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/strata_cli_" + std::to_string(::getpid()) + "_" + name;
}

std::string quoted(const std::string& arg) {
  std::string q = "'";
  for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs strata with `args` (stdin empty, stdout discarded), at most 60 s: a command that ignores
// a bad flag and starts serving or chatting must not hang the suite.
Outcome run_strata(const std::vector<std::string>& args) {
  const std::string err_path = temp_path("stderr.txt");
  std::string command = "timeout 60 " + quoted(STRATA_BIN);
  for (const std::string& a : args) command += " " + quoted(a);
  command += " </dev/null >/dev/null 2>" + quoted(err_path);
  const int status = std::system(command.c_str());
  Outcome out;
  if (WIFEXITED(status)) out.exit_code = WEXITSTATUS(status);
  std::ifstream in(err_path);
  out.err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  std::filesystem::remove(err_path);
  return out;
}

// Exit 2 and exactly one stderr line, `error: ...`, holding every part.
void expect_one_error(const std::vector<std::string>& args, const std::vector<std::string>& parts) {
  std::string shown;
  for (const std::string& a : args) shown += " " + a;
  SCOPED_TRACE("strata" + shown);
  const Outcome out = run_strata(args);
  EXPECT_EQ(out.exit_code, 2) << out.err;
  std::vector<std::string> lines;
  std::istringstream stream(out.err);
  for (std::string line; std::getline(stream, line);) {
    if (line.find("error") != std::string::npos) lines.push_back(line);
  }
  ASSERT_EQ(lines.size(), 1u) << "stderr:\n" << out.err;
  EXPECT_EQ(lines[0].rfind("error: ", 0), 0u) << lines[0];
  for (const std::string& p : parts) {
    EXPECT_NE(lines[0].find(p), std::string::npos) << "'" << lines[0] << "' lacks '" << p << "'";
  }
}

// stories260K with `edit` applied to its metadata (or tensors), written to a temporary file.
class ModifiedModel {
 public:
  ModifiedModel(const std::string& name, const std::function<void(gguf::Writer&)>& edit,
                const std::function<bool(const gguf::TensorInfo&, gguf::Writer&)>& replace = {})
      : path_(temp_path(name + ".gguf")) {
    std::unique_ptr<gguf::File> src = std::move(gguf::File::open(kStories)).value();
    gguf::Writer w;
    w.copy_metadata(*src);
    edit(w);
    for (const gguf::TensorInfo& t : src->tensors()) {
      if (!replace || !replace(t, w)) {
        EXPECT_TRUE(w.add_tensor_view(t).ok());
      }
    }
    EXPECT_TRUE(w.write(path_).ok());
  }
  ~ModifiedModel() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

ModifiedModel with_key(const std::string& name, const std::string& key, gguf::Value value) {
  return ModifiedModel(name, [&](gguf::Writer& w) { w.set(key, value); });
}

TEST(CliErrorsTest, GoodModelRuns) {
  const Outcome out = run_strata({"run", "-m", kStories, "-p", "Once", "-n", "4", "--temp", "0"});
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.err.find("error"), std::string::npos) << out.err;
}

TEST(CliErrorsTest, HugeBlockCountIsOneError) {
  for (uint32_t blocks : {100000000u, 10000000u}) {
    ModifiedModel m = with_key("blocks" + std::to_string(blocks), "llama.block_count",
                               gguf::Value::uint32(blocks));
    expect_one_error({"run", "-m", m.path(), "-p", "Once", "-n", "4"},
                     {"llama.block_count", std::to_string(blocks)});
    expect_one_error({"logits", "-m", m.path(), "-p", "Once"}, {"llama.block_count"});
    expect_one_error({"bench", "-m", m.path(), "-p", "8", "-n", "2", "-r", "1", "--no-bandwidth"},
                     {"llama.block_count"});
  }
}

TEST(CliErrorsTest, HugeCountsAreOneError) {
  for (const char* key : {"llama.embedding_length", "llama.context_length",
                          "llama.attention.head_count", "llama.feed_forward_length"}) {
    ModifiedModel m = with_key("count", key, gguf::Value::uint64(uint64_t{1} << 40));
    expect_one_error({"run", "-m", m.path(), "-p", "Once", "-n", "4"}, {key});
  }
}

TEST(CliErrorsTest, BadFloatHyperParametersAreOneError) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    const char* key;
    float value;
    const char* shown;
  };
  for (const Case& c :
       {Case{"llama.attention.layer_norm_rms_epsilon", nan, "nan"},
        Case{"llama.attention.layer_norm_rms_epsilon", 0.0f, "0"},
        Case{"llama.rope.freq_base", nan, "nan"}, Case{"llama.rope.freq_base", 0.0f, "0"},
        Case{"llama.rope.freq_base", -inf, "-inf"}, Case{"llama.rope.freq_base", inf, "inf"}}) {
    ModifiedModel m = with_key("float", c.key, gguf::Value::float32(c.value));
    expect_one_error({"run", "-m", m.path(), "-p", "Once", "-n", "4", "--temp", "0"},
                     {c.key, std::string("is ") + c.shown});
  }
  ModifiedModel scaling("scaling", [&](gguf::Writer& w) {
    w.set("llama.rope.scaling.type", gguf::Value::string("linear"));
    w.set("llama.rope.scaling.factor", gguf::Value::float32(nan));
  });
  expect_one_error({"run", "-m", scaling.path(), "-p", "Once", "-n", "4"},
                   {"llama.rope.scaling.factor", "nan"});
}

// Weights are not validated value by value: NaN norm weights load, and every logit is NaN.
// The request then ends with an error, which `run` must report rather than exit 0.
TEST(CliErrorsTest, GenerationErrorIsOneError) {
  const std::vector<float> nans(64, std::numeric_limits<float>::quiet_NaN());
  ModifiedModel m(
      "nan-norm", [](gguf::Writer&) {},
      [&](const gguf::TensorInfo& t, gguf::Writer& w) {
        if (t.name != "output_norm.weight") return false;
        std::vector<uint8_t> bytes(t.n_bytes);
        EXPECT_EQ(bytes.size(), nans.size() * sizeof(float));
        std::memcpy(bytes.data(), nans.data(), bytes.size());
        EXPECT_TRUE(w.add_tensor(t.name, t.type, t.dims, bytes).ok());
        return true;
      });
  expect_one_error({"run", "-m", m.path(), "-p", "Once", "-n", "4", "--temp", "0"},
                   {"generation failed"});
  expect_one_error({"run", "-m", m.path(), "-p", "Once", "-n", "4", "--seed", "1"},
                   {"generation failed"});
}

TEST(CliErrorsTest, HugeThreadCountIsOneErrorForEveryCommand) {
  const std::string text = temp_path("text.txt");
  std::ofstream(text) << "Once upon a time there was a girl.";
  const std::string out = temp_path("out.gguf");
  const std::vector<std::vector<std::string>> commands = {
      {"run", "-m", kStories, "-p", "Once"},
      {"chat", "-m", kStories},
      {"logits", "-m", kStories, "-p", "Once"},
      {"tokenize", "-m", kStories, "-p", "Once"},
      {"bench", "-m", kStories, "-p", "8", "-n", "2", "-r", "1", "--no-bandwidth"},
      {"eval", "-m", kStories, "-f", text},
      {"serve", "-m", kStories, "--port", "0"},
      {"quantize", kStories, out, "Q8_0"},
      {"synth", "--preset", "tiny", "-o", out},
  };
  for (const char* threads : {"100000", "513", "-1", "99999999999999999999"}) {
    for (std::vector<std::string> args : commands) {
      args.push_back(std::string("--threads=") + threads);
      expect_one_error(args, {"thread count", threads, "512"});
    }
    expect_one_error({"bench-grammar", "--schemas", ::testing::TempDir(), "--vocab", kStories,
                      std::string("--threads=") + threads},
                     {"thread count", threads, "512"});
  }
  EXPECT_FALSE(std::filesystem::exists(out));
  std::filesystem::remove(text);
}

TEST(CliErrorsTest, BadFlagsAreOneError) {
  expect_one_error({"run", "-m", kStories, "-t", "abc"}, {"--threads", "abc"});
  expect_one_error({"run", "-p", "Once"}, {"--model"});
  expect_one_error({"run", "-m", kStories, "--no-such-flag"}, {"--no-such-flag"});
  expect_one_error({}, {"subcommand"});
}

TEST(CliErrorsTest, BadSparseAttentionFlagsAreOneError) {
  expect_one_error({"run", "-m", kStories, "-p", "Once", "--attn", "sometimes"},
                   {"--attn", "dense", "sparse"});
  expect_one_error({"run", "-m", kStories, "-p", "Once", "--attn", "sparse", "--attn-budget", "0"},
                   {"--attn-budget"});
  expect_one_error({"bench", "-m", kStories, "-p", "8", "-n", "2", "-r", "1", "--no-bandwidth",
                    "--attn", "sparse", "--attn-budget", "64", "--attn-window", "64"},
                   {"budget", "--attn-budget", "32 + 64"});
  expect_one_error({"eval", "-m", kStories, "-f", kStories, "--attn-window", "-3"},
                   {"--attn-window"});
  expect_one_error({"inspect", "-m", kStories}, {"no prompt", "--prompts"});
  const std::string prompts = temp_path("prompts.jsonl");
  std::ofstream(prompts) << "{\"prompt\": \"Once\"}\n[1, 2]\n";
  expect_one_error({"inspect", "-m", kStories, "--prompts", prompts}, {"line 2", "\"prompt\""});
  std::filesystem::remove(prompts);
}

// KV cache flags: a bad type, a malformed tier spec, a size that is not one, and a budget the
// cache does not fit in (its message names what it needs and what to do).
TEST(CliErrorsTest, BadKvCacheFlagsAreOneError) {
  expect_one_error({"run", "-m", kStories, "-p", "Once", "--kv-type", "q2"}, {"--kv-type", "q2"});
  expect_one_error({"run", "-m", kStories, "-p", "Once", "--kv-tiers", "hot=abc"},
                   {"--kv-tiers", "abc"});
  expect_one_error({"run", "-m", kStories, "-p", "Once", "--kv-precise-layers", "two"},
                   {"--kv-precise-layers", "'two' is not a layer count"});
  expect_one_error({"run", "-m", kStories, "-p", "Once", "--kv-precise-layers", "-1"},
                   {"--kv-precise-layers", "'-1' is not a layer count"});
  expect_one_error({"run", "-m", kStories, "-p", "Once", "--kv-memory", "1.5x"},
                   {"--kv-memory", "'1.5x' is not a size"});
  expect_one_error({"run", "-m", kStories, "-p", "Once", "-c", "2048", "--kv-memory", "64K"},
                   {"needs 1.2 MiB of KV cache", "more than --kv-memory 0.1 MiB", "-c"});
}

// strata embed: a model without pooling names --pooling; an empty file says there is nothing to
// embed; with --pooling the same model embeds.
TEST(CliErrorsTest, EmbedErrorsAreOneError) {
  const std::string texts = temp_path("texts.txt"), empty = temp_path("empty.txt");
  std::ofstream(texts) << "Once upon a time\nThe dog ran\n";
  std::ofstream(empty) << "\n\n";
  expect_one_error({"embed", "-m", kStories, "-f", texts}, {"--pooling"});
  expect_one_error({"embed", "-m", kStories, "-f", empty}, {"no text to embed"});
  expect_one_error({"embed", "-m", kStories, "-f", texts, "--pooling", "max"}, {"--pooling"});
  const Outcome ok = run_strata({"embed", "-m", kStories, "-f", texts, "--pooling", "mean"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  std::filesystem::remove(texts);
  std::filesystem::remove(empty);
}

}  // namespace
}  // namespace strata
