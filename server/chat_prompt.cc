#include "server/chat_prompt.h"

#include <nlohmann/json.hpp>

#include "strata/tool_calls.h"

namespace strata::server {

using nlohmann::json;

// The messages with a system message about the tools first (merged into the conversation's
// own system message when it has one).
namespace {

Result<std::string> messages_with_tool_prompt(const ChatTemplateSource& chat_template,
                                              const std::string& messages_json,
                                              const std::string& tools_json) {
  STRATA_ASSIGN_OR_RETURN(
      std::string prompt,
      tool_system_prompt(detect_tool_call_format(chat_template.source), tools_json));
  json messages = json::parse(messages_json);
  if (!messages.empty() && messages[0]["role"] == "system") {
    messages[0]["content"] = messages[0]["content"].get<std::string>() + "\n\n" + prompt;
  } else {
    messages.insert(messages.begin(), json{{"role", "system"}, {"content", prompt}});
  }
  return messages.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

Result<std::vector<TokenId>> chat_prompt_tokens(const Engine& engine,
                                                const ChatTemplateSource& chat_template,
                                                const std::string& messages_json,
                                                const std::string& tools_json) {
  ChatRenderRequest render;
  render.messages_json = messages_json;
  if (!tools_json.empty()) {
    if (template_renders_tools(chat_template.source)) {
      render.tools_json = tools_json;
    } else {
      STRATA_ASSIGN_OR_RETURN(render.messages_json,
                              messages_with_tool_prompt(chat_template, messages_json, tools_json));
    }
  }
  render.add_generation_prompt = true;
  render.bos_token = chat_template.bos_token;
  render.eos_token = chat_template.eos_token;
  STRATA_ASSIGN_OR_RETURN(std::string prompt, render_chat_template(chat_template.source, render));
  // Templates that write the BOS text themselves must not get a second BOS.
  const bool has_bos = chat_template.bos_token && !chat_template.bos_token->empty() &&
                       prompt.rfind(*chat_template.bos_token, 0) == 0;
  return engine.tokenize(prompt, /*add_special=*/!has_bos, /*parse_special=*/true);
}

std::vector<std::string> chat_template_stops(const ChatTemplateSource& chat_template) {
  if (chat_template.is_default) return {"<|im_end|>", "<|im_start|>"};
  return {};
}

}  // namespace strata::server
