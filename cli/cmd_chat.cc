// strata chat: an interactive conversation in the terminal, using the model's chat template.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "cli/commands.h"
#include "cli/common.h"
#include "strata/chat.h"

namespace strata::cli {
namespace {

// Set by Ctrl-C; the token callback reads it to stop the current answer.
std::atomic<bool> g_interrupted{false};

void on_sigint(int) { g_interrupted.store(true); }

// Without SA_RESTART a Ctrl-C at the prompt interrupts the read instead of killing strata.
void install_sigint_handler() {
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
}

struct ChatFlags {
  EngineOptions engine;
  SamplingOptions sampling;
  std::string chat_template;  // --chat-template: replaces the model's
  int n_predict = 512;
  std::optional<uint64_t> seed;
  std::string system;
};

int chat(ChatFlags f) {
  int code = kExitOk;
  std::unique_ptr<Engine> engine = load_engine(f.engine, code);
  if (!engine) return code;
  Result<ChatTemplateSource> tmpl = load_chat_template(f.engine.model_path, f.chat_template);
  if (!tmpl.ok()) return report(tmpl.error());

  install_sigint_handler();

  std::fprintf(
      stderr,
      "strata chat: %s (%s template). /clear starts over, /exit leaves, Ctrl-C stops an answer.\n",
      engine->model().name.empty() ? f.engine.model_path.c_str() : engine->model().name.c_str(),
      !f.chat_template.empty() ? f.chat_template.c_str()
      : tmpl->is_default       ? "ChatML"
                               : "model's");
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!f.system.empty()) messages.push_back({{"role", "system"}, {"content", f.system}});
  const size_t n_system = messages.size();
  std::mt19937_64 seeds(f.seed.value_or(std::random_device{}()));

  for (;;) {
    std::printf("\n> ");
    std::fflush(stdout);
    std::string line;
    g_interrupted.store(false);
    if (!std::getline(std::cin, line)) {
      if (g_interrupted.load()) {  // Ctrl-C at the prompt: the read failed with EINTR; go on
        std::clearerr(stdin);
        std::cin.clear();
        std::printf("\n(type /exit to leave)");
        continue;
      }
      std::printf("\n");
      return kExitOk;
    }
    if (line == "/exit" || line == "/quit") return kExitOk;
    if (line == "/clear") {
      messages.erase(messages.begin() + static_cast<long>(n_system), messages.end());
      std::printf("(conversation cleared)");
      continue;
    }
    if (line.empty()) continue;
    messages.push_back({{"role", "user"}, {"content", line}});

    Result<ChatPrompt> prompt = chat_prompt(*tmpl, messages.dump());
    if (!prompt.ok()) {
      std::fprintf(stderr, "error: the chat template failed: %s\n", prompt.error().message.c_str());
      messages.erase(messages.end() - 1);
      continue;
    }
    GenerationRequest request;
    request.prompt = engine->tokenize(prompt->text, prompt->add_bos, /*parse_special=*/true);
    request.max_tokens = max_tokens_for(f.n_predict, *engine);
    request.sampling = f.sampling;
    request.sampling.seed = seeds();
    request.stop = chat_template_stops(*tmpl);

    std::string answer;
    g_interrupted.store(false);
    Result<GenerationStats> stats = engine->generate(request, [&](const TokenEvent& e) {
      std::fwrite(e.text.data(), 1, e.text.size(), stdout);
      std::fflush(stdout);
      answer += e.text;
      return !g_interrupted.load();
    });
    if (!stats.ok()) {
      std::fprintf(stderr, "\nerror: %s (try /clear)\n", stats.error().message.c_str());
      messages.erase(messages.end() - 1);
      continue;
    }
    if (stats->finish == FinishReason::kError) {
      std::fprintf(stderr, "\nerror: %s (try /clear)\n", stats->error.c_str());
      messages.erase(messages.end() - 1);
      continue;
    }
    if (stats->finish == FinishReason::kCancelled) std::printf(" [stopped]");
    messages.push_back({{"role", "assistant"}, {"content", answer}});
  }
}

}  // namespace

Command add_chat_command(CLI::App& app) {
  auto f = std::make_shared<ChatFlags>();
  CLI::App* sub = app.add_subcommand("chat", "chat with a model in the terminal");
  add_model_flags(*sub, f->engine);
  add_speculative_flags(*sub, f->engine.speculative);
  // Each turn resends the whole conversation: its earlier turns come from the prefix cache.
  f->engine.prefix_cache.enabled = true;
  sub->add_flag("--no-prefix-cache{false}", f->engine.prefix_cache.enabled,
                "compute the whole conversation again at every turn");
  add_n_predict_option(*sub, f->n_predict, "tokens per answer at most");
  add_sampling_flags(*sub, f->sampling);
  add_chat_template_option(*sub, f->chat_template);
  sub->add_option("--seed", f->seed, "sampling seed (default: random)");
  sub->add_option("--system,--system-prompt", f->system,
                  "a system message opening the conversation");
  sub->add_flag_callback(
      "--conversation", [] {}, "llama.cpp's -cnv: what chat always does");
  return {sub, [f] { return chat(*f); }};
}

}  // namespace strata::cli
