// A soak: mixed chat, JSON-schema and tool requests, streamed and not, from clients that leave
// mid-answer or send their requests slowly, for STRATA_SOAK_SECONDS (60 by default; CI runs 300).
// A normal client keeps asking throughout. At the end the server must hold what it held after
// warm-up (RSS within 10%), free every KV page once idle, and have answered the normal client with
// a p99 latency within 2x of what it saw on the quiet server.
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
void load_client(int port, uint64_t seed, const std::atomic<bool>& stop, std::atomic<int>& errors) {
  std::mt19937_64 rng(seed);
  const std::vector<json> mix = request_mix();
  while (!stop) {
    const json& body = mix[rng() % mix.size()];
    const std::string bytes = post_bytes(body);
    RawConnection c(port);
    const uint64_t behaviour = rng() % 4;
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
    // Think time: the load keeps the engine busy without queueing the normal client behind it.
    std::this_thread::sleep_for(std::chrono::milliseconds(50 + rng() % 100));
  }
}

// Latencies of short completions, one at a time, until `stop` (or `count` of them).
std::vector<double> probe(const TestServer& server, const std::atomic<bool>& stop, size_t count,
                          std::atomic<int>& errors) {
  auto client = server.client();
  std::vector<double> ms;
  while (!stop && ms.size() < count) {
    const auto start = Clock::now();
    auto res =
        client->Post("/v1/completions", R"({"prompt":"Hi","max_tokens":4})", "application/json");
    if (!res || res->status != 200) ++errors;
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    std::this_thread::sleep_for(50ms);
  }
  return ms;
}

double p99(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, v.size() * 99 / 100)];
}

TEST(ServerSoak, MixedHostileTrafficLeavesNothingBehind) {
  TestServerConfig config;
  config.parallel = 8;  // the six load clients and the normal one each have a slot
  config.max_queue = 16;
  config.context = 512;
  TestServer server(config);
  ASSERT_TRUE(server.ok());
  std::atomic<int> errors{0};
  std::atomic<bool> never{false};
  const double quiet_p99 = p99(probe(server, never, 100, errors));

  const auto duration = std::chrono::duration<double>(soak_seconds());
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (uint64_t i = 0; i < 6; ++i) {
    clients.emplace_back([&, i] { load_client(server.port(), 1234 + i, stop, errors); });
  }
  std::vector<double> loaded;
  std::thread prober([&] { loaded = probe(server, stop, SIZE_MAX, errors); });

  std::this_thread::sleep_for(duration / 5);
  const size_t warm_rss = rss_bytes();
  size_t peak_rss = warm_rss;
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(duration * 4 / 5);
  while (Clock::now() < end) {
    peak_rss = std::max(peak_rss, rss_bytes());
    std::this_thread::sleep_for(500ms);
  }
  const size_t end_rss = rss_bytes();
  stop = true;
  for (std::thread& t : clients) t.join();
  prober.join();

  EXPECT_EQ(errors.load(), 0);
  EXPECT_LT(static_cast<double>(end_rss), 1.10 * static_cast<double>(warm_rss))
      << "RSS after warm-up " << warm_rss << ", at the end " << end_rss << ", peak " << peak_rss;
  const double loaded_p99 = p99(loaded);
  EXPECT_LT(loaded_p99, 2.0 * std::max(quiet_p99, 5.0))
      << "quiet p99 " << quiet_p99 << " ms, under load " << loaded_p99 << " ms over "
      << loaded.size() << " probes";
  // Idle again: every sequence has ended and every page is free.
  std::string text;
  for (int i = 0; i < 1000; ++i) {
    auto m = server.client()->Get("/metrics");
    if (m) text = m->body;
    if (metric_value(text, "strata:kv_pages_used") == 0 &&
        metric_value(text, "strata:num_requests_running") == 0) {
      break;
    }
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(metric_value(text, "strata:kv_pages_used"), 0);
  EXPECT_EQ(metric_value(text, "strata:num_requests_running"), 0);
  std::printf(
      "soak: %.0f s, quiet p99 %.1f ms, loaded p99 %.1f ms (%zu probes), RSS warm %zu MB,"
      " end %zu MB, peak %zu MB\n",
      soak_seconds(), quiet_p99, loaded_p99, loaded.size(), warm_rss >> 20, end_rss >> 20,
      peak_rss >> 20);
}

}  // namespace
}  // namespace strata::server::testing
