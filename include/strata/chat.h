// Chat templates: turning a conversation into the prompt a model was trained on.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/result.h"

namespace strata {

// A model's chat template and the special-token texts templates refer to.
struct ChatTemplateSource {
  std::string source;                    // Jinja text (tokenizer.chat_template), or ChatML
  bool is_default = false;               // the model has none: ChatML is used
  std::optional<std::string> bos_token;  // e.g. "<s>"; unset when the model has no BOS
  std::optional<std::string> eos_token;
};

// The ChatML template, for models that carry no template of their own.
std::string chatml_template();

// Reads the template and special tokens of a GGUF file without loading its weights.
Result<ChatTemplateSource> load_chat_template(const std::string& model_path);

// The same, with the template replaced when `replacement` is set (llama.cpp's --chat-template):
// "chatml", or the path of a Jinja file. The file must render a two-message conversation, so a
// broken template is refused here, not at the first request.
Result<ChatTemplateSource> load_chat_template(const std::string& model_path,
                                              const std::string& replacement);

struct ChatRenderRequest {
  std::string messages_json = "[]";  // OpenAI-style messages: [{"role", "content"}, ...]
  std::string tools_json;            // optional array of tool definitions
  bool add_generation_prompt = false;
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  std::optional<std::string> now;  // "YYYY-MM-DD HH:MM:SS" for strftime_now(); unset: the clock
};

// Renders a template as Hugging Face transformers' apply_chat_template does. Errors (including
// the template's own raise_exception messages) come back as kInvalidArgument.
Result<std::string> render_chat_template(std::string_view template_source,
                                         const ChatRenderRequest& request);

// The prompt of a chat request, as `strata chat` and the server's chat completions build it.
struct ChatPrompt {
  std::string text;  // tokenize with control tokens parsed
  // False when the template wrote the BOS text itself: it must not get a second BOS.
  bool add_bos = true;
};

// `messages_json` rendered by the model's chat template with the generation prompt appended.
// With `tools_json` (an OpenAI tools array), templates that render tools get them; for the
// others, a system message describing the tools and the call format goes first (merged into the
// conversation's own system message when it has one).
Result<ChatPrompt> chat_prompt(const ChatTemplateSource& chat_template,
                               const std::string& messages_json,
                               const std::string& tools_json = "");

// Stop strings a template without end-of-turn tokens in the vocabulary needs (ChatML's).
std::vector<std::string> chat_template_stops(const ChatTemplateSource& chat_template);

}  // namespace strata
