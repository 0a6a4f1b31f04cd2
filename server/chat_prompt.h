// The prompt of a chat request: its messages (and tools) rendered by the model's chat template
// and tokenized. Apart from the request decoder (openai_request.h), which needs no engine.
#pragma once

#include <string>
#include <vector>

#include "strata/chat.h"
#include "strata/engine.h"
#include "strata/result.h"

namespace strata::server {

// The chat prompt: `messages_json` rendered by the model's chat template with the generation
// prompt appended, tokenized with control tokens parsed. BOS is added unless the template
// wrote it.
// With `tools_json`, templates that render tools get them; for the others, a system message
// describing the tools and the call format goes first.
Result<std::vector<TokenId>> chat_prompt_tokens(const Engine& engine,
                                                const ChatTemplateSource& chat_template,
                                                const std::string& messages_json,
                                                const std::string& tools_json = "");

// Stop strings a template without end-of-turn tokens in the vocabulary needs (ChatML's).
std::vector<std::string> chat_template_stops(const ChatTemplateSource& chat_template);

}  // namespace strata::server
