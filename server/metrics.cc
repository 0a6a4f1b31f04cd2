#include "server/metrics.h"

#include <chrono>
#include <cstdio>

namespace strata::server {
namespace {

// Bucket bounds in seconds: vLLM's, extended down to sub-millisecond for small CPU models.
const std::vector<double> kTtftBounds = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                         0.25,  0.5,   0.75, 1.0,  2.5,  5.0,  7.5,  10,
                                         20,    40,    80,   160,  640,  2560};
const std::vector<double> kItlBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075,
                                        0.1,    0.15,  0.2,    0.3,   0.4,  0.5,   0.75, 1.0,
                                        2.5,    5.0,   7.5,    10,    20,   40,    80};
const std::vector<double> kRequestBounds = {0.01, 0.05, 0.1, 0.3, 0.5, 0.8, 1.0,  1.5,
                                            2.0,  2.5,  5.0, 10,  15,  20,  30,   40,
                                            50,   60,   120, 240, 480, 960, 1920, 7680};

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void sample(std::string& out, const std::string& name, const std::string& labels, double value) {
  out += name;
  if (!labels.empty()) {
    out += '{';
    out += labels;
    out += '}';
  }
  out += ' ';
  out += number(value);
  out += '\n';
}

// Label values escape backslash, double quote and newline (the exposition format's rule).
std::string label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t b = 0;
  while (b < bounds_.size() && value > bounds_[b]) ++b;
  ++counts_[b];
  sum_ += value;
  ++count_;
}

void Histogram::render(const std::string& name, std::string& out) const {
  uint64_t cumulative = 0;
  for (size_t b = 0; b < bounds_.size(); ++b) {
    cumulative += counts_[b];
    sample(out, name + "_bucket", "le=\"" + number(bounds_[b]) + "\"",
           static_cast<double>(cumulative));
  }
  sample(out, name + "_bucket", "le=\"+Inf\"", static_cast<double>(count_));
  sample(out, name + "_sum", "", sum_);
  sample(out, name + "_count", "", static_cast<double>(count_));
}

Metrics::Metrics(int window_seconds)
    : ttft_(kTtftBounds),
      itl_(kItlBounds),
      e2e_(kRequestBounds),
      queue_(kRequestBounds),
      ttft_window_(window_seconds),
      itl_window_(window_seconds) {}

double Metrics::now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void Metrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{endpoint, status}];
}

void Metrics::add_prompt_tokens(size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  prompt_tokens_ += n;
}

void Metrics::add_generation_tokens(size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  generation_tokens_ += n;
}

void Metrics::observe_time_to_first_token(double seconds) {
  ttft_window_.record(seconds, now_seconds());
  std::lock_guard<std::mutex> lock(mutex_);
  ttft_.observe(seconds);
}

void Metrics::observe_inter_token_latency(double seconds) {
  itl_window_.record(seconds, now_seconds());
  std::lock_guard<std::mutex> lock(mutex_);
  itl_.observe(seconds);
}

void Metrics::observe_e2e_latency(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  e2e_.observe(seconds);
}

void Metrics::observe_queue_time(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.observe(seconds);
}

namespace {

// The engine's gauges and counters at this scrape: sequences, KV pages and bytes, prefix cache.
void render_engine_load(const EngineLoad& load, std::string& out) {
  header(out, "strata:num_requests_running", "gauge", "Sequences holding KV pages.");
  sample(out, "strata:num_requests_running", "", static_cast<double>(load.running));
  header(out, "strata:num_requests_waiting", "gauge", "Sequences waiting for a slot.");
  sample(out, "strata:num_requests_waiting", "", static_cast<double>(load.waiting));
  header(out, "strata:kv_pages_used", "gauge", "KV cache pages in use.");
  sample(out, "strata:kv_pages_used", "", static_cast<double>(load.kv_pages_used));
  header(out, "strata:kv_pages_free", "gauge", "KV cache pages free.");
  sample(out, "strata:kv_pages_free", "",
         static_cast<double>(load.kv_pages_total - load.kv_pages_used));
  header(out, "strata:kv_cache_bytes", "gauge",
         "Bytes of the KV pages in use, by precision (tier).");
  for (const auto& [precision, bytes] : load.kv_bytes_by_precision) {
    sample(out, "strata:kv_cache_bytes", "precision=\"" + label_value(precision) + "\"",
           static_cast<double>(bytes));
  }
  header(out, "strata:kv_cache_positions", "gauge", "Token positions held in the KV cache.");
  sample(out, "strata:kv_cache_positions", "", static_cast<double>(load.kv_positions));
  header(out, "strata:kv_cache_bytes_per_token", "gauge",
         "KV bytes per held position (0 when empty).");
  sample(out, "strata:kv_cache_bytes_per_token", "",
         load.kv_positions
             ? static_cast<double>(load.kv_bytes_used) / static_cast<double>(load.kv_positions)
             : 0.0);
  header(out, "strata:kv_cache_compression_vs_f16", "gauge",
         "What the held positions would take in f16, over what they take (1 when empty).");
  sample(out, "strata:kv_cache_compression_vs_f16", "",
         load.kv_bytes_used
             ? static_cast<double>(load.kv_f16_bytes) / static_cast<double>(load.kv_bytes_used)
             : 1.0);
  header(out, "strata:prefix_cache_queries_total", "counter",
         "Prompt tokens looked up in the prefix cache (admitted sequences).");
  sample(out, "strata:prefix_cache_queries_total", "",
         static_cast<double>(load.prefix_cache_queries));
  header(out, "strata:prefix_cache_hits_total", "counter",
         "Prompt tokens found in the prefix cache, their keys and values not computed again.");
  sample(out, "strata:prefix_cache_hits_total", "", static_cast<double>(load.prefix_cache_hits));
  header(out, "strata:prefix_cache_pages", "gauge",
         "KV pages findable by their content (in use or free until reused).");
  sample(out, "strata:prefix_cache_pages", "", static_cast<double>(load.prefix_cache_pages));
  header(out, "strata:spec_decode_num_drafts_total", "counter",
         "Speculative decoding: verifications of at least one guessed token.");
  sample(out, "strata:spec_decode_num_drafts_total", "", static_cast<double>(load.spec_drafts));
  header(out, "strata:spec_decode_num_draft_tokens_total", "counter",
         "Speculative decoding: tokens guessed.");
  sample(out, "strata:spec_decode_num_draft_tokens_total", "",
         static_cast<double>(load.spec_draft_tokens));
  header(out, "strata:spec_decode_num_accepted_tokens_total", "counter",
         "Speculative decoding: guessed tokens the model confirmed.");
  sample(out, "strata:spec_decode_num_accepted_tokens_total", "",
         static_cast<double>(load.spec_accepted_tokens));
  header(out, "strata:spec_decode_num_accepted_tokens_per_pos_total", "counter",
         "Speculative decoding: confirmed guesses by their position in the draft (0: first).");
  for (size_t i = 0; i < load.spec_accepted_per_position.size(); ++i) {
    sample(out, "strata:spec_decode_num_accepted_tokens_per_pos_total",
           "position=\"" + std::to_string(i) + "\"",
           static_cast<double>(load.spec_accepted_per_position[i]));
  }
}

}  // namespace

std::string Metrics::render(const EngineLoad& load) const {
  std::string out;
  std::lock_guard<std::mutex> lock(mutex_);
  header(out, "strata:http_requests_total", "counter", "HTTP requests by endpoint and status.");
  for (const auto& [key, count] : requests_) {
    sample(
        out, "strata:http_requests_total",
        "endpoint=\"" + label_value(key.first) + "\",status=\"" + std::to_string(key.second) + "\"",
        static_cast<double>(count));
  }
  header(out, "strata:prompt_tokens_total", "counter", "Prompt tokens submitted to the engine.");
  sample(out, "strata:prompt_tokens_total", "", static_cast<double>(prompt_tokens_));
  header(out, "strata:generation_tokens_total", "counter", "Tokens generated.");
  sample(out, "strata:generation_tokens_total", "", static_cast<double>(generation_tokens_));

  header(out, "strata:time_to_first_token_seconds", "histogram",
         "Request arrival to its first generated token.");
  ttft_.render("strata:time_to_first_token_seconds", out);
  header(out, "strata:inter_token_latency_seconds", "histogram",
         "Time between consecutive tokens of one sequence.");
  itl_.render("strata:inter_token_latency_seconds", out);
  header(out, "strata:e2e_request_latency_seconds", "histogram",
         "Request arrival to its last token.");
  e2e_.render("strata:e2e_request_latency_seconds", out);
  header(out, "strata:request_queue_time_seconds", "histogram",
         "Request arrival to the end of the engine step that first schedules it.");
  queue_.render("strata:request_queue_time_seconds", out);

  render_engine_load(load, out);

  const double now = now_seconds();
  const std::string window = "window=\"" + std::to_string(ttft_window_.window_seconds()) + "s\"";
  header(out, "strata:time_to_first_token_window_seconds", "gauge",
         "Quantiles of time to first token over the sliding window.");
  for (double q : {0.5, 0.99}) {
    sample(out, "strata:time_to_first_token_window_seconds",
           "quantile=\"" + number(q) + "\"," + window, ttft_window_.quantile(q, now));
  }
  header(out, "strata:inter_token_latency_window_seconds", "gauge",
         "Quantiles of inter-token latency over the sliding window.");
  for (double q : {0.5, 0.99}) {
    sample(out, "strata:inter_token_latency_window_seconds",
           "quantile=\"" + number(q) + "\"," + window, itl_window_.quantile(q, now));
  }
  return out;
}

}  // namespace strata::server
