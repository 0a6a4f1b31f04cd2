// render_chat() builds the variables the way transformers' apply_chat_template does.
#include "chat/jinja/chat_template.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace strata::jinja {
namespace {

TEST(ChatContext, PassesToolsAndDocumentsAsNoneAndOmitsMissingTokens) {
  ChatTemplateInputs inputs;
  inputs.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
  inputs.add_generation_prompt = true;
  inputs.eos_token = "</s>";
  auto context = build_chat_context(inputs);
  EXPECT_EQ(context.dump(),
            R"({"messages":[{"role":"user","content":"hi"}],"tools":null,"documents":null,)"
            R"("add_generation_prompt":true,"eos_token":"</s>"})");
  auto out = render_chat(
      "{{ tools is defined }} {{ tools is none }} {{ documents is none }} {{ bos_token is defined "
      "}} "
      "{{ eos_token }} {{ add_generation_prompt }}",
      inputs, RenderOptions{});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, "True True True False </s> True");
}

TEST(ChatContext, ExtraKwargsOverrideAndReachTheTemplate) {
  ChatTemplateInputs inputs;
  inputs.extra =
      nlohmann::ordered_json::parse(R"({"enable_thinking": false, "add_generation_prompt": true})");
  auto out =
      render_chat("{{ enable_thinking }} {{ add_generation_prompt }}", inputs, RenderOptions{});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, "False True");
}

TEST(ChatContext, ShorthandPinsTheDate) {
  std::tm now{};
  now.tm_year = 2024 - 1900;
  now.tm_mon = 1;
  now.tm_mday = 29;
  auto out =
      render_chat("{{ bos_token }}{{ messages[0].content }} {{ strftime_now('%d %B %Y %a') }}",
                  nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"}])"), nullptr,
                  false, "<s>", std::nullopt, now);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, "<s>hi 29 February 2024 Thu");
}

TEST(ChatContext, RejectsMalformedInputs) {
  ChatTemplateInputs inputs;
  inputs.messages = nlohmann::ordered_json::object();
  EXPECT_FALSE(render_chat("x", inputs, RenderOptions{}).ok());
  inputs.messages = nlohmann::ordered_json::array();
  inputs.tools = "not a list";
  EXPECT_FALSE(render_chat("x", inputs, RenderOptions{}).ok());
  inputs.tools = nullptr;
  auto bad_template = render_chat("{% if %}", inputs, RenderOptions{});
  ASSERT_FALSE(bad_template.ok());
  EXPECT_EQ(bad_template.error().message.rfind("line 1: ", 0), 0u) << bad_template.error().message;
}

}  // namespace
}  // namespace strata::jinja
