// Streamed tool calls: whatever the chunking, the deltas add up to what parse_tool_calls gives
// for the whole reply, content never carries call markup, and a call's name comes first.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "strata/tool_calls.h"

namespace strata {
namespace {

struct Streamed {
  std::string content;
  std::vector<ToolCall> calls;
  size_t deltas = 0;
};

// Feeds `reply` in chunks of 1..max_chunk bytes and folds the deltas as an OpenAI client does.
Streamed stream(ToolCallFormat format, std::string_view reply, size_t max_chunk, uint32_t seed) {
  std::mt19937 rng(seed);
  ToolCallStream s(format);
  Streamed out;
  auto fold = [&](const ToolCallStream::Delta& d) {
    out.deltas += !d.empty();
    out.content += d.content;
    for (const ToolCallStream::CallDelta& c : d.calls) {
      if (c.first) {
        EXPECT_EQ(c.index, out.calls.size()) << "calls begin in order, once";
        out.calls.push_back({"", c.name, ""});
        EXPECT_FALSE(c.name.empty());
      }
      EXPECT_LT(c.index, out.calls.size()) << "arguments before the name";
      if (c.index < out.calls.size()) out.calls[c.index].arguments += c.arguments;
    }
  };
  for (size_t i = 0; i < reply.size();) {
    const size_t n = std::uniform_int_distribution<size_t>(1, max_chunk)(rng);
    fold(s.push(reply.substr(i, n)));
    i += n;
  }
  fold(s.finish());
  return out;
}

void expect_streams_like_whole(ToolCallFormat format, std::string_view reply) {
  const ParsedReply whole = parse_tool_calls(format, reply);
  for (size_t max_chunk : {1, 3, 7, 1000}) {
    for (uint32_t seed = 1; seed <= 3; ++seed) {
      SCOPED_TRACE(testing::Message() << "chunks up to " << max_chunk << ", seed " << seed);
      const Streamed got = stream(format, reply, max_chunk, seed);
      EXPECT_EQ(got.content, whole.content) << reply;
      ASSERT_EQ(got.calls.size(), whole.tool_calls.size()) << reply;
      for (size_t i = 0; i < got.calls.size(); ++i) {
        EXPECT_EQ(got.calls[i].name, whole.tool_calls[i].name);
        EXPECT_EQ(nlohmann::json::parse(got.calls[i].arguments, nullptr, false),
                  nlohmann::json::parse(whole.tool_calls[i].arguments))
            << got.calls[i].arguments;
      }
      if (whole.tool_calls.empty()) continue;
      for (const char* markup : {"<tool_call>", "</tool_call>", "[TOOL_CALLS]", "\"name\""}) {
        EXPECT_EQ(got.content.find(markup), std::string::npos) << markup;
      }
    }
  }
}

TEST(ToolCallStreamTest, HermesCallsAndText) {
  expect_streams_like_whole(
      ToolCallFormat::kHermes,
      "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Par\\\"is}\", \"days\": [1, 2, {\"x\": null}]}}\n</tool_call>\n<tool_call>\n{\"name\": "
      "\"get_time\", \"arguments\": {}}\n</tool_call>");
  expect_streams_like_whole(ToolCallFormat::kHermes, "Just text, with a < sign and <tool.");
  expect_streams_like_whole(ToolCallFormat::kHermes,
                            "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"n\": 12.5e3}}\n"
                            "</tool_call>");
}

TEST(ToolCallStreamTest, EachFamilysFormat) {
  expect_streams_like_whole(ToolCallFormat::kLlama3,
                            R"({"name": "search", "parameters": {"q": "cats", "limit": 3}})");
  expect_streams_like_whole(ToolCallFormat::kLlama3,
                            R"(<|python_tag|>{"name": "search", "parameters": {"q": "x"}})");
  expect_streams_like_whole(ToolCallFormat::kLlama3, "The answer is 42.");
  expect_streams_like_whole(
      ToolCallFormat::kMistral,
      R"([TOOL_CALLS][{"name": "a", "arguments": {"k": [true]}}, {"name": "b", "arguments": {}}])");
  expect_streams_like_whole(ToolCallFormat::kMistral, "No tools needed.");
  expect_streams_like_whole(
      ToolCallFormat::kGeneric,
      R"({"tool_calls": [{"name": "f", "arguments": {"s": "]}\\"}}, {"name": "g", "arguments": {"v": -1}}]})");
  expect_streams_like_whole(ToolCallFormat::kGeneric,
                            "{\t \"tool_calls\" :[{\"name\"\n: \"f\",\"arguments\":\n {}}]}");
  expect_streams_like_whole(ToolCallFormat::kGeneric, "{ not json");
  expect_streams_like_whole(ToolCallFormat::kGeneric, R"({"answer": 42})");
}

// Arguments flow while they are generated, not in one piece at the end.
TEST(ToolCallStreamTest, ArgumentsArriveIncrementally) {
  const std::string reply =
      "<tool_call>\n{\"name\": \"write\", \"arguments\": {\"text\": \"a fairly long argument "
      "value that arrives over many tokens\"}}\n</tool_call>";
  ToolCallStream s(ToolCallFormat::kHermes);
  size_t argument_deltas = 0;
  for (size_t i = 0; i < reply.size(); i += 4) {
    for (const auto& c : s.push(reply.substr(i, 4)).calls) argument_deltas += !c.arguments.empty();
  }
  EXPECT_GT(argument_deltas, 10u);
}

}  // namespace
}  // namespace strata
