// The routes and response shapes of an in-process server on stories260K.
#include <gtest/gtest.h>

#include <regex>

#include "test_server.h"

namespace strata::server::testing {
namespace {

using nlohmann::json;

const char* kJson = "application/json";

TEST(ServerHttp, HealthIs503WhileLoadingThen200) {
  TestServerConfig config;
  config.start_worker = false;
  TestServer server(config);
  auto client = server.client();
  auto loading = client->Get("/health");
  ASSERT_TRUE(loading);
  EXPECT_EQ(loading->status, 503);
  EXPECT_EQ(loading->get_header_value("Retry-After"), "1");
  auto chat = client->Post("/v1/chat/completions",
                           R"({"messages": [{"role": "user", "content": "Hi"}]})", kJson);
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->status, 503);
  server.start_worker();
  ASSERT_TRUE(server.ok());
  auto ready = client->Get("/health");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  EXPECT_EQ(json::parse(ready->body)["status"], "ok");
}

TEST(ServerHttp, ChatCompletion) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  auto res = server.client()->Post(
      "/v1/chat/completions",
      R"({"model": "x", "messages": [{"role": "user", "content": "Tell a story"}],
          "max_tokens": 12, "temperature": 0})",
      kJson);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  json body = json::parse(res->body);
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["model"], "stories");
  EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
  EXPECT_FALSE(body["choices"][0]["message"]["content"].get<std::string>().empty());
  const std::string finish = body["choices"][0]["finish_reason"];
  EXPECT_TRUE(finish == "stop" || finish == "length") << finish;
  EXPECT_GT(body["usage"]["prompt_tokens"].get<int>(), 0);
  EXPECT_LE(body["usage"]["completion_tokens"].get<int>(), 12);
  EXPECT_EQ(
      body["usage"]["total_tokens"].get<int>(),
      body["usage"]["prompt_tokens"].get<int>() + body["usage"]["completion_tokens"].get<int>());
}

TEST(ServerHttp, ChatStreamIsOpenAiChunksEndingWithDone) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  auto res = server.client()->Post(
      "/v1/chat/completions",
      R"({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 10, "temperature": 0,
          "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}})",
      kJson);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/event-stream");
  std::vector<std::string> events = sse_payloads(res->body);
  ASSERT_GE(events.size(), 4u) << res->body;
  EXPECT_EQ(events.back(), "[DONE]");
  json first = json::parse(events[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  std::string finish;
  for (size_t i = 1; i + 2 < events.size(); ++i) {
    json chunk = json::parse(events[i]);
    EXPECT_EQ(chunk["id"], first["id"]);
    EXPECT_TRUE(chunk["usage"].is_null());
    const json& choice = chunk["choices"][0];
    if (choice["delta"].contains("content")) text += choice["delta"]["content"].get<std::string>();
    if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
  }
  EXPECT_EQ(finish, "length");
  EXPECT_FALSE(text.empty());
  json usage = json::parse(events[events.size() - 2]);
  EXPECT_EQ(usage["choices"], json::array());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 10);
}

TEST(ServerHttp, CompletionsWithChoicesAndLogprobs) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  auto res = server.client()->Post(
      "/v1/completions",
      R"({"prompt": "Once upon a time", "max_tokens": 6, "temperature": 0, "n": 2,
          "logprobs": 2, "ignore_eos": true})",
      kJson);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  json body = json::parse(res->body);
  EXPECT_EQ(body["object"], "text_completion");
  ASSERT_EQ(body["choices"].size(), 2u);
  // Greedy: both choices are the same text.
  EXPECT_EQ(body["choices"][0]["text"], body["choices"][1]["text"]);
  const json& lp = body["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 6u);
  std::string joined;
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0);
    ASSERT_EQ(lp["top_logprobs"][i].size(), 2u);
    // Greedy picks the most likely token, so it is the best alternative.
    double best = -1e30;
    for (auto& [token, value] : lp["top_logprobs"][i].items())
      best = std::max(best, value.get<double>());
    EXPECT_NEAR(lp["token_logprobs"][i].get<double>(), best, 1e-5);
    joined += lp["tokens"][i].get<std::string>();
  }
  EXPECT_EQ(body["usage"]["completion_tokens"], 12);
}

TEST(ServerHttp, ModelsTokenizeDetokenizeAndPage) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  auto client = server.client();
  auto models = client->Get("/v1/models");
  ASSERT_TRUE(models);
  json list = json::parse(models->body);
  EXPECT_EQ(list["object"], "list");
  EXPECT_EQ(list["data"][0]["id"], "stories");
  EXPECT_EQ(list["data"][0]["object"], "model");

  auto tokens =
      client->Post("/tokenize", R"({"content": "Once upon a time", "add_special": false})", kJson);
  ASSERT_TRUE(tokens);
  ASSERT_EQ(tokens->status, 200) << tokens->body;
  json ids = json::parse(tokens->body)["tokens"];
  EXPECT_GT(ids.size(), 1u);
  auto text = client->Post("/detokenize", json{{"tokens", ids}}.dump(), kJson);
  ASSERT_TRUE(text);
  // SentencePiece models prefix the text with a space when they tokenize it.
  const std::string round_trip = json::parse(text->body)["content"];
  EXPECT_TRUE(round_trip == "Once upon a time" || round_trip == " Once upon a time") << round_trip;

  auto page = client->Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("<"), std::string::npos);
  EXPECT_EQ(page->get_header_value("Content-Type").rfind("text/html", 0), 0u);
}

TEST(ServerHttp, TimeoutEndsTheStreamWithAnErrorChunk) {
  TestServerConfig config;
  config.context = 4096;
  config.timeout_s = 0.2;
  TestServer server(config);
  ASSERT_TRUE(server.ok());
  auto res = server.client()->Post(
      "/v1/completions",
      R"({"prompt": "Once", "max_tokens": 4000, "ignore_eos": true, "stream": true})", kJson);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  std::vector<std::string> events = sse_payloads(res->body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  json error = json::parse(events[events.size() - 2]);
  ASSERT_TRUE(error.contains("error")) << events[events.size() - 2];
  EXPECT_NE(error["error"]["message"].get<std::string>().find("--timeout"), std::string::npos);
}

// The exposition format's line grammar: comments, or `name{label="value",...} number`.
TEST(ServerHttp, MetricsParseAsPrometheusText) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  auto client = server.client();
  ASSERT_TRUE(client->Post("/v1/completions",
                           R"({"prompt": "Once", "max_tokens": 5, "ignore_eos": true})", kJson));
  auto res = client->Get("/metrics");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u);
  const std::regex help(R"(# HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*)");
  const std::regex type(
      R"(# TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (counter|gauge|histogram|summary|untyped))");
  const std::regex sample(
      R"([a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\.)*"(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\.)*")*\})? (-?[0-9.eE+-]+|\+Inf|-Inf|NaN))");
  size_t n_samples = 0;
  std::istringstream lines(res->body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("# HELP", 0) == 0) {
      EXPECT_TRUE(std::regex_match(line, help)) << line;
    } else if (line.rfind("# TYPE", 0) == 0) {
      EXPECT_TRUE(std::regex_match(line, type)) << line;
    } else {
      EXPECT_TRUE(std::regex_match(line, sample)) << line;
      ++n_samples;
    }
  }
  EXPECT_GT(n_samples, 50u);
  const std::string& text = res->body;
  EXPECT_EQ(metric_value(text, "strata:generation_tokens_total"), 5);
  EXPECT_GT(metric_value(text, "strata:prompt_tokens_total"), 0);
  EXPECT_EQ(metric_value(text, "strata:time_to_first_token_seconds_count"), 1);
  EXPECT_EQ(metric_value(text, "strata:inter_token_latency_seconds_count"), 4);
  EXPECT_EQ(metric_value(text, "strata:e2e_request_latency_seconds_count"), 1);
  EXPECT_EQ(metric_value(text, "strata:request_queue_time_seconds_count"), 1);
  EXPECT_GT(metric_value(text, "strata:kv_pages_free"), 0);
  // An f16 cache holds what f16 holds, whether or not the request's pages are freed yet.
  EXPECT_EQ(metric_value(text, "strata:kv_cache_compression_vs_f16"), 1);
  EXPECT_GT(metric_value(text, "strata:time_to_first_token_window_seconds"), 0);
  // Requests are counted once their response is written, which may be just after the client
  // has read it, and the running gauge is sampled after each engine step, which may end just
  // after that: poll.
  const std::string counted =
      "strata:http_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 1";
  std::string scrape = text;
  auto settled = [&] {
    return scrape.find(counted) != std::string::npos &&
           metric_value(scrape, "strata:num_requests_running") == 0;
  };
  for (int i = 0; i < 1000 && !settled(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    auto again = client->Get("/metrics");
    if (again) scrape = again->body;
  }
  EXPECT_NE(scrape.find(counted), std::string::npos);
  EXPECT_EQ(metric_value(scrape, "strata:num_requests_running"), 0);
}

}  // namespace
}  // namespace strata::server::testing
