#include "server/openai_response.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace strata::server {
namespace {

using nlohmann::json;

ResponseHeader header(bool chat, bool include_usage = false) {
  ResponseHeader h = make_response_header(chat, "stories", include_usage);
  h.created = 1700000000;
  return h;
}

TEST(OpenAiResponse, IdsCarryTheApiPrefix) {
  EXPECT_EQ(make_response_header(true, "m", false).id.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(make_response_header(false, "m", false).id.rfind("cmpl-", 0), 0u);
  EXPECT_NE(make_response_header(true, "m", false).id, make_response_header(true, "m", false).id);
}

TEST(OpenAiResponse, ChatCompletionShape) {
  ResponseHeader h = header(true);
  ChoiceResult c{"Hello", FinishReason::kLength, true, {{"Hel", -0.5f, {{"Hel", -0.5f}}, 0}}, {}};
  json body = json::parse(completion_body(h, {c}, {3, 2, 0, std::nullopt}));
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["id"], h.id);
  EXPECT_EQ(body["created"], 1700000000);
  EXPECT_EQ(body["model"], "stories");
  EXPECT_EQ(body["choices"][0]["index"], 0);
  EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(body["choices"][0]["message"]["content"], "Hello");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  const json& lp = body["choices"][0]["logprobs"]["content"][0];
  EXPECT_EQ(lp["token"], "Hel");
  EXPECT_FLOAT_EQ(lp["logprob"].get<float>(), -0.5f);
  EXPECT_EQ(lp["bytes"], json::array({72, 101, 108}));
  EXPECT_EQ(lp["top_logprobs"][0]["token"], "Hel");
  EXPECT_EQ(body["usage"], json::parse(R"({"prompt_tokens": 3, "completion_tokens": 2,
      "total_tokens": 5, "prompt_tokens_details": {"cached_tokens": 0}})"));
}

TEST(OpenAiResponse, ToolCallsShape) {
  ResponseHeader h = header(true);
  ChoiceResult c{"", FinishReason::kStop, false, {}, {{"call_1", "add", R"({"a":1})"}}};
  json body = json::parse(completion_body(h, {c}, {3, 2, 0, std::nullopt}));
  const json& message = body["choices"][0]["message"];
  EXPECT_TRUE(message["content"].is_null());  // OpenAI: content null when only calls
  EXPECT_EQ(message["tool_calls"], json::parse(R"([{"id": "call_1", "type": "function",
      "function": {"name": "add", "arguments": "{\"a\":1}"}}])"));
  EXPECT_EQ(body["choices"][0]["finish_reason"], "tool_calls");

  const std::vector<ToolCallStream::CallDelta> pieces = {{0, true, "add", "{\"a\""},
                                                         {0, false, "", ":1}"}};
  json delta = json::parse(tool_call_deltas_chunk(h, 0, pieces, {"call_1"}))["choices"][0]["delta"];
  EXPECT_EQ(delta["tool_calls"], json::parse(R"([
      {"index": 0, "id": "call_1", "type": "function",
       "function": {"name": "add", "arguments": "{\"a\""}},
      {"index": 0, "function": {"arguments": ":1}"}}])"));
  EXPECT_EQ(
      json::parse(finish_chunk(h, 0, FinishReason::kStop, true))["choices"][0]["finish_reason"],
      "tool_calls");
}

TEST(OpenAiResponse, TextCompletionShape) {
  ChoiceResult c{
      "abc", FinishReason::kStop, true, {{"a", -1.0f, {{"a", -1.0f}, {"b", -2.0f}}, 0}}, {}};
  json body =
      json::parse(completion_body(header(false), {c, ChoiceResult{}}, {1, 1, 0, std::nullopt}));
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["choices"][0]["text"], "abc");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(body["choices"][0]["logprobs"]["tokens"], json::array({"a"}));
  EXPECT_EQ(body["choices"][0]["logprobs"]["top_logprobs"][0]["b"], -2.0);
  EXPECT_EQ(body["choices"][0]["logprobs"]["text_offset"], json::array({0}));
  EXPECT_TRUE(body["choices"][1]["logprobs"].is_null());
  EXPECT_TRUE(body["choices"][1]["finish_reason"].is_null());
  EXPECT_EQ(body["choices"][1]["index"], 1);
}

TEST(OpenAiResponse, ChatChunks) {
  ResponseHeader h = header(true, /*include_usage=*/true);
  json role = json::parse(role_chunk(h, 1));
  EXPECT_EQ(role["object"], "chat.completion.chunk");
  EXPECT_EQ(role["choices"][0]["index"], 1);
  EXPECT_EQ(role["choices"][0]["delta"]["role"], "assistant");
  EXPECT_TRUE(role["usage"].is_null());
  EXPECT_TRUE(role.contains("usage"));
  json text = json::parse(text_chunk(h, 0, "Hi", nullptr));
  EXPECT_EQ(text["choices"][0]["delta"], json::parse(R"({"content": "Hi"})"));
  EXPECT_TRUE(text["choices"][0]["finish_reason"].is_null());
  json finish = json::parse(finish_chunk(h, 0, FinishReason::kStop));
  EXPECT_EQ(finish["choices"][0]["delta"], json::object());
  EXPECT_EQ(finish["choices"][0]["finish_reason"], "stop");
  json usage = json::parse(usage_chunk(h, {4, 6, 2, std::nullopt}));
  EXPECT_EQ(usage["choices"], json::array());
  EXPECT_EQ(usage["usage"]["total_tokens"], 10);
  EXPECT_EQ(usage["usage"]["prompt_tokens_details"]["cached_tokens"], 2);
  EXPECT_FALSE(usage.contains("timings"));
  // llama-server's timings beside the usage: 2 of 4 prompt tokens computed in 10 ms, 6 tokens
  // generated, the 5 after the first in 50 ms.
  json timed = json::parse(usage_chunk(h, {4, 6, 2, Timings{10.0, 50.0}}));
  EXPECT_EQ(timed["timings"]["prompt_n"], 2);
  EXPECT_EQ(timed["timings"]["cache_n"], 2);
  EXPECT_DOUBLE_EQ(timed["timings"]["prompt_per_token_ms"].get<double>(), 5.0);
  EXPECT_EQ(timed["timings"]["predicted_n"], 6);
  EXPECT_DOUBLE_EQ(timed["timings"]["predicted_per_second"].get<double>(), 100.0);
  EXPECT_EQ(sse_event("{}"), "data: {}\n\n");
}

TEST(OpenAiResponse, InvalidUtf8IsReplacedNotFatal) {
  json body = json::parse(text_chunk(header(false), 0, std::string("a\xff", 2), nullptr));
  EXPECT_EQ(body["choices"][0]["text"], "a\xEF\xBF\xBD");
}

}  // namespace
}  // namespace strata::server
