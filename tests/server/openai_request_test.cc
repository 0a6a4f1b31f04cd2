#include "server/openai_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace strata::server {
namespace {

CompletionRequest chat_ok(const std::string& body) {
  auto r = parse_chat_request(body);
  EXPECT_TRUE(std::holds_alternative<CompletionRequest>(r))
      << std::get<RequestError>(r).error.message;
  return std::holds_alternative<CompletionRequest>(r) ? std::get<CompletionRequest>(r)
                                                      : CompletionRequest{};
}

RequestError chat_error(const std::string& body) {
  auto r = parse_chat_request(body);
  EXPECT_TRUE(std::holds_alternative<RequestError>(r)) << body;
  return std::holds_alternative<RequestError>(r) ? std::get<RequestError>(r) : RequestError{};
}

const std::string kMessages = R"("messages": [{"role": "user", "content": "Hi"}])";

TEST(OpenAiRequest, ReadsEverySamplingField) {
  CompletionRequest r = chat_ok("{" + kMessages + R"(, "model": "m", "max_tokens": 7,
      "temperature": 0.5, "top_p": 0.9, "seed": 42, "stop": ["a", "b"], "presence_penalty": 1,
      "frequency_penalty": -1, "logit_bias": {"5": -100, "17": 2.5}, "logprobs": true,
      "top_logprobs": 3, "n": 2, "stream": true, "stream_options": {"include_usage": true},
      "user": "u", "top_k": 5, "min_p": 0.1, "repeat_penalty": 1.1, "unknown_field": [1]})");
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.max_tokens, 7);
  const SamplingOptions& s = r.generation.sampling;
  EXPECT_FLOAT_EQ(s.temperature, 0.5f);
  EXPECT_FLOAT_EQ(s.top_p, 0.9f);
  EXPECT_TRUE(r.seeded);
  EXPECT_EQ(s.seed, 42u);
  EXPECT_EQ(r.generation.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_FLOAT_EQ(s.presence_penalty, 1.0f);
  EXPECT_FLOAT_EQ(s.frequency_penalty, -1.0f);
  EXPECT_EQ(s.logit_bias, (std::map<TokenId, float>{{5, -100.0f}, {17, 2.5f}}));
  EXPECT_TRUE(r.generation.logprobs);
  EXPECT_EQ(r.generation.top_logprobs, 3);
  EXPECT_EQ(r.n, 2);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(s.top_k, 5);
  EXPECT_FLOAT_EQ(s.min_p, 0.1f);
  EXPECT_FLOAT_EQ(s.repeat_penalty, 1.1f);
}

TEST(OpenAiRequest, MaxCompletionTokensAndNullsAreAccepted) {
  CompletionRequest r = chat_ok(
      "{" + kMessages + R"(, "max_completion_tokens": 9, "temperature": null, "stop": null})");
  EXPECT_EQ(r.max_tokens, 9);
  EXPECT_FLOAT_EQ(r.generation.sampling.temperature, SamplingOptions{}.temperature);
  EXPECT_FALSE(chat_ok("{" + kMessages + "}").max_tokens.has_value());
}

TEST(OpenAiRequest, TypeErrorsNameTheField) {
  RequestError e = chat_error("{" + kMessages + R"(, "temperature": "hot"})");
  EXPECT_EQ(e.param, "temperature");
  EXPECT_EQ(e.error.message, "'temperature' must be a number");
  EXPECT_EQ(e.error.code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(chat_error("{" + kMessages + R"(, "max_tokens": 1.5})").param, "max_tokens");
  EXPECT_EQ(chat_error("{" + kMessages + R"(, "max_tokens": 1e300})").param, "max_tokens");
  EXPECT_EQ(chat_error("{" + kMessages + R"(, "n": 0})").param, "n");
  EXPECT_EQ(chat_error("{" + kMessages + R"(, "stream": 1})").param, "stream");
  EXPECT_EQ(chat_error("{" + kMessages + R"(, "stop": [1]})").param, "stop");
  EXPECT_EQ(chat_error("{" + kMessages + R"(, "logit_bias": {"x": 1}})").param, "logit_bias");
  EXPECT_EQ(chat_error("{" + kMessages + R"(, "top_logprobs": 2})").param, "top_logprobs");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "user", "content": 5}]})").param,
            "messages[0].content");
  EXPECT_EQ(chat_error(R"({"max_tokens": 3})").param, "messages");
  EXPECT_EQ(chat_error("not json").param, "");
  EXPECT_EQ(chat_error("[1]").error.message, "the request body must be a JSON object");
}

TEST(OpenAiRequest, SparseAttentionIsAnExtension) {
  CompletionRequest r = chat_ok("{" + kMessages + R"(, "attn": "sparse", "attn_budget": 1024,
      "attn_window": 64, "attn_sinks": 0})");
  const SparseAttentionOverride& a = r.generation.attention;
  EXPECT_EQ(a.enabled, true);
  EXPECT_EQ(a.budget, 1024);
  EXPECT_EQ(a.window, 64);
  EXPECT_EQ(a.sinks, 0);
  EXPECT_TRUE(chat_ok("{" + kMessages + "}").generation.attention.empty());
  EXPECT_EQ(chat_ok("{" + kMessages + R"(, "attn": "dense"})").generation.attention.enabled, false);
  RequestError e = chat_error("{" + kMessages + R"(, "attn": "sometimes"})");
  EXPECT_EQ(e.param, "attn");
  EXPECT_NE(e.error.message.find("\"dense\" or \"sparse\""), std::string::npos);
  EXPECT_EQ(chat_error("{" + kMessages + R"(, "attn": 1})").param, "attn");
  EXPECT_EQ(chat_error("{" + kMessages + R"(, "attn_budget": 0})").param, "attn_budget");
  EXPECT_EQ(chat_error("{" + kMessages + R"(, "attn_window": "x"})").param, "attn_window");
  EXPECT_EQ(chat_error("{" + kMessages + R"(, "attn_sinks": -1})").param, "attn_sinks");
}

TEST(OpenAiRequest, CacheSaltIsAStringExtension) {
  EXPECT_EQ(chat_ok("{" + kMessages + R"(, "cache_salt": "tenant-a"})").generation.cache_salt,
            "tenant-a");
  EXPECT_EQ(chat_ok("{" + kMessages + "}").generation.cache_salt, "");
  EXPECT_EQ(chat_error("{" + kMessages + R"(, "cache_salt": 5})").param, "cache_salt");
}

TEST(OpenAiRequest, SpeculativeIsAnExtensionInLlamaServersWords) {
  CompletionRequest r =
      chat_ok("{" + kMessages + R"(, "speculative": {"type": "ngram", "n_max": 4}})");
  EXPECT_EQ(r.generation.speculation, SpeculationKind::kNgram);
  EXPECT_EQ(r.generation.max_draft, 4);
  r = chat_ok("{" + kMessages + R"(, "speculative": {"type": "none"}})");
  EXPECT_EQ(r.generation.speculation, SpeculationKind::kNone);
  EXPECT_FALSE(r.generation.max_draft.has_value());
  EXPECT_FALSE(chat_ok("{" + kMessages + "}").generation.speculation.has_value());
  EXPECT_EQ(chat_error("{" + kMessages + R"(, "speculative": 3})").param, "speculative");
  EXPECT_EQ(chat_error("{" + kMessages + R"(, "speculative": {"type": "eagle"}})").param,
            "speculative.type");
  EXPECT_EQ(chat_error("{" + kMessages + R"(, "speculative": {"n_max": 99}})").param,
            "speculative.n_max");
}

TEST(OpenAiRequest, ContentPartsAreJoinedAndDeveloperIsSystem) {
  CompletionRequest r = chat_ok(R"({"messages": [
      {"role": "developer", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hello, "},
                                    {"type": "text", "text": "world"}]}]})");
  nlohmann::json messages = nlohmann::json::parse(r.messages_json);
  EXPECT_EQ(messages, nlohmann::json::parse(R"([{"role": "system", "content": "Be brief."},
                                               {"role": "user", "content": "Hello, world"}])"));
  RequestError image = chat_error(
      R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})");
  EXPECT_EQ(image.error.code, ErrorCode::kUnsupported);
}

TEST(OpenAiRequest, ResponseFormatAndGrammarBecomeConstraints) {
  EXPECT_EQ(chat_ok("{" + kMessages + R"(, "response_format": {"type": "json_object"}})")
                .generation.constraint.kind,
            ConstraintKind::kJsonObject);
  CompletionRequest schema = chat_ok("{" + kMessages + R"(, "response_format": {"type":
      "json_schema", "json_schema": {"name": "x", "schema": {"type": "integer"}}}})");
  EXPECT_EQ(schema.generation.constraint.kind, ConstraintKind::kJsonSchema);
  EXPECT_EQ(nlohmann::json::parse(schema.generation.constraint.text),
            nlohmann::json::parse(R"({"type": "integer"})"));
  CompletionRequest grammar = chat_ok("{" + kMessages + R"(, "grammar": "root ::= \"a\""})");
  EXPECT_EQ(grammar.generation.constraint.kind, ConstraintKind::kGrammar);
  EXPECT_EQ(grammar.generation.constraint.text, "root ::= \"a\"");
  EXPECT_EQ(chat_ok("{" + kMessages + R"(, "response_format": {"type": "text"}})")
                .generation.constraint.kind,
            ConstraintKind::kNone);
  // strata's extension: JSON Schema formats as annotations; asserted unless asked.
  EXPECT_EQ(schema.generation.constraint.formats, FormatPolicy::kAssert);
  const std::string format = "{" + kMessages + R"(, "response_format": {"type": "json_schema",
      "json_schema": {"schema": {"type": "string", "format": "email"}}}, "json_schema_formats": )";
  EXPECT_EQ(chat_ok(format + R"("annotate"})").generation.constraint.formats,
            FormatPolicy::kAnnotate);
  EXPECT_EQ(chat_error(format + R"("loose"})").error.code, ErrorCode::kInvalidArgument);
}

TEST(OpenAiRequest, CompletionPromptsInEveryShape) {
  auto parse = [](const std::string& prompt) {
    auto r = parse_completion_request(R"({"prompt": )" + prompt + "}");
    EXPECT_TRUE(std::holds_alternative<CompletionRequest>(r)) << prompt;
    return std::holds_alternative<CompletionRequest>(r) ? std::get<CompletionRequest>(r).prompts
                                                        : std::vector<PromptInput>{};
  };
  std::vector<PromptInput> p = parse(R"("Once")");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].text, "Once");
  p = parse(R"(["a", "b"])");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].text, "b");
  p = parse("[1, 2, 3]");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].tokens, (std::vector<TokenId>{1, 2, 3}));
  p = parse("[[1], [4, 5]]");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].tokens, (std::vector<TokenId>{4, 5}));
  for (const char* bad : {"5", "[]", "[-1]", "[1.5]", R"(["a", 1])", "[[]]", "{}"}) {
    auto r = parse_completion_request(std::string(R"({"prompt": )") + bad + "}");
    ASSERT_TRUE(std::holds_alternative<RequestError>(r)) << bad;
    EXPECT_EQ(std::get<RequestError>(r).param, "prompt") << bad;
  }
}

TEST(OpenAiRequest, CompletionLogprobsIsACount) {
  auto r = parse_completion_request(R"({"prompt": "x", "logprobs": 3})");
  ASSERT_TRUE(std::holds_alternative<CompletionRequest>(r));
  EXPECT_TRUE(std::get<CompletionRequest>(r).generation.logprobs);
  EXPECT_EQ(std::get<CompletionRequest>(r).generation.top_logprobs, 3);
  auto bad = parse_completion_request(R"({"prompt": "x", "logprobs": 6})");
  ASSERT_TRUE(std::holds_alternative<RequestError>(bad));
  EXPECT_EQ(std::get<RequestError>(bad).param, "logprobs");
}

TEST(OpenAiRequest, TokenizeAndDetokenize) {
  auto t =
      parse_tokenize_request(R"({"content": "hi", "add_special": false, "with_pieces": true})");
  ASSERT_TRUE(std::holds_alternative<TokenizeRequest>(t));
  EXPECT_EQ(std::get<TokenizeRequest>(t).content, "hi");
  EXPECT_FALSE(std::get<TokenizeRequest>(t).add_special);
  EXPECT_TRUE(std::get<TokenizeRequest>(t).with_pieces);
  EXPECT_TRUE(std::holds_alternative<RequestError>(parse_tokenize_request("{}")));
  auto d = parse_detokenize_request(R"({"tokens": [1, 2]})");
  ASSERT_TRUE(std::holds_alternative<DetokenizeRequest>(d));
  EXPECT_EQ(std::get<DetokenizeRequest>(d).tokens, (std::vector<TokenId>{1, 2}));
  EXPECT_TRUE(
      std::holds_alternative<RequestError>(parse_detokenize_request(R"({"tokens": [-3]})")));
}

}  // namespace
}  // namespace strata::server
