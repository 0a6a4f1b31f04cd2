// The public chat-template API: model templates, ChatML fallback, input errors.
#include "strata/chat.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(ChatTemplateTest, ModelWithoutTemplateGetsChatML) {
  Result<ChatTemplateSource> t = load_chat_template("../shared/models/stories260K.gguf");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_TRUE(t->is_default);
  EXPECT_EQ(t->bos_token, "<s>");
  ChatRenderRequest r;
  r.messages_json = R"([{"role": "user", "content": "Hi"}])";
  r.add_generation_prompt = true;
  Result<std::string> out = render_chat_template(t->source, r);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, ModelTemplateIsRead) {
  Result<ChatTemplateSource> t =
      load_chat_template("../shared/testdata/vocab/ggml-vocab-phi-3.gguf");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_FALSE(t->is_default);
  ChatRenderRequest r;
  r.messages_json = R"([{"role": "user", "content": "Hi"}])";
  r.add_generation_prompt = true;
  r.bos_token = t->bos_token;
  Result<std::string> out = render_chat_template(t->source, r);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_NE(out->find("<|user|>\nHi<|end|>\n<|assistant|>\n"), std::string::npos) << *out;
}

TEST(ChatTemplateTest, PinnedTimeReachesStrftimeNow) {
  ChatRenderRequest r;
  r.now = "2024-07-26 10:30:00";
  Result<std::string> out = render_chat_template("{{ strftime_now('%d %b %Y %A') }}", r);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, "26 Jul 2024 Friday");
}

TEST(ChatTemplateTest, BadInputIsAnError) {
  ChatRenderRequest r;
  r.messages_json = "[{";
  EXPECT_FALSE(render_chat_template("{{ messages }}", r).ok());
  r.messages_json = "{}";
  EXPECT_FALSE(render_chat_template("{{ messages }}", r).ok());
  r.messages_json = "[]";
  r.now = "yesterday";
  EXPECT_FALSE(render_chat_template("{{ messages }}", r).ok());
  r.now.reset();
  Result<std::string> raised = render_chat_template("{{ raise_exception('no system role') }}", r);
  ASSERT_FALSE(raised.ok());
  EXPECT_NE(raised.error().message.find("no system role"), std::string::npos);
  EXPECT_FALSE(load_chat_template("/nonexistent.gguf").ok());
}

TEST(ChatTemplateTest, JsonNestedPastTheLimitIsRefused) {
  // Ten times kMaxJsonDepth (512): the parsed document would be copied and dumped recursively.
  const std::string deep = std::string(5120, '[') + std::string(5120, ']');
  ChatRenderRequest r;
  r.messages_json = R"([{"role": "user", "content": )" + deep + "}]";
  Result<std::string> out = render_chat_template("{{ messages }}", r);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().message,
            "the messages nest deeper than 512 levels of arrays and objects; send flatter JSON");

  // An assistant's tool-call arguments 60k objects deep once crashed the server.
  std::string arguments;
  for (int i = 0; i < 60'000; ++i) arguments += R"({"a": )";
  arguments += "1" + std::string(60'000, '}');
  r.messages_json = R"([{"role": "assistant", "tool_calls": [{"type": "function", "function": )"
                    R"({"name": "f", "arguments": )" +
                    arguments + "}}]}]";
  out = render_chat_template("{{ messages[0].tool_calls[0].function.arguments | tojson }}", r);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message.find("the messages nest deeper than 512"), std::string::npos)
      << out.error().message;

  r.messages_json = "[]";
  r.tools_json = "[" + deep + "]";
  out = render_chat_template("{{ tools }}", r);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message.find("the tools nest deeper than 512"), std::string::npos)
      << out.error().message;
}

TEST(ChatTemplateTest, NestedJsonWithinTheLimitRenders) {
  ChatRenderRequest r;
  r.messages_json =
      R"([{"role": "assistant", "tool_calls": [{"function": {"arguments": {"a": [[1]]}}}]}])";
  Result<std::string> out =
      render_chat_template("{{ messages[0].tool_calls[0].function.arguments | tojson }}", r);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, R"({"a": [[1]]})");
}

}  // namespace
}  // namespace strata
