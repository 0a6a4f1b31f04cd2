#include "chat/jinja/chat_template.h"

#include <string>
#include <utility>

#include "chat/jinja/template.h"
#include "strata/json_depth.h"

namespace strata::jinja {
namespace {

// Caller JSON is copied (and copies recurse once per level) before the template sees it.
Status check_depth(const char* what, const nlohmann::ordered_json& json) {
  if (!json_deeper_than(json, kMaxJsonDepth)) return ok_status();
  const std::string limit = std::to_string(kMaxJsonDepth);
  return make_error(ErrorCode::kInvalidArgument,
                    std::string("the chat ") + what + " nest deeper than " + limit +
                        " levels of arrays and objects; send flatter JSON");
}

}  // namespace

nlohmann::ordered_json build_chat_context(const ChatTemplateInputs& inputs) {
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  context["messages"] = inputs.messages;
  context["tools"] = inputs.tools;
  context["documents"] = inputs.documents;
  context["add_generation_prompt"] = inputs.add_generation_prompt;
  if (inputs.bos_token) context["bos_token"] = *inputs.bos_token;
  if (inputs.eos_token) context["eos_token"] = *inputs.eos_token;
  if (inputs.extra.is_object())
    for (const auto& [key, value] : inputs.extra.items()) context[key] = value;
  return context;
}

Result<std::string> render_chat(std::string_view template_source, const ChatTemplateInputs& inputs,
                                const RenderOptions& options) {
  if (!inputs.messages.is_array())
    return make_error(ErrorCode::kInvalidArgument,
                      "chat messages must be a JSON array of message objects");
  if (!inputs.tools.is_null() && !inputs.tools.is_array())
    return make_error(ErrorCode::kInvalidArgument, "chat tools must be a JSON array or null");
  STRATA_RETURN_IF_ERROR(check_depth("messages", inputs.messages));
  STRATA_RETURN_IF_ERROR(check_depth("tools", inputs.tools));
  STRATA_RETURN_IF_ERROR(check_depth("documents", inputs.documents));
  STRATA_RETURN_IF_ERROR(check_depth("template arguments", inputs.extra));
  STRATA_ASSIGN_OR_RETURN(Template tmpl, Template::parse(template_source));
  return tmpl.render(build_chat_context(inputs), options);
}

Result<std::string> render_chat(std::string_view template_source,
                                const nlohmann::ordered_json& messages,
                                const nlohmann::ordered_json& tools, bool add_generation_prompt,
                                std::optional<std::string> bos_token,
                                std::optional<std::string> eos_token, std::optional<std::tm> now) {
  // Checked before the copies below, which recurse.
  STRATA_RETURN_IF_ERROR(check_depth("messages", messages));
  STRATA_RETURN_IF_ERROR(check_depth("tools", tools));
  ChatTemplateInputs inputs;
  inputs.messages = messages;
  inputs.tools = tools;
  inputs.add_generation_prompt = add_generation_prompt;
  inputs.bos_token = std::move(bos_token);
  inputs.eos_token = std::move(eos_token);
  RenderOptions options;
  options.now = now;
  return render_chat(template_source, inputs, options);
}

}  // namespace strata::jinja
