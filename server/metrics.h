// Server metrics in Prometheus text exposition format (version 0.0.4), named after vLLM's:
// request counts by endpoint and status, token counters, latency histograms, load gauges, and
// sliding-window p50/p99 of time to first token and inter-token latency. Recorded where things
// happen (the engine worker's step loop, the HTTP handlers); rendered at each scrape.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "server/sliding_quantiles.h"
#include "strata/engine.h"

namespace strata::server {

// A Prometheus histogram: cumulative bucket counts at fixed upper bounds, plus sum and count.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // Appends the _bucket, _sum and _count lines of metric `name`.
  void render(const std::string& name, std::string& out) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  explicit Metrics(int window_seconds = 60);

  void count_request(const std::string& endpoint, int status);
  void add_prompt_tokens(size_t n);
  void add_generation_tokens(size_t n);
  void observe_time_to_first_token(double seconds);
  void observe_inter_token_latency(double seconds);
  void observe_e2e_latency(double seconds);
  void observe_queue_time(double seconds);

  // The exposition text; `load` is the engine's latest load (gauges).
  std::string render(const EngineLoad& load) const;

 private:
  static double now_seconds();

  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  uint64_t prompt_tokens_ = 0;
  uint64_t generation_tokens_ = 0;
  Histogram ttft_, itl_, e2e_, queue_;
  SlidingQuantiles ttft_window_, itl_window_;
};

}  // namespace strata::server
