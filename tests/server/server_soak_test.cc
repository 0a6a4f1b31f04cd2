// A soak: mixed chat, JSON-schema and tool requests, streamed and not, for STRATA_SOAK_SECONDS
// (60 by default; CI runs 300). The first 40% of the time every client behaves; for the rest the
// same clients also leave mid-answer and send their requests slowly. A normal client keeps asking
// throughout. The hostile part must cost it little (p99 within 2x of the well-behaved part, for a
// completion and for a plain GET), the server must hold what it held after warm-up (RSS within
// 10%), and every KV page must be free once it is idle. Comparing the two parts of one run, not
// the load against an idle server, separates what hostile clients cost from what sharing the
// engine with other requests costs.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "raw_client.h"
#include "test_server.h"

namespace strata::server::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

size_t rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      size_t kb = 0;
      status >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

double soak_seconds() {
  const char* s = std::getenv("STRATA_SOAK_SECONDS");
  return s ? std::atof(s) : 60.0;
}

// The requests of the mix; each is a chat body.
std::vector<json> request_mix() {
  const json hi = json::array({{{"role", "user"}, {"content", "Tell me a story."}}});
  const json schema = {
      {"type", "object"},
      {"properties",
       {{"name", {{"type", "string"}, {"maxLength", 8}}}, {"age", {{"type", "integer"}}}}},
      {"required", {"name", "age"}}};
  const json tools = json::array({{{"type", "function"},
                                   {"function",
                                    {{"name", "get_weather"},
                                     {"parameters",
                                      {{"type", "object"},
                                       {"properties", {{"city", {{"type", "string"}}}}},
                                       {"required", {"city"}}}}}}}});
  return {
      {{"messages", hi}, {"max_tokens", 24}},
      {{"messages", hi}, {"max_tokens", 48}, {"stream", true}},
      {{"messages", hi},
       {"max_tokens", 40},
       {"response_format",
        {{"type", "json_schema"}, {"json_schema", {{"name", "p"}, {"schema", schema}}}}}},
      {{"messages", hi}, {"max_tokens", 40}, {"tools", tools}, {"tool_choice", "required"}},
      {{"messages", hi}, {"max_tokens", 40}, {"tools", tools}, {"stream", true}},
  };
}

std::string post_bytes(const json& body) {
  const std::string text = body.dump();
  return "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         "Content-Length: " +
         std::to_string(text.size()) + "\r\n\r\n" + text;
}

// One load client: picks a request and a behaviour at random, again and again.
void load_client(int port, uint64_t seed, const std::atomic<bool>& stop,
                 const std::atomic<bool>& hostile, std::atomic<int>& errors) {
  std::mt19937_64 rng(seed);
  const std::vector<json> mix = request_mix();
  while (!stop) {
    const json& body = mix[rng() % mix.size()];
    const std::string bytes = post_bytes(body);
    RawConnection c(port);
    const uint64_t behaviour = hostile ? rng() % 4 : 2;
    if (behaviour == 0) {  // leaves mid-answer
      c.send(bytes);
      c.receive(std::chrono::milliseconds(rng() % 40));
    } else {
      if (behaviour == 1) {  // sends its request in slow pieces, within the head deadline
        const size_t piece = bytes.size() / 4 + 1;
        for (size_t at = 0; at < bytes.size(); at += piece) {
          c.send(bytes.substr(at, piece));
          std::this_thread::sleep_for(100ms);
        }
      } else {
        c.send(bytes);
      }
      const std::string answer = c.receive(30s, body.value("stream", false) ? "[DONE]" : "}}");
      const int status = status_of(answer);
      if (status != 200) {
        ++errors;
        std::fprintf(stderr, "load client got %d: %s\n", status, answer.substr(0, 300).c_str());
      }
    }
    // Think time: the engine stays busy well short of saturation, where any shared server's
    // latency grows without bound whoever the clients are.
    std::this_thread::sleep_for(std::chrono::milliseconds(200 + rng() % 400));
  }
}

struct Sample {
  Clock::time_point at;
  double ms;
};

// One request after another until `stop` (or `count` of them), timed: a short completion, or
// GET `path` when it is given.
std::vector<Sample> probe(const TestServer& server, const std::atomic<bool>& stop, size_t count,
                          std::atomic<int>& errors, const char* path = nullptr) {
  auto client = server.client();
  std::vector<Sample> samples;
  while (!stop && samples.size() < count) {
    const auto start = Clock::now();
    auto res = path ? client->Get(path)
                    : client->Post("/v1/completions", R"({"prompt":"Hi","max_tokens":4})",
                                   "application/json");
    if (!res || res->status != 200) ++errors;
    samples.push_back(
        {start, std::chrono::duration<double, std::milli>(Clock::now() - start).count()});
    std::this_thread::sleep_for(20ms);
  }
  return samples;
}

// The 99th percentile of the samples taken in [from, to).
double p99(const std::vector<Sample>& samples, Clock::time_point from = Clock::time_point::min(),
           Clock::time_point to = Clock::time_point::max()) {
  std::vector<double> ms;
  for (const Sample& s : samples) {
    if (s.at >= from && s.at < to) ms.push_back(s.ms);
  }
  std::sort(ms.begin(), ms.end());
  return ms.empty() ? 0 : ms[std::min(ms.size() - 1, ms.size() * 99 / 100)];
}

TEST(ServerSoak, MixedHostileTrafficLeavesNothingBehind) {
  TestServerConfig config;
  config.parallel = 8;  // every load client and the normal one have a slot
  config.max_queue = 16;
  config.context = 512;
  TestServer server(config);
  ASSERT_TRUE(server.ok());
  std::atomic<int> errors{0};
  std::atomic<bool> never{false};
  const double idle_p99 = p99(probe(server, never, 100, errors));

  const auto duration =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(soak_seconds()));
  std::atomic<bool> stop{false}, hostile{false};
  std::vector<std::thread> threads;
  for (uint64_t i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] { load_client(server.port(), 1234 + i, stop, hostile, errors); });
  }
  std::vector<Sample> completions, gets;
  threads.emplace_back([&] { completions = probe(server, stop, SIZE_MAX, errors); });
  threads.emplace_back([&] { gets = probe(server, stop, SIZE_MAX, errors, "/v1/models"); });

  const auto start = Clock::now();
  std::this_thread::sleep_for(duration / 5);
  const size_t warm_rss = rss_bytes();
  std::this_thread::sleep_for(duration / 5);
  const auto turn = Clock::now();
  hostile = true;
  size_t peak_rss = warm_rss;
  while (Clock::now() < turn + duration * 3 / 5) {
    peak_rss = std::max(peak_rss, rss_bytes());
    std::this_thread::sleep_for(500ms);
  }
  const size_t end_rss = rss_bytes();
  stop = true;
  for (std::thread& t : threads) t.join();

  EXPECT_EQ(errors.load(), 0);
  EXPECT_LT(static_cast<double>(end_rss), 1.10 * static_cast<double>(warm_rss))
      << "RSS after warm-up " << warm_rss << ", at the end " << end_rss << ", peak " << peak_rss;
  const double calm_completion = p99(completions, start, turn);
  const double hostile_completion = p99(completions, turn);
  const double calm_get = p99(gets, start, turn);
  const double hostile_get = p99(gets, turn);
  // A floor of 5 ms: below it the machine's scheduling noise is the whole figure.
  EXPECT_LT(hostile_completion, 2.0 * std::max(calm_completion, 5.0))
      << "completion p99: well-behaved load " << calm_completion << " ms, hostile "
      << hostile_completion << " ms";
  EXPECT_LT(hostile_get, 2.0 * std::max(calm_get, 5.0))
      << "GET p99: well-behaved load " << calm_get << " ms, hostile " << hostile_get << " ms";
  // Idle again: every sequence has ended and every page is free.
  const std::string text = wait_until_idle(server);
  EXPECT_EQ(metric_value(text, "strata:kv_pages_used"), 0);
  EXPECT_EQ(metric_value(text, "strata:num_requests_running"), 0);
  std::printf(
      "soak: %.0f s; completion p99: idle %.1f ms, well-behaved load %.1f ms, hostile %.1f ms "
      "(%zu probes); GET p99: well-behaved %.1f ms, hostile %.1f ms; RSS warm %zu MB, end %zu MB, "
      "peak %zu MB\n",
      soak_seconds(), idle_p99, calm_completion, hostile_completion, completions.size(), calm_get,
      hostile_get, warm_rss >> 20, end_rss >> 20, peak_rss >> 20);
}

}  // namespace
}  // namespace strata::server::testing
