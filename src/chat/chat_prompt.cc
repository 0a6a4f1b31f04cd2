// The public chat API (strata/chat.h) over the Jinja interpreter (chat/jinja/).
#include <ctime>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "chat/jinja/chat_template.h"
#include "gguf/gguf.h"
#include "strata/chat.h"
#include "strata/json_depth.h"
#include "strata/tool_calls.h"
#include "tokenizer/tokenizer.h"

namespace strata {
namespace {

// Refuses text nested past kMaxJsonDepth before parsing: the parsed document is copied and
// dumped on the way into the template, and both recurse once per level.
Result<nlohmann::ordered_json> parse_json(const std::string& text, const char* what) {
  if (json_nesting_depth(text) > kMaxJsonDepth) {
    return make_error(ErrorCode::kInvalidArgument,
                      std::string(what) + " nest deeper than " + std::to_string(kMaxJsonDepth) +
                          " levels of arrays and objects; send flatter JSON");
  }
  nlohmann::ordered_json value =
      nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    return make_error(ErrorCode::kInvalidArgument, std::string(what) + " is not valid JSON");
  }
  return value;
}

Result<std::tm> parse_time(const std::string& text) {
  std::tm tm{};
  if (std::sscanf(text.c_str(), "%d-%d-%d %d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6) {
    return make_error(ErrorCode::kInvalidArgument,
                      "time '" + text + "' is not in the form YYYY-MM-DD HH:MM:SS");
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  std::tm copy = tm;
  std::mktime(&copy);  // fills in the weekday and day of the year
  tm.tm_wday = copy.tm_wday;
  tm.tm_yday = copy.tm_yday;
  return tm;
}

// The messages with a system message about the tools first (merged into the conversation's
// own system message when it has one).
Result<std::string> messages_with_tool_prompt(const ChatTemplateSource& chat_template,
                                              const std::string& messages_json,
                                              const std::string& tools_json) {
  using nlohmann::json;
  STRATA_ASSIGN_OR_RETURN(
      std::string prompt,
      tool_system_prompt(detect_tool_call_format(chat_template.source), tools_json));
  json messages = json::parse(messages_json, nullptr, /*allow_exceptions=*/false);
  if (!messages.is_array()) {
    return make_error(ErrorCode::kInvalidArgument, "the messages must be a JSON array");
  }
  if (!messages.empty() && messages[0]["role"] == "system") {
    messages[0]["content"] = messages[0]["content"].get<std::string>() + "\n\n" + prompt;
  } else {
    messages.insert(messages.begin(), json{{"role", "system"}, {"content", prompt}});
  }
  return messages.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::string chatml_template() {
  return "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
         "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}"
         "{{ '<|im_start|>assistant\\n' }}{% endif %}";
}

Result<ChatTemplateSource> load_chat_template(const std::string& model_path) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<gguf::File> file, gguf::File::open(model_path));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<tokenizer::Tokenizer> tok,
                          tokenizer::Tokenizer::from_gguf(*file));
  ChatTemplateSource out;
  if (std::optional<std::string> source = file->get_string("tokenizer.chat_template")) {
    out.source = *source;
  } else {
    out.source = chatml_template();
    out.is_default = true;
  }
  if (tok->bos() >= 0) out.bos_token = tok->token_text(tok->bos());
  if (tok->eos() >= 0) out.eos_token = tok->token_text(tok->eos());
  return out;
}

Result<ChatTemplateSource> load_chat_template(const std::string& model_path,
                                              const std::string& replacement) {
  STRATA_ASSIGN_OR_RETURN(ChatTemplateSource out, load_chat_template(model_path));
  if (replacement.empty()) return out;
  if (replacement == "chatml") {
    out.source = chatml_template();
    out.is_default = true;  // ChatML's stop strings, as for a model without a template
    return out;
  }
  std::ifstream in(replacement, std::ios::binary);
  if (!in) {
    return make_error(ErrorCode::kNotFound, "chat template '" + replacement +
                                                "': no such file (give 'chatml' or the path of "
                                                "a Jinja template file)");
  }
  out.source.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  out.is_default = false;
  ChatRenderRequest probe;
  probe.messages_json =
      R"([{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}])";
  probe.add_generation_prompt = true;
  probe.bos_token = out.bos_token;
  probe.eos_token = out.eos_token;
  if (Result<std::string> r = render_chat_template(out.source, probe); !r.ok()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "chat template '" + replacement + "' does not render: " + r.error().message);
  }
  return out;
}

Result<std::string> render_chat_template(std::string_view template_source,
                                         const ChatRenderRequest& request) {
  jinja::ChatTemplateInputs inputs;
  STRATA_ASSIGN_OR_RETURN(inputs.messages, parse_json(request.messages_json, "the messages"));
  if (!inputs.messages.is_array()) {
    return make_error(ErrorCode::kInvalidArgument, "the messages must be a JSON array");
  }
  if (!request.tools_json.empty()) {
    STRATA_ASSIGN_OR_RETURN(inputs.tools, parse_json(request.tools_json, "the tools"));
  }
  inputs.add_generation_prompt = request.add_generation_prompt;
  inputs.bos_token = request.bos_token;
  inputs.eos_token = request.eos_token;
  jinja::RenderOptions options;
  if (request.now) {
    STRATA_ASSIGN_OR_RETURN(std::tm now, parse_time(*request.now));
    options.now = now;
  }
  return jinja::render_chat(template_source, inputs, options);
}

Result<ChatPrompt> chat_prompt(const ChatTemplateSource& chat_template,
                               const std::string& messages_json, const std::string& tools_json) {
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
  ChatPrompt prompt;
  STRATA_ASSIGN_OR_RETURN(prompt.text, render_chat_template(chat_template.source, render));
  // An empty BOS text starts every string, and says nothing about whether the template wrote it.
  prompt.add_bos = !(chat_template.bos_token && !chat_template.bos_token->empty() &&
                     prompt.text.rfind(*chat_template.bos_token, 0) == 0);
  return prompt;
}

std::vector<std::string> chat_template_stops(const ChatTemplateSource& chat_template) {
  if (chat_template.is_default) return {"<|im_end|>", "<|im_start|>"};
  return {};
}

}  // namespace strata
