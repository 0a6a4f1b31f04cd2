#include "bench/bench.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <thread>

#include "bench/bandwidth.h"

namespace strata::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

size_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<size_t>(usage.ru_maxrss) * 1024;  // Linux reports kilobytes
}

GenerationRequest fixed_length_request(std::vector<TokenId> prompt, int new_tokens) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = new_tokens;
  r.ignore_eos = true;  // every run generates exactly new_tokens
  r.sampling.temperature = 0;
  return r;
}

// One request per stream, all submitted before the first step; times every token's arrival.
struct StreamTimes {
  Clock::time_point submitted;
  std::vector<Clock::time_point> tokens;
};

Result<ConcurrencyResult> run_concurrent(Engine& engine, int streams, int prompt_tokens,
                                         int new_tokens, std::mt19937_64& rng) {
  std::vector<StreamTimes> times(static_cast<size_t>(streams));
  const Clock::time_point start = Clock::now();
  for (StreamTimes& t : times) {
    t.submitted = Clock::now();
    GenerationRequest r = fixed_length_request(
        random_prompt(static_cast<size_t>(prompt_tokens), engine.model().n_vocab, rng), new_tokens);
    STRATA_RETURN_IF_ERROR(engine.submit(r, [&t](const TokenEvent& e) {
      if (e.token >= 0) t.tokens.push_back(Clock::now());
      return true;
    }));
  }
  while (engine.has_work()) STRATA_RETURN_IF_ERROR(engine.step());
  const double wall = seconds_since(start);

  std::vector<double> ttft, itl;
  size_t generated = 0;
  Clock::time_point all_started = start, end = start;
  for (const StreamTimes& t : times) {
    if (t.tokens.empty()) continue;
    all_started = std::max(all_started, t.tokens.front());
    end = std::max(end, t.tokens.back());
  }
  size_t decode_window_tokens = 0;
  for (const StreamTimes& t : times) {
    generated += t.tokens.size();
    for (Clock::time_point at : t.tokens) decode_window_tokens += at > all_started ? 1 : 0;
    if (t.tokens.empty()) continue;
    ttft.push_back(std::chrono::duration<double, std::milli>(t.tokens[0] - t.submitted).count());
    for (size_t i = 1; i < t.tokens.size(); ++i)
      itl.push_back(
          std::chrono::duration<double, std::milli>(t.tokens[i] - t.tokens[i - 1]).count());
  }
  ConcurrencyResult c;
  c.streams = streams;
  const double window = std::chrono::duration<double>(end - all_started).count();
  c.aggregate_tokens_per_s = window > 0 ? static_cast<double>(decode_window_tokens) / window : 0;
  c.output_tokens_per_s = static_cast<double>(generated) / wall;
  c.ttft_p50_ms = percentile(ttft, 0.5);
  c.ttft_p99_ms = percentile(ttft, 0.99);
  c.itl_p50_ms = percentile(itl, 0.5);
  c.itl_p99_ms = percentile(itl, 0.99);
  return c;
}

}  // namespace

namespace {

// Decode tokens/s of one request (its first token, which ends the prefill, excluded), with the
// gaps between tokens appended to `itl`; `kv` (if given) gets the cache at its last token.
Result<double> measure_generation(Engine& engine, const GenerationRequest& r,
                                  std::vector<double>& itl, EngineLoad* kv) {
  std::vector<Clock::time_point> arrivals;
  STRATA_RETURN_IF_ERROR(engine.generate(r, [&](const TokenEvent& e) {
    if (e.token >= 0) arrivals.push_back(Clock::now());
    if (e.finish != FinishReason::kNone && kv) *kv = engine.load();  // pages still held
    return true;
  }));
  for (size_t i = 1; i < arrivals.size(); ++i) {
    itl.push_back(std::chrono::duration<double, std::milli>(arrivals[i] - arrivals[i - 1]).count());
  }
  const double decode_seconds =
      std::chrono::duration<double>(arrivals.back() - arrivals.front()).count();
  return static_cast<double>(arrivals.size() - 1) / decode_seconds;
}

// The speculative generation runs against the plain ones, from the engine's counters.
SpeculationResult speculation_result(const EngineLoad& before, const EngineLoad& after,
                                     const std::vector<double>& tg,
                                     const std::vector<double>& plain_tg) {
  SpeculationResult s;
  s.drafts = after.spec_drafts - before.spec_drafts;
  s.draft_tokens = after.spec_draft_tokens - before.spec_draft_tokens;
  s.accepted_tokens = after.spec_accepted_tokens - before.spec_accepted_tokens;
  s.plain_tg_tokens_per_s = mean_stddev(plain_tg);
  const double plain = s.plain_tg_tokens_per_s.mean;
  s.speedup = plain > 0 ? mean_stddev(tg).mean / plain : 0;
  return s;
}

}  // namespace

std::vector<TokenId> random_prompt(size_t n, size_t n_vocab, std::mt19937_64& rng) {
  std::uniform_int_distribution<TokenId> pick(0, static_cast<TokenId>(n_vocab - 1));
  std::vector<TokenId> tokens(std::max<size_t>(n, 1));
  for (TokenId& t : tokens) t = pick(rng);
  return tokens;
}

Stat mean_stddev(const std::vector<double>& xs) {
  Stat s;
  if (xs.empty()) return s;
  for (double x : xs) s.mean += x;
  s.mean /= static_cast<double>(xs.size());
  if (xs.size() > 1) {
    double sq = 0;
    for (double x : xs) sq += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(sq / static_cast<double>(xs.size() - 1));
  }
  return s;
}

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (rank - static_cast<double>(lo));
}

Result<BenchReport> run_bench(const BenchOptions& o) {
  if (o.prompt_tokens < 0 || o.generate_tokens < 0 || o.ctx_depth < 0 || o.repetitions <= 0 ||
      o.prefix_cache_tokens < 0 || o.prefix_cache_turns <= 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "-p, -n, --ctx-depth and --prefix-cache must be >= 0, and -r and --turns "
                      "at least 1");
  }
  const int max_streams =
      o.concurrency.empty() ? 1 : *std::max_element(o.concurrency.begin(), o.concurrency.end());
  if (max_streams <= 0) {
    return make_error(ErrorCode::kInvalidArgument, "--concurrency values must be at least 1");
  }
  // The batching test's streams keep prompts short: it measures generation with many streams.
  const int stream_prompt = std::min(o.prompt_tokens > 0 ? o.prompt_tokens : 32, 64);
  const int stream_tokens = std::max(o.generate_tokens, 2);
  // Each sequence needs room for the longest test it runs.
  EngineOptions engine_options = o.engine;
  int longest = std::max(o.prompt_tokens + 1, o.ctx_depth + o.generate_tokens + 1);
  if (!o.concurrency.empty()) longest = std::max(longest, stream_prompt + stream_tokens);
  if (o.prefix_cache_tokens > 0) {
    longest = std::max(longest, prefix_cache_context(o.prefix_cache_tokens, o.prefix_cache_turns));
    engine_options.prefix_cache.enabled = true;  // other tests' random prompts never hit
  }
  // A prompt file's length is known once it is tokenized: the model's context (at most 4096)
  // holds it unless -c says otherwise.
  if (engine_options.context == 0 && o.generation_text.empty()) engine_options.context = longest;
  if (engine_options.context != 0 && engine_options.context < longest) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the context (-c " + std::to_string(engine_options.context) +
                          ") is smaller than the test needs (" + std::to_string(longest) +
                          " tokens); raise -c or lower -p/-n/--ctx-depth");
  }
  engine_options.max_sequences = std::max(engine_options.max_sequences, max_streams);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::create(engine_options));

  BenchReport report;
  report.model = engine->model();
  report.threads = engine_options.threads > 0
                       ? engine_options.threads
                       : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  report.prompt_tokens = o.prompt_tokens;
  report.generate_tokens = o.generate_tokens;
  report.ctx_depth = o.ctx_depth;
  report.repetitions = o.repetitions;
  report.weight_bytes = report.model.weight_bytes;
  report.kv_type = kv_precision_name(engine_options.kv.hot);
  report.kv_tiers = kv_tiers_string(engine_options.kv.tiers);
  report.attn = engine_options.kv.sparse;
  report.spec_kind = speculation_kind_name(engine_options.speculative.kind);
  std::mt19937_64 rng(o.seed);
  const size_t n_vocab = report.model.n_vocab;

  // Warm-up: first touches of weights, KV pages and scratch buffers are not measured.
  STRATA_RETURN_IF_ERROR(
      engine->generate(fixed_length_request(random_prompt(8, n_vocab, rng), 2), {}));

  // A text's tokens in place of random ones: output that repeats its input is what n-gram
  // speculation is for, and random tokens rarely make it.
  const std::vector<TokenId> generation_prompt =
      o.generation_text.empty() ? std::vector<TokenId>{}
                                : engine->tokenize(o.generation_text, true, false);
  std::vector<double> pp, tg, ttft, itl, plain_tg;
  const bool speculating = engine_options.speculative.kind != SpeculationKind::kNone;
  const EngineLoad spec_before = engine->load();
  for (int rep = 0; rep < o.repetitions; ++rep) {
    if (o.prompt_tokens > 0) {
      GenerationRequest r = fixed_length_request(
          random_prompt(static_cast<size_t>(o.prompt_tokens), n_vocab, rng), 1);
      STRATA_ASSIGN_OR_RETURN(GenerationStats s, engine->generate(r, {}));
      pp.push_back(static_cast<double>(o.prompt_tokens) / s.prompt_seconds);
      ttft.push_back(s.prompt_seconds * 1e3);
    }
    if (o.generate_tokens > 1) {
      // The depth (at least one token) is prefilled first; only the decode steps after it count.
      GenerationRequest r = fixed_length_request(
          generation_prompt.empty()
              ? random_prompt(static_cast<size_t>(std::max(o.ctx_depth, 1)), n_vocab, rng)
              : generation_prompt,
          o.generate_tokens);
      // Sampled generation draws from the model (speculation then meets its rejection rule);
      // each repetition with its own seed.
      r.sampling.temperature = o.temperature;
      r.sampling.seed = o.seed + static_cast<uint64_t>(rep);
      if (speculating) {
        // The same request without guesses first: the baseline of the speed-up, this run.
        r.speculation = SpeculationKind::kNone;
        std::vector<double> ignored;
        STRATA_ASSIGN_OR_RETURN(const double plain,
                                measure_generation(*engine, r, ignored, nullptr));
        plain_tg.push_back(plain);
        r.speculation.reset();
      }
      STRATA_ASSIGN_OR_RETURN(const double speed, measure_generation(*engine, r, itl, &report.kv));
      tg.push_back(speed);
    }
  }
  report.pp_tokens_per_s = mean_stddev(pp);
  report.tg_tokens_per_s = mean_stddev(tg);
  if (speculating) report.spec = speculation_result(spec_before, engine->load(), tg, plain_tg);
  report.ttft_ms = mean_stddev(ttft).mean;
  report.itl_p50_ms = percentile(itl, 0.5);
  report.itl_p99_ms = percentile(itl, 0.99);
  report.tg_bandwidth_gb_s =
      static_cast<double>(report.weight_bytes) * report.tg_tokens_per_s.mean / 1e9;

  for (int streams : o.concurrency) {
    STRATA_ASSIGN_OR_RETURN(ConcurrencyResult c,
                            run_concurrent(*engine, streams, stream_prompt, stream_tokens, rng));
    report.concurrency.push_back(c);
  }
  if (o.prefix_cache_tokens > 0) {
    STRATA_ASSIGN_OR_RETURN(report.prefix_cache, run_prefix_cache(*engine, o.prefix_cache_tokens,
                                                                  o.prefix_cache_turns, rng));
  }
  report.peak_rss_bytes = peak_rss_bytes();
  if (o.measure_bandwidth) {
    // A buffer well past any cache and about the size of a small model's weights.
    const size_t bytes = std::max<size_t>(size_t{512} << 20, report.weight_bytes);
    report.read_bandwidth_gb_s =
        measure_read_bandwidth(std::min(bytes, size_t{2} << 30), report.threads);
  }
  return report;
}

}  // namespace strata::bench
