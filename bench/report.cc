// The outputs of `strata bench` (a table shaped like llama-bench's, one row per test, "t/s" as
// mean ± standard deviation over repetitions) and `strata eval`, each also as one JSON object for
// other tools.
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/bench.h"
#include "bench/eval.h"

namespace strata::bench {
namespace {

std::string printf_string(const char* format, auto... args) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, format, args...);
  return buffer;
}

// "1.23 GiB" or "4.56 MiB".
std::string human_bytes(size_t bytes) {
  const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  return mib >= 1024 ? printf_string("%.2f GiB", mib / 1024) : printf_string("%.2f MiB", mib);
}

}  // namespace

std::string format_table(const BenchReport& r) {
  std::ostringstream out;
  const std::string model = r.model.name.empty() ? r.model.architecture : r.model.name;
  out << printf_string(
             "model: %s (%s), weights read per token: %s, threads: %d, SIMD: %s, %zu matrices "
             "interleaved\n",
             model.c_str(), r.model.architecture.c_str(), human_bytes(r.weight_bytes).c_str(),
             r.threads, r.model.simd_targets.c_str(), r.model.interleaved_matrices)
      << "| test            |                t/s | ttft ms | itl p50 ms | itl p99 ms |\n"
      << "| --------------- | -----------------: | ------: | ---------: | ---------: |\n";
  if (r.prompt_tokens > 0) {
    out << printf_string("| pp%-13d | %9.2f ± %6.2f | %7.2f |          - |          - |\n",
                         r.prompt_tokens, r.pp_tokens_per_s.mean, r.pp_tokens_per_s.stddev,
                         r.ttft_ms);
  }
  if (r.generate_tokens > 1) {
    const std::string name = "tg" + std::to_string(r.generate_tokens) +
                             (r.ctx_depth > 0 ? " @ d" + std::to_string(r.ctx_depth) : "");
    out << printf_string("| %-15s | %9.2f ± %6.2f |       - | %10.2f | %10.2f |\n", name.c_str(),
                         r.tg_tokens_per_s.mean, r.tg_tokens_per_s.stddev, r.itl_p50_ms,
                         r.itl_p99_ms);
  }
  for (const ConcurrencyResult& c : r.concurrency) {
    const std::string name = "tg x" + std::to_string(c.streams) + " streams";
    out << printf_string("| %-15s | %9.2f total     | %7.2f | %10.2f | %10.2f |\n", name.c_str(),
                         c.aggregate_tokens_per_s, c.ttft_p50_ms, c.itl_p50_ms, c.itl_p99_ms);
  }
  if (!r.concurrency.empty()) {
    out << "(tg xN: decode tokens/s of all streams together once every stream has its first "
           "token; ttft is the p50)\n";
  }
  out << printf_string("peak RSS: %s; decode reads %.1f GB/s of weights",
                       human_bytes(r.peak_rss_bytes).c_str(), r.tg_bandwidth_gb_s);
  if (r.kv.kv_positions > 0) {
    std::string pages;
    for (const auto& [name, n] : r.kv.kv_pages_by_precision) {
      pages += (pages.empty() ? "" : ", ") + std::to_string(n) + " " + name;
    }
    out << printf_string(
        "\nKV cache (%s%s%s): %zu positions in %s, %.0f bytes per token, %.2fx smaller than "
        "f16; pages: %s",
        r.kv_type.c_str(), r.kv_tiers == "none" ? "" : ", tiers ",
        r.kv_tiers == "none" ? "" : r.kv_tiers.c_str(), r.kv.kv_positions,
        human_bytes(r.kv.kv_bytes_used).c_str(),
        static_cast<double>(r.kv.kv_bytes_used) / static_cast<double>(r.kv.kv_positions),
        static_cast<double>(r.kv.kv_f16_bytes) / static_cast<double>(r.kv.kv_bytes_used),
        pages.c_str());
  }
  if (r.attn.enabled) {
    out << printf_string(
        "\nattention: sparse, %d positions per decode query (%d sinks, a window of %d), the "
        "first %d layers dense",
        r.attn.budget, r.attn.sinks, r.attn.window, r.attn.dense_layers);
  }
  if (r.read_bandwidth_gb_s > 0) {
    out << printf_string(" = %.0f%% of the %.1f GB/s this machine reads (STREAM-like, %d threads)",
                         100.0 * r.tg_bandwidth_gb_s / r.read_bandwidth_gb_s, r.read_bandwidth_gb_s,
                         r.threads);
  }
  out << "\n";
  if (r.spec) {
    out << printf_string(
        "speculation (%s): %.1f%% of %llu guesses accepted, %.2f tokens per verifying step; "
        "tg %.2f t/s against %.2f without: %.2fx\n",
        r.spec_kind.c_str(), 100.0 * r.spec->acceptance_rate(),
        static_cast<unsigned long long>(r.spec->draft_tokens), r.spec->mean_accepted(),
        r.tg_tokens_per_s.mean, r.spec->plain_tg_tokens_per_s.mean, r.spec->speedup);
  }
  if (r.prefix_cache) out << format_prefix_cache(*r.prefix_cache);
  return out.str();
}

std::string format_prefix_cache(const PrefixCacheResult& p) {
  std::ostringstream out;
  out << printf_string(
      "\nprefix cache, a %d-token system prompt: time to first token %.1f ms cold, %.1f ms warm "
      "(another question): %.1fx\n",
      p.prefix_tokens, p.cold.ttft_ms, p.warm.ttft_ms, p.warm_speedup());
  out << "| turn | prompt tokens | cached tokens |  ttft ms |\n";
  out << "| ---: | ------------: | ------------: | -------: |\n";
  for (size_t i = 0; i < p.turns.size(); ++i) {
    const PrefixCacheRequest& t = p.turns[i];
    out << printf_string("| %4zu | %13zu | %13zu | %8.1f |\n", i + 1, t.prompt_tokens,
                         t.cached_tokens, t.ttft_ms);
  }
  return out.str();
}

std::string format_json(const BenchReport& r) {
  nlohmann::ordered_json j;
  j["model"] = r.model.name;
  j["architecture"] = r.model.architecture;
  j["threads"] = r.threads;
  j["simd_targets"] = r.model.simd_targets;
  j["interleaved_matrices"] = r.model.interleaved_matrices;
  j["n_prompt"] = r.prompt_tokens;
  j["n_gen"] = r.generate_tokens;
  j["ctx_depth"] = r.ctx_depth;
  j["repetitions"] = r.repetitions;
  // A figure the run did not measure is null, never a 0 that reads as a measurement: no prompt
  // (-p 0), no generation (-n 0), one gap between tokens needing two tokens, a spread needing
  // two repetitions, the read bandwidth its own run.
  auto measured = [](bool taken, double value) {
    return taken ? nlohmann::ordered_json(value) : nlohmann::ordered_json(nullptr);
  };
  const bool pp = r.prompt_tokens > 0, tg = r.generate_tokens > 0, spread = r.repetitions > 1;
  j["pp_tokens_per_s"] = measured(pp, r.pp_tokens_per_s.mean);
  j["pp_tokens_per_s_stddev"] = measured(pp && spread, r.pp_tokens_per_s.stddev);
  j["tg_tokens_per_s"] = measured(tg, r.tg_tokens_per_s.mean);
  j["tg_tokens_per_s_stddev"] = measured(tg && spread, r.tg_tokens_per_s.stddev);
  j["ttft_ms"] = measured(tg, r.ttft_ms);
  j["itl_p50_ms"] = measured(r.generate_tokens > 1, r.itl_p50_ms);
  j["itl_p99_ms"] = measured(r.generate_tokens > 1, r.itl_p99_ms);
  j["peak_rss_bytes"] = r.peak_rss_bytes;
  j["kv_type"] = r.kv_type;
  j["kv_tiers"] = r.kv_tiers;
  j["attn"] = r.attn.enabled ? "sparse" : "dense";
  if (r.attn.enabled) {
    j["attn_budget"] = r.attn.budget;
    j["attn_window"] = r.attn.window;
    j["attn_sinks"] = r.attn.sinks;
    j["attn_dense_layers"] = r.attn.dense_layers;
  }
  if (r.kv.kv_positions > 0) {
    j["kv_positions"] = r.kv.kv_positions;
    j["kv_bytes"] = r.kv.kv_bytes_used;
    j["kv_bytes_per_token"] =
        static_cast<double>(r.kv.kv_bytes_used) / static_cast<double>(r.kv.kv_positions);
    j["kv_compression_vs_f16"] =
        static_cast<double>(r.kv.kv_f16_bytes) / static_cast<double>(r.kv.kv_bytes_used);
    j["kv_pages_by_precision"] = r.kv.kv_pages_by_precision;
  }
  j["weight_bytes"] = r.weight_bytes;
  j["tg_bandwidth_gb_s"] = measured(tg, r.tg_bandwidth_gb_s);
  const bool bandwidth = r.read_bandwidth_gb_s > 0;
  j["read_bandwidth_gb_s"] = measured(bandwidth, r.read_bandwidth_gb_s);
  j["tg_bandwidth_fraction"] =
      measured(tg && bandwidth, bandwidth ? r.tg_bandwidth_gb_s / r.read_bandwidth_gb_s : 0);
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const ConcurrencyResult& c : r.concurrency) {
    rows.push_back({{"streams", c.streams},
                    {"tg_tokens_per_s", c.aggregate_tokens_per_s},
                    {"output_tokens_per_s", c.output_tokens_per_s},
                    {"ttft_p50_ms", c.ttft_p50_ms},
                    {"ttft_p99_ms", c.ttft_p99_ms},
                    {"itl_p50_ms", c.itl_p50_ms},
                    {"itl_p99_ms", c.itl_p99_ms}});
  }
  j["concurrency"] = rows;
  j["spec"] = r.spec_kind;
  if (r.spec) {
    j["spec_acceptance_rate"] = r.spec->acceptance_rate();
    j["spec_mean_accepted"] = r.spec->mean_accepted();
    j["spec_speedup"] = r.spec->speedup;
    j["spec_drafts"] = r.spec->drafts;
    j["spec_draft_tokens"] = r.spec->draft_tokens;
    j["spec_accepted_tokens"] = r.spec->accepted_tokens;
    j["plain_tg_tokens_per_s"] = r.spec->plain_tg_tokens_per_s.mean;
  }
  if (r.prefix_cache) {
    auto request = [](const PrefixCacheRequest& q) {
      return nlohmann::ordered_json{{"prompt_tokens", q.prompt_tokens},
                                    {"cached_tokens", q.cached_tokens},
                                    {"ttft_ms", q.ttft_ms}};
    };
    nlohmann::ordered_json turns = nlohmann::ordered_json::array();
    for (const PrefixCacheRequest& t : r.prefix_cache->turns) turns.push_back(request(t));
    j["prefix_cache"] = {{"prefix_tokens", r.prefix_cache->prefix_tokens},
                         {"cold", request(r.prefix_cache->cold)},
                         {"warm", request(r.prefix_cache->warm)},
                         {"warm_speedup", r.prefix_cache->warm_speedup()},
                         {"turns", turns}};
  }
  return j.dump(2);
}

std::string format_eval_table(const EvalReport& r) {
  std::ostringstream out;
  out << printf_string("model: %s (%s), %zu sequences, %zu scored positions, %.1f tokens/s\n",
                       r.model_path.c_str(), r.model.architecture.c_str(), r.sequences, r.positions,
                       r.tokens_per_s)
      << printf_string("perplexity: %.4f ± %.4f", r.perplexity.value, r.perplexity.std_error);
  if (r.has_reference) {
    out << printf_string(" (reference %s: %.4f ± %.4f)", r.reference_path.c_str(),
                         r.reference_perplexity.value, r.reference_perplexity.std_error);
  }
  out << "\n";
  if (r.has_reference) {
    const Fidelity& f = r.fidelity;
    out << printf_string(
               "same top-1 token as the reference: %.2f%% (%zu of %zu; 95%% interval "
               "%.2f-%.2f%%)\n",
               100.0 * f.top1_same / r.positions, f.top1_same, r.positions, 100 * f.top1_ci_low,
               100 * f.top1_ci_high)
        << printf_string("KL divergence from the reference: mean %.6f, p99 %.6f, max %.6f nats\n",
                         f.kld_mean, f.kld_p99, f.kld_max)
        << printf_string("mean |logit - reference logit|: %.5f\n", f.mean_abs_logit_diff);
  }
  return out.str();
}

std::string format_eval_json(const EvalReport& r) {
  nlohmann::ordered_json j;
  j["model"] = r.model_path;
  j["sequences"] = r.sequences;
  j["positions"] = r.positions;
  j["tokens_per_s"] = r.tokens_per_s;
  j["perplexity"] = r.perplexity.value;
  j["perplexity_std_error"] = r.perplexity.std_error;
  if (r.has_reference) {
    const Fidelity& f = r.fidelity;
    j["reference"] = r.reference_path;
    j["reference_perplexity"] = r.reference_perplexity.value;
    j["reference_perplexity_std_error"] = r.reference_perplexity.std_error;
    j["top1_agreement"] = r.positions ? static_cast<double>(f.top1_same) / r.positions : 0.0;
    j["top1_agreement_ci95"] = {f.top1_ci_low, f.top1_ci_high};
    j["kld_mean"] = f.kld_mean;
    j["kld_p99"] = f.kld_p99;
    j["kld_max"] = f.kld_max;
    j["mean_abs_logit_diff"] = f.mean_abs_logit_diff;
  }
  return j.dump(2);
}

}  // namespace strata::bench
