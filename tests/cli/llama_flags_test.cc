// What a llama.cpp user types: each spelling works (GPU-only and no-op flags with exactly one
// `warning:` line each) or is refused with exactly one `error:` line naming the flag and the
// nearest valid one; prompts from -f, `-p -` and a pipe; -n -1; honest quantize and info.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace strata {
namespace {

const char* kStories = "../shared/models/stories260K.gguf";

struct Outcome {
  int exit_code = -1;  // -1: killed by a signal
  std::string out, err;
};

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/strata_llama_flags_" + std::to_string(::getpid()) + "_" + name;
}

std::string quoted(const std::string& arg) {
  std::string q = "'";
  for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs strata with `args`, stdin read from `input` (through a pipe when `pipe`), at most 60 s.
Outcome run_strata(const std::vector<std::string>& args, const std::string& input = "/dev/null",
                   bool pipe = false) {
  const std::string out_path = temp_path("stdout.txt"), err_path = temp_path("stderr.txt");
  std::string command = pipe ? "cat " + quoted(input) + " | " : "";
  command += "timeout 60 " + quoted(STRATA_BIN);
  for (const std::string& a : args) command += " " + quoted(a);
  if (!pipe) command += " <" + quoted(input);
  command += " >" + quoted(out_path) + " 2>" + quoted(err_path);
  const int status = std::system(command.c_str());
  Outcome o;
  if (WIFEXITED(status)) o.exit_code = WEXITSTATUS(status);
  o.out = slurp(out_path);
  o.err = slurp(err_path);
  std::filesystem::remove(out_path);
  std::filesystem::remove(err_path);
  return o;
}

std::vector<std::string> lines_with(const std::string& text, const std::string& word) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) {
    if (line.find(word) != std::string::npos) lines.push_back(line);
  }
  return lines;
}

std::string shown(const std::vector<std::string>& args) {
  std::string s = "strata";
  for (const std::string& a : args) s += " " + a;
  return s;
}

// Exit 2 and exactly one stderr line mentioning an error, `error: ...`, holding every part.
void expect_one_error(const std::vector<std::string>& args, const std::vector<std::string>& parts) {
  SCOPED_TRACE(shown(args));
  const Outcome o = run_strata(args);
  EXPECT_EQ(o.exit_code, 2) << o.err;
  const std::vector<std::string> errors = lines_with(o.err, "error");
  ASSERT_EQ(errors.size(), 1u) << "stderr:\n" << o.err;
  EXPECT_EQ(errors[0].rfind("error: ", 0), 0u) << errors[0];
  for (const std::string& p : parts) {
    EXPECT_NE(errors[0].find(p), std::string::npos) << "'" << errors[0] << "' lacks '" << p << "'";
  }
}

const std::vector<std::string> kGreedy = {"run", "-m", kStories, "-n", "6", "--temp", "0"};

std::vector<std::string> greedy(std::vector<std::string> more) {
  std::vector<std::string> args = kGreedy;
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(LlamaFlagsTest, IgnoredFlagsWarnOnceEachAndChangeNothing) {
  const Outcome base = run_strata(greedy({"-p", "Once upon"}));
  ASSERT_EQ(base.exit_code, 0) << base.err;
  ASSERT_FALSE(base.out.empty());
  struct Case {
    std::vector<std::string> flags;
    std::vector<std::string> warned;  // a part of each warning line, in order
  };
  const std::vector<Case> cases = {
      {{"-ngl", "99", "-fa"}, {"--n-gpu-layers", "--flash-attn"}},
      {{"-ngl=99"}, {"--n-gpu-layers"}},
      {{"--n-gpu-layers", "99"}, {"--n-gpu-layers"}},
      {{"--gpu-layers", "12"}, {"--n-gpu-layers"}},
      {{"-fa", "on"}, {"--flash-attn"}},
      {{"--flash-attn", "auto"}, {"--flash-attn"}},
      {{"--jinja"}, {"--jinja"}},
      {{"--color"}, {"--color"}},
      {{"-cnv"}, {"strata chat"}},
      {{"--conversation"}, {"strata chat"}},
      {{"--no-mmap"}, {"--no-mmap"}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = greedy({"-p", "Once upon"});
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    SCOPED_TRACE(shown(args));
    const Outcome o = run_strata(args);
    EXPECT_EQ(o.exit_code, 0) << o.err;
    EXPECT_EQ(o.out, base.out);
    EXPECT_TRUE(lines_with(o.err, "error").empty()) << o.err;
    const std::vector<std::string> warnings = lines_with(o.err, "warning");
    ASSERT_EQ(warnings.size(), c.warned.size()) << o.err;
    for (size_t i = 0; i < warnings.size(); ++i) {
      EXPECT_EQ(warnings[i].rfind("warning: ", 0), 0u) << warnings[i];
      EXPECT_NE(warnings[i].find(c.warned[i]), std::string::npos) << warnings[i];
      EXPECT_NE(warnings[i].find("ignored"), std::string::npos) << warnings[i];
    }
  }
}

TEST(LlamaFlagsTest, LongFormsAndServeAndChatSpellings) {
  const Outcome base = run_strata(greedy({"-p", "Once", "-c", "256", "-t", "1"}));
  ASSERT_EQ(base.exit_code, 0) << base.err;
  const Outcome long_forms =
      run_strata(greedy({"-p", "Once", "--ctx-size", "256", "--threads", "1"}));
  EXPECT_EQ(long_forms.exit_code, 0) << long_forms.err;
  EXPECT_EQ(long_forms.out, base.out);
  // -np is serve's --parallel: its range check names --parallel (no server starts).
  expect_one_error({"serve", "-m", kStories, "-np", "0"}, {"--parallel"});
  // chat accepts -cnv silently, -sys as --system, -n -1 and -ngl with its one warning; stdin is
  // empty, so it leaves at once.
  const Outcome chat = run_strata(
      {"chat", "-m", kStories, "-cnv", "-sys", "be brief", "-n", "-1", "-ngl", "99", "--jinja"});
  EXPECT_EQ(chat.exit_code, 0) << chat.err;
  EXPECT_EQ(lines_with(chat.err, "warning").size(), 2u) << chat.err;
  EXPECT_TRUE(lines_with(chat.err, "error").empty()) << chat.err;
}

TEST(LlamaFlagsTest, UnknownFlagsNameTheNearestValidOne) {
  expect_one_error({"run", "-m", kStories, "-p", "x", "--n-predcit", "3"},
                   {"unknown flag --n-predcit", "nearest: --n-predict"});
  expect_one_error({"run", "-m", kStories, "-p", "x", "-np", "4"}, {"-np", "for run", "nearest"});
  // -ctk / -ctv work (habits_test.sh runs them); they must agree, strata's pages keep one type.
  expect_one_error({"run", "-m", kStories, "-p", "x", "-ctk", "q8_0", "--cache-type-v=q4_0"},
                   {"--cache-type-v", "the same type"});
  expect_one_error({"run", "-m", kStories, "-p", "x", "-ctk", "q9_0"}, {"--cache-type-k", "q9_0"});
  // Once read as -h f: help and exit 0.
  expect_one_error({"serve", "-m", kStories, "-hf", "org/repo"}, {"-hf", "strata pull hf://"});
  expect_one_error({"serve", "-m", kStories, "--tempp", "0.5"}, {"--tempp", "nearest: "});
  expect_one_error({"rn", "-m", kStories}, {"unknown command 'rn'", "nearest: run"});
  expect_one_error({"run", "-m", kStories, "hello"}, {"unexpected argument 'hello' for run"});
  expect_one_error({"--verbose"}, {"unknown flag --verbose (nearest: --version)"});
  expect_one_error({"run", "-m", kStories, "-p", "x", "-n", "0"}, {"--n-predict", "-1"});
  expect_one_error({"run", "-m", kStories, "-p", "x", "-n", "gl"}, {"--n-predict", "gl"});
  expect_one_error({"run", "-m", kStories, "-p", "x", "-fa", "sometimes"}, {"--flash-attn"});
}

TEST(LlamaFlagsTest, HelpShowsDefaults) {
  const std::string help = run_strata({"run", "--help"}).out;
  EXPECT_NE(help.find("--n-predict INT:N>0|-1=128"), std::string::npos) << help;
  EXPECT_NE(help.find("--top-k INT:NONNEGATIVE=40"), std::string::npos) << help;
  EXPECT_NE(help.find("--temp FLOAT:NONNEGATIVE=0.8"), std::string::npos) << help;
  const std::string serve = run_strata({"serve", "--help"}).out;
  EXPECT_NE(serve.find("--parallel INT:POSITIVE=4"), std::string::npos) << serve;
}

// "prompt: 2 tokens, ... | generation: 62 tokens, ..." -> {2, 62}.
std::pair<int, int> token_counts(const std::string& err) {
  const size_t p = err.find("prompt: "), g = err.find("generation: ");
  if (p == std::string::npos || g == std::string::npos) return {-1, -1};
  return {std::stoi(err.substr(p + 8)), std::stoi(err.substr(g + 12))};
}

TEST(LlamaFlagsTest, NPredictMinusOneStopsAtTheContext) {
  for (const char* n : {"-1", "-2"}) {
    const Outcome o = run_strata(
        {"run", "-m", kStories, "-p", "Once", "-n", n, "-c", "64", "--temp", "0", "--ignore-eos"});
    ASSERT_EQ(o.exit_code, 0) << o.err;
    const auto [prompt, generated] = token_counts(o.err);
    EXPECT_EQ(prompt, 2) << o.err;
    EXPECT_EQ(prompt + generated, 64) << o.err;
    EXPECT_NE(o.err.find("finish: length"), std::string::npos) << o.err;
  }
}

TEST(LlamaFlagsTest, PromptFromFileStdinAndPipeMatchesP) {
  const std::string text = "Once upon a time";
  const Outcome base = run_strata(greedy({"-p", text}));
  ASSERT_EQ(base.exit_code, 0) << base.err;
  const std::string file = temp_path("prompt.txt");
  std::ofstream(file) << text << "\n";  // editors end files with a newline: dropped, as llama.cpp
  const std::vector<Outcome> same = {
      run_strata(greedy({"-f", file})),
      run_strata(greedy({"--file", file})),
      run_strata(greedy({"-p", "-"}), file),
      run_strata(greedy({"-p", "-"}), file, /*pipe=*/true),
      run_strata(greedy({}), file, /*pipe=*/true),
      run_strata(greedy({}), file),
  };
  for (size_t i = 0; i < same.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(same[i].exit_code, 0) << same[i].err;
    EXPECT_EQ(same[i].out, base.out);
    EXPECT_EQ(token_counts(same[i].err), token_counts(base.err)) << same[i].err;
  }
  // A prompt that looks like a llama.cpp flag stays a prompt.
  const Outcome dash_word = run_strata(greedy({"-p", "-fa"}));
  EXPECT_EQ(dash_word.exit_code, 0) << dash_word.err;
  EXPECT_TRUE(lines_with(dash_word.err, "warning").empty()) << dash_word.err;
  // -e: escapes as llama.cpp processes them.
  const Outcome newline = run_strata(greedy({"-p", "Once\nupon \"a\" time"}));
  const Outcome escaped = run_strata(greedy({"-e", "-p", "Once\\nupon \\\"a\\\" time"}));
  const Outcome hex = run_strata(greedy({"--escape", "-p", "Once\\x0aupon \\x22a\\x22 time"}));
  ASSERT_EQ(newline.exit_code, 0) << newline.err;
  EXPECT_EQ(escaped.out, newline.out) << escaped.err;
  EXPECT_EQ(hex.out, newline.out) << hex.err;
  const Outcome raw = run_strata(greedy({"-p", "Once\\nupon \\\"a\\\" time"}));
  EXPECT_NE(token_counts(raw.err), token_counts(newline.err)) << "without -e, \\n stays as typed";
  std::filesystem::remove(file);
}

TEST(LlamaFlagsTest, NoPromptIsAnError) {
  // stdin is /dev/null: not a terminal, and empty.
  expect_one_error({"run", "-m", kStories, "-n", "4"}, {"no prompt", "stdin is empty"});
  expect_one_error({"run", "-m", kStories, "-n", "4", "-p", "-"}, {"no prompt"});
  const std::string empty = temp_path("empty.txt");
  std::ofstream(empty) << "\n";
  expect_one_error({"run", "-m", kStories, "-f", empty}, {empty, "empty"});
  expect_one_error({"run", "-m", kStories, "-f", empty + ".missing"}, {"cannot read"});
  expect_one_error({"run", "-m", kStories, "-f", empty, "-p", "x"}, {"--file", "--prompt"});
  std::filesystem::remove(empty);
}

// On a terminal with no prompt given, nothing is read: one clear error (util-linux `script`
// gives the command a terminal).
TEST(LlamaFlagsTest, NoPromptOnATerminalIsAnError) {
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "no script(1)";
  const std::string out = temp_path("tty.txt");
  const std::string inner = quoted(STRATA_BIN) + " run -m " + kStories + " -n 3";
  const std::string command =
      "timeout 60 script -qec " + quoted(inner) + " /dev/null </dev/null >" + quoted(out);
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  const std::vector<std::string> errors = lines_with(slurp(out), "error");
  ASSERT_EQ(errors.size(), 1u) << slurp(out);
  EXPECT_NE(errors[0].find("error: no prompt: give -p TEXT, -f FILE"), std::string::npos);
  std::filesystem::remove(out);
}

TEST(LlamaFlagsTest, ContextBeyondTheTrainedOneWarnsOnce) {
  const Outcome beyond = run_strata(greedy({"-p", "Once", "-c", "4096"}));
  EXPECT_EQ(beyond.exit_code, 0) << beyond.err;
  const std::vector<std::string> warnings = lines_with(beyond.err, "warning");
  ASSERT_EQ(warnings.size(), 1u) << beyond.err;
  EXPECT_EQ(warnings[0].rfind("warning: ", 0), 0u);
  EXPECT_NE(warnings[0].find("4096"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("2048"), std::string::npos) << warnings[0];
  for (const char* c : {"2048", "0", "512"}) {
    const Outcome within = run_strata(greedy({"-p", "Once", "-c", c}));
    EXPECT_EQ(within.exit_code, 0) << within.err;
    EXPECT_TRUE(lines_with(within.err, "warning").empty()) << within.err;
  }
}

TEST(LlamaFlagsTest, QuantizeRefusesRequantizingAndInfoNamesTheFileType) {
  const std::string f16 = temp_path("tiny.gguf"), q8 = temp_path("q8.gguf"),
                    q4 = temp_path("q4.gguf");
  ASSERT_EQ(run_strata({"synth", "--preset", "tiny", "-o", f16}).exit_code, 0);
  const Outcome first = run_strata({"quantize", f16, q8, "Q8_0"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_TRUE(lines_with(first.err, "requantiz").empty()) << first.err;

  expect_one_error({"quantize", q8, q4, "Q4_K_M"}, {"already quantized", "--allow-requantize"});
  EXPECT_FALSE(std::filesystem::exists(q4));
  const Outcome again = run_strata({"quantize", q8, q4, "Q4_K_M", "--allow-requantize"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(lines_with(again.err, "warning: requantizing").size(), 1u) << again.err;
  // The tensors were really re-encoded (once they were copied as Q8_0).
  const nlohmann::json j = nlohmann::json::parse(run_strata({"info", "-m", q4, "--json"}).out);
  size_t q4_k = 0;
  for (const nlohmann::json& t : j["tensors"]) {
    if (t["shape"].size() < 2) continue;
    EXPECT_NE(t["type"], "q8_0") << t["name"];
    q4_k += t["type"] == "q4_K";
  }
  EXPECT_GT(q4_k, 10u);
  EXPECT_EQ(run_strata({"run", "-m", q4, "-p", "Once", "-n", "2", "--temp", "0"}).exit_code, 0);

  // The summary comes first; the metadata line names the type too.
  const std::string info = run_strata({"info", "-m", q4}).out;
  EXPECT_EQ(info.rfind("architecture: llama\n", 0), 0u) << info;
  EXPECT_NE(info.find("\nfile type:    Q4_K_M (general.file_type = 15)\n"), std::string::npos);
  EXPECT_NE(info.find("\ncontext:      8192\n"), std::string::npos) << info;
  EXPECT_NE(info.find("\nvocab:        512\n"), std::string::npos) << info;
  EXPECT_NE(info.find("\nparameters:   "), std::string::npos) << info;
  EXPECT_LT(info.find("file type:"), info.find("GGUF v3"));
  EXPECT_NE(info.find("general.file_type: uint32 = 15 (Q4_K_M)\n"), std::string::npos) << info;
  EXPECT_EQ(j["summary"]["file_type"], 15);
  EXPECT_EQ(j["summary"]["file_type_name"], "Q4_K_M");
  EXPECT_EQ(j["summary"]["architecture"], "llama");
  EXPECT_EQ(j["summary"]["vocab_size"], 512);
  const std::string q8_info = run_strata({"info", "-m", q8}).out;
  EXPECT_NE(q8_info.find("file type:    Q8_0 (general.file_type = 7)"), std::string::npos);
  const std::string stories = run_strata({"info", "-m", kStories}).out;
  EXPECT_NE(stories.find("file type:    not set (most weights f32)"), std::string::npos);
  EXPECT_NE(stories.find("context:      2048\n"), std::string::npos) << stories;
  for (const std::string& p : {f16, q8, q4}) std::filesystem::remove(p);
}

}  // namespace
}  // namespace strata
