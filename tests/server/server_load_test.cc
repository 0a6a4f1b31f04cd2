// Many clients at once: batching must not change greedy output, a client that leaves frees its
// sequence, and a full queue refuses at once instead of making clients wait.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <chrono>

#include "test_server.h"

namespace strata::server::testing {
namespace {

using nlohmann::json;

struct StreamResult {
  int status = 0;
  std::vector<std::string> tokens;  // from the logprobs of each chunk
  std::string text;
  bool done = false;  // ended with [DONE]
};

// A greedy streamed completion with the token list taken from logprobs.
StreamResult stream_completion(const TestServer& server, const std::string& prompt,
                               int max_tokens) {
  json request = {{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0},
                  {"logprobs", 0},    {"stream", true},           {"ignore_eos", true}};
  auto res = server.client()->Post("/v1/completions", request.dump(), "application/json");
  StreamResult out;
  if (!res) return out;
  out.status = res->status;
  for (const std::string& event : sse_payloads(res->body)) {
    if (event == "[DONE]") {
      out.done = true;
      continue;
    }
    json chunk = json::parse(event);
    if (!chunk.contains("choices") || chunk["choices"].empty()) continue;
    const json& choice = chunk["choices"][0];
    out.text += choice["text"].get<std::string>();
    if (choice["logprobs"].is_object()) {
      for (const json& t : choice["logprobs"]["tokens"]) out.tokens.push_back(t);
    }
  }
  return out;
}

TEST(ServerLoad, EightConcurrentGreedyStreamsGetTheirSoloTokens) {
  TestServerConfig config;
  config.parallel = 8;
  TestServer server(config);
  ASSERT_TRUE(server.ok());
  const std::vector<std::string> prompts = {
      "Once upon a time",        "The little dog", "Lily wanted to",  "One day, Tom",
      "The sun was shining and", "Mom said that",  "There was a big", "Ben and his friend"};
  constexpr int kTokens = 40;
  std::vector<StreamResult> solo;
  for (const std::string& p : prompts) {
    solo.push_back(stream_completion(server, p, kTokens));
    ASSERT_EQ(solo.back().status, 200);
    ASSERT_EQ(solo.back().tokens.size(), static_cast<size_t>(kTokens));
  }
  std::vector<StreamResult> together(prompts.size());
  std::barrier start(static_cast<std::ptrdiff_t>(prompts.size()));
  std::vector<std::thread> clients;
  for (size_t i = 0; i < prompts.size(); ++i) {
    clients.emplace_back([&, i] {
      start.arrive_and_wait();
      together[i] = stream_completion(server, prompts[i], kTokens);
    });
  }
  for (std::thread& t : clients) t.join();
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(together[i].status, 200);
    EXPECT_TRUE(together[i].done);
    EXPECT_EQ(together[i].tokens, solo[i].tokens) << prompts[i];
    EXPECT_EQ(together[i].text, solo[i].text) << prompts[i];
  }
}

// Sends a raw HTTP request and returns the connected socket (or -1).
int send_raw(int port, const std::string& body) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  const std::string request =
      "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return -1;
  }
  return fd;
}

// Polls /metrics until `done` holds for the text; gives up after a generous bound so that a
// broken server fails the test instead of hanging it.
template <typename Done>
std::string poll_metrics(const TestServer& server, Done done) {
  auto client = server.client();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::string text;
  while (std::chrono::steady_clock::now() < give_up) {
    auto res = client->Get("/metrics");
    if (res) text = res->body;
    if (res && done(text)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return text;
}

TEST(ServerLoad, ADisconnectedClientFreesItsSequence) {
  TestServerConfig config;
  config.parallel = 2;
  config.context = 4096;
  TestServer server(config);
  ASSERT_TRUE(server.ok());
  constexpr int kMaxTokens = 4000;
  const int fd = send_raw(server.port(), json{{"prompt", "Once upon a time"},
                                              {"max_tokens", kMaxTokens},
                                              {"ignore_eos", true},
                                              {"stream", true}}
                                             .dump());
  ASSERT_GE(fd, 0);
  // Wait for the stream to be flowing, then leave.
  std::string received;
  char buf[4096];
  while (received.find("\"text\"") == std::string::npos) {
    const ssize_t n = read(fd, buf, sizeof buf);
    ASSERT_GT(n, 0);
    received.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  const std::string text = poll_metrics(server, [](const std::string& t) {
    return metric_value(t, "strata:num_requests_running") == 0 &&
           metric_value(t, "strata:kv_pages_used") == 0;
  });
  EXPECT_EQ(metric_value(text, "strata:num_requests_running"), 0);
  EXPECT_EQ(metric_value(text, "strata:kv_pages_used"), 0);
  // It stopped early: far fewer tokens than it asked for.
  EXPECT_LT(metric_value(text, "strata:generation_tokens_total"), kMaxTokens);
  // And the server still serves.
  auto res = server.client()->Post("/v1/completions", R"({"prompt": "Hi", "max_tokens": 2})",
                                   "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST(ServerLoad, PastMaxQueueRequestsGet503AtOnceAndAdmittedOnesComplete) {
  TestServerConfig config;
  config.parallel = 2;
  config.max_queue = 2;
  config.context = 2048;
  TestServer server(config);
  ASSERT_TRUE(server.ok());
  constexpr int kClients = 20;
  struct Outcome {
    int status = 0;
    std::string retry_after;
    bool done = false;
    int order = 0;      // when the response ended, relative to the others
    std::string error;  // no response: why
  };
  std::vector<Outcome> outcomes(kClients);
  std::atomic<int> finished{0};
  std::barrier start(kClients);
  std::vector<std::thread> clients;
  const std::string body = json{
      {"prompt", "Once upon a time"},
      {"max_tokens", 1500},
      {"ignore_eos", true},
      {"stream", true}}.dump();
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      auto client = server.client();
      start.arrive_and_wait();
      auto res = client->Post("/v1/completions", body, "application/json");
      outcomes[i].order = finished.fetch_add(1);
      if (!res) {
        outcomes[i].error = httplib::to_string(res.error());
        return;
      }
      outcomes[i].status = res->status;
      outcomes[i].retry_after = res->get_header_value("Retry-After");
      outcomes[i].done = res->body.size() >= 14 &&
                         res->body.compare(res->body.size() - 14, 14, "data: [DONE]\n\n") == 0;
    });
  }
  for (std::thread& t : clients) t.join();
  int admitted = 0, refused = 0, first_completion = kClients, last_refusal = -1;
  for (const Outcome& o : outcomes) {
    if (o.status == 200) {
      ++admitted;
      EXPECT_TRUE(o.done) << "every admitted stream completes";
      first_completion = std::min(first_completion, o.order);
    } else {
      EXPECT_EQ(o.status, 503) << o.error;
      EXPECT_EQ(o.retry_after, "1");
      ++refused;
      last_refusal = std::max(last_refusal, o.order);
    }
  }
  EXPECT_EQ(admitted + refused, kClients);
  EXPECT_GE(admitted, 4) << "2 running + 2 queued";
  EXPECT_GT(refused, 0);
  // Refusals do not wait for a slot: all of them come back before any admitted stream ends.
  EXPECT_LT(last_refusal, first_completion);
}

}  // namespace
}  // namespace strata::server::testing
