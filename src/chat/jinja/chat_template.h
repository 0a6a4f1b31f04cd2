// Renders a model's chat template the way transformers' apply_chat_template does.
#pragma once

#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "chat/jinja/render_options.h"

namespace strata::jinja {

struct ChatTemplateInputs {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;      // array of tool schemas, or null (passed as None)
  nlohmann::ordered_json documents;  // array of documents, or null (passed as None)
  bool add_generation_prompt = false;
  // Special tokens are passed only when the model defines them (special_tokens_map omits unset
  // ones), so a template can test `bos_token is defined`.
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  // Extra template kwargs (enable_thinking, reasoning_effort, ...), a JSON object; may be null.
  nlohmann::ordered_json extra;
};

// The variables apply_chat_template passes: messages, tools, documents, add_generation_prompt,
// then the special tokens, then the extra kwargs (which override earlier names).
nlohmann::ordered_json build_chat_context(const ChatTemplateInputs& inputs);

Result<std::string> render_chat(std::string_view template_source, const ChatTemplateInputs& inputs,
                                const RenderOptions& options);

// Shorthand with the common inputs; `now` pins strftime_now() (nullopt = the current time).
Result<std::string> render_chat(std::string_view template_source,
                                const nlohmann::ordered_json& messages,
                                const nlohmann::ordered_json& tools, bool add_generation_prompt,
                                std::optional<std::string> bos_token,
                                std::optional<std::string> eos_token, std::optional<std::tm> now);

}  // namespace strata::jinja
