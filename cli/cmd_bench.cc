// strata bench: throughput and latency of a model file (see bench/bench.h for what is measured).
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>

#include "bench/bench.h"
#include "cli/commands.h"
#include "cli/common.h"

namespace strata::cli {
namespace {

struct BenchFlags {
  bench::BenchOptions options;
  bool json = false;
};

int run(const BenchFlags& f) {
  Result<bench::BenchReport> result = bench::run_bench(f.options);
  if (!result.ok()) return report(result.error());
  const std::string text =
      f.json ? bench::format_json(*result) + "\n" : bench::format_table(*result);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  bench::BenchOptions& o = f->options;
  CLI::App* sub = app.add_subcommand(
      "bench", "measure prompt processing and generation speed, latency and memory");
  add_model_flags(*sub, o.engine);
  add_speculative_flags(*sub, o.engine.speculative);
  sub->add_option("-p,--n-prompt", o.prompt_tokens, "prompt tokens of the prompt test (0: skip)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("-n,--n-gen", o.generate_tokens, "tokens of the generation test (0: skip)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("-r,--repetitions", o.repetitions, "repetitions of each test")
      ->check(CLI::PositiveNumber);
  sub->add_option("-d,--ctx-depth", o.ctx_depth,
                  "tokens already in the cache before the generation test")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--concurrency", o.concurrency,
                  "stream counts for the batching test, e.g. 1,4,8,16 (aggregate tokens/s, "
                  "time to first token and inter-token latency per count)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  sub->add_option("-b,--batch-tokens", o.engine.batch_tokens,
                  "tokens per forward pass (prompt chunks and decode tokens together), as serve's")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--prefix-cache", o.prefix_cache_tokens,
                  "tokens of a shared system prompt: time to first token with it cold, warm "
                  "(another question) and over a chat of --turns turns, with prefix caching")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--turns", o.prefix_cache_turns, "turns of the --prefix-cache conversation")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option_function<std::string>(
      "--prompt-file",
      [&o](const std::string& path) {
        std::ifstream file(path, std::ios::binary);
        if (!file) throw CLI::ValidationError("--prompt-file", "cannot read '" + path + "'");
        o.generation_text.assign(std::istreambuf_iterator<char>(file), {});
      },
      "the generation test's prompt, a text file (default: --ctx-depth random tokens); with "
      "--spec, for output that repeats or edits its input");
  sub->add_option("--temp", o.temperature,
                  "temperature of the generation test (0: greedy; llama.cpp's defaults for top-k, "
                  "top-p and min-p)")
      ->check(CLI::Range(0.0, 2.0))
      ->capture_default_str();
  sub->add_option("--seed", o.seed, "seed of the random prompt tokens");
  sub->add_flag("!--no-bandwidth", o.measure_bandwidth,
                "skip the STREAM-like memory read test (decode's bandwidth ceiling)");
  sub->add_flag("--json", f->json, "print one JSON object instead of the table");
  return {sub, [f] { return run(*f); }};
}

}  // namespace strata::cli
