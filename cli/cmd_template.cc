// strata template: render a chat template for a conversation.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "cli/common.h"
#include "strata/chat.h"

namespace strata::cli {
namespace {

struct TemplateFlags {
  std::string model;
  std::string template_file;
  std::string messages_file;
  std::string tools_file;
  bool add_generation_prompt = false;
  std::optional<std::string> bos, eos, now;
};

int render(const TemplateFlags& f) {
  ChatRenderRequest request;
  request.add_generation_prompt = f.add_generation_prompt;
  std::string source;
  if (!f.model.empty()) {
    Result<ChatTemplateSource> t = load_chat_template(f.model);
    if (!t.ok()) return report(t.error());
    source = t->source;
    request.bos_token = t->bos_token;
    request.eos_token = t->eos_token;
  } else {
    Result<std::string> text = read_file(f.template_file);
    if (!text.ok()) return report(text.error());
    source = *text;
  }
  if (f.bos) request.bos_token = f.bos;
  if (f.eos) request.eos_token = f.eos;
  request.now = f.now;
  Result<std::string> messages = read_file(f.messages_file);
  if (!messages.ok()) return report(messages.error());
  request.messages_json = *messages;
  if (!f.tools_file.empty()) {
    Result<std::string> tools = read_file(f.tools_file);
    if (!tools.ok()) return report(tools.error());
    request.tools_json = *tools;
  }
  Result<std::string> prompt = render_chat_template(source, request);
  if (!prompt.ok()) {
    // The template's own error (e.g. raise_exception) is the answer, not bad input to strata.
    std::fprintf(stderr, "error: %s\n", prompt.error().message.c_str());
    return kExitFailure;
  }
  std::fwrite(prompt->data(), 1, prompt->size(), stdout);
  return kExitOk;
}

}  // namespace

Command add_template_command(CLI::App& app) {
  auto f = std::make_shared<TemplateFlags>();
  CLI::App* sub = app.add_subcommand("template", "render a chat template for a conversation");
  auto* model =
      sub->add_option("-m,--model", f->model, "GGUF model whose tokenizer.chat_template to use");
  sub->add_option("--template", f->template_file, "a Jinja template file")->excludes(model);
  sub->add_option("--messages", f->messages_file, "JSON file with the messages array")->required();
  sub->add_option("--tools", f->tools_file, "JSON file with the tools array");
  sub->add_flag("--add-generation-prompt", f->add_generation_prompt,
                "end with the assistant's turn opening");
  sub->add_option("--bos-token", f->bos, "BOS token text (default: the model's)");
  sub->add_option("--eos-token", f->eos, "EOS token text (default: the model's)");
  sub->add_option("--now", f->now, "the time strftime_now() sees, \"YYYY-MM-DD HH:MM:SS\"");
  sub->callback([sub] {
    if (sub->count("--model") + sub->count("--template") != 1) {
      throw CLI::ValidationError("give exactly one of -m MODEL.gguf or --template FILE.jinja");
    }
  });
  return {sub, [f] { return render(*f); }};
}

}  // namespace strata::cli
