// `strata bench`: the throughput and latency of one model file on this machine, measured the way
// llama-bench measures it (prompt processing and token generation apart, random prompt tokens,
// repetitions with mean and standard deviation), plus what a server operator needs: time to
// first token, inter-token latency percentiles, peak memory, and aggregate throughput when many
// streams share each step (continuous batching).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/prefix_bench.h"
#include "strata/engine.h"
#include "strata/result.h"

namespace strata::bench {

struct BenchOptions {
  EngineOptions engine;
  int prompt_tokens = 512;        // -p: tokens of the prompt-processing test (0: skip it)
  int generate_tokens = 128;      // -n: tokens of the generation test (0: skip it)
  int repetitions = 3;            // -r
  int ctx_depth = 0;              // tokens already in the cache before the generation test
  std::vector<int> concurrency;   // streams at once for the batching test (empty: skip it)
  bool measure_bandwidth = true;  // the STREAM-like read test (a second or two)
  // --prompt-file: the generation test's prompt (text), in place of ctx_depth random tokens.
  std::string generation_text;
  float temperature = 0;        // --temp of the generation test (0: greedy)
  int prefix_cache_tokens = 0;  // --prefix-cache: the shared system prompt (0: skip the test)
  int prefix_cache_turns = 10;  // --turns: the conversation's turns
  uint64_t seed = 1;            // of the random prompt tokens
};

// Mean and sample standard deviation over repetitions.
struct Stat {
  double mean = 0;
  double stddev = 0;
};

// One row of the batching test: `streams` requests submitted together, each with a prompt of
// prompt_tokens and generate_tokens new tokens.
struct ConcurrencyResult {
  int streams = 0;
  // Decode throughput once every stream is generating: tokens that arrive after the last
  // stream's first token, over the time from then to the end.
  double aggregate_tokens_per_s = 0;
  double output_tokens_per_s = 0;  // every generated token over the whole test, prefill included
  double ttft_p50_ms = 0, ttft_p99_ms = 0;
  double itl_p50_ms = 0, itl_p99_ms = 0;
};

// With --spec: the generation test's guesses, and its speed against the same requests without
// them (each repetition runs both, plain first).
struct SpeculationResult {
  uint64_t drafts = 0, draft_tokens = 0, accepted_tokens = 0;
  Stat plain_tg_tokens_per_s;
  double speedup = 0;  // tg_tokens_per_s over plain_tg_tokens_per_s
  double acceptance_rate() const {
    return draft_tokens ? static_cast<double>(accepted_tokens) / draft_tokens : 0;
  }
  // Tokens each verifying step yields: the confirmed guesses and the model's own token.
  double mean_accepted() const {
    return drafts ? 1.0 + static_cast<double>(accepted_tokens) / drafts : 0;
  }
};

struct BenchReport {
  ModelSummary model;
  int threads = 0;
  int prompt_tokens = 0, generate_tokens = 0, ctx_depth = 0, repetitions = 0;
  Stat pp_tokens_per_s;  // prompt processing
  Stat tg_tokens_per_s;  // generation, after ctx_depth tokens
  double ttft_ms = 0;    // mean time from submit to the first token of the prompt test
  double itl_p50_ms = 0, itl_p99_ms = 0;  // between generated tokens, over all repetitions
  size_t peak_rss_bytes = 0;
  size_t weight_bytes = 0;       // weight bytes one generated token reads
  double tg_bandwidth_gb_s = 0;  // weight_bytes * tg tokens/s: the memory traffic decode implies
  // The machine's read bandwidth with the same threads (STREAM-like, bandwidth.h), measured in
  // this run: decode's ceiling. 0 when skipped.
  double read_bandwidth_gb_s = 0;
  std::vector<ConcurrencyResult> concurrency;
  // The KV cache at the last token of the generation test (ctx_depth + n_gen positions): its
  // policy, positions, bytes per position and compression against f16, pages per precision.
  std::string kv_type, kv_tiers;
  EngineLoad kv;
  SparseAttentionPolicy attn;  // --attn: which pages decode steps read
  std::optional<PrefixCacheResult> prefix_cache;
  std::optional<SpeculationResult> spec;
  std::string spec_kind = "none";
};

Result<BenchReport> run_bench(const BenchOptions& options);

// llama-bench-like table on one string; and one JSON object with the field names other tools
// read (pp_tokens_per_s, tg_tokens_per_s, ttft_ms, itl_p50_ms, itl_p99_ms, peak_rss_bytes,
// weight_bytes, ...).
std::string format_table(const BenchReport& report);
std::string format_json(const BenchReport& report);
// The --prefix-cache test's lines of the table.
std::string format_prefix_cache(const PrefixCacheResult& result);

// Mean and sample standard deviation (n - 1) of `xs`; empty input gives zeros.
Stat mean_stddev(const std::vector<double>& xs);

// The q-quantile (0..1) of `values` by linear interpolation between order statistics (the
// definition numpy's default uses). Sorts a copy; empty input gives 0.
double percentile(std::vector<double> values, double q);

}  // namespace strata::bench
