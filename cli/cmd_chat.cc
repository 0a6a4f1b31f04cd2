// strata chat: an interactive conversation in the terminal, using the model's chat template: an
// editable prompt with history (cli/line_reader.h), commands (/help), old turns dropped when the
// context fills, and each answer's speed.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/line_reader.h"
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

constexpr const char* kHelp =
    "/help       this list\n"
    "/clear      start the conversation over (the system message stays)\n"
    "/save FILE  write the conversation as JSON ({\"messages\": [...]})\n"
    "/load FILE  continue a conversation /save wrote\n"
    "/exit       leave (also /quit, Ctrl-D)\n"
    "Ctrl-C stops an answer; up and down recall earlier lines.";

using Messages = nlohmann::ordered_json;

Status save_messages(const Messages& messages, const std::string& path) {
  std::ofstream out(path);
  out << nlohmann::ordered_json{{"messages", messages}}.dump(2) << "\n";
  if (!out) return make_error(ErrorCode::kInternal, "cannot write " + path);
  return ok_status();
}

// The messages of a /save file, or of a bare array of {"role", "content"} objects.
Result<Messages> load_messages(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(const std::string text, read_file(path));
  Messages j = Messages::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("messages")) j = j["messages"];
  if (!j.is_array()) {
    return make_error(ErrorCode::kInvalidArgument,
                      path +
                          " holds no conversation (a JSON array of messages, or /save's "
                          "{\"messages\": [...]})");
  }
  for (const auto& m : j) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string()) {
      return make_error(ErrorCode::kInvalidArgument,
                        path + ": every message needs a string role and content");
    }
  }
  return j;
}

// The prompt of the conversation, its oldest turns dropped (after the system message) until it
// leaves `room` tokens for the answer; `dropped` counts the messages let go. An error when the
// newest message alone does not fit.
Result<std::vector<TokenId>> fit_prompt(const Engine& engine, const ChatTemplateSource& tmpl,
                                        Messages& messages, size_t n_system, size_t room,
                                        size_t& dropped) {
  const size_t context = engine.model().context;
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(ChatPrompt prompt, chat_prompt(tmpl, messages.dump()));
    std::vector<TokenId> tokens =
        engine.tokenize(prompt.text, prompt.add_bos, /*parse_special=*/true);
    if (tokens.size() + room <= context) return tokens;
    if (messages.size() <= n_system + 1) {
      return make_error(ErrorCode::kOutOfRange,
                        "the message is " + std::to_string(tokens.size()) +
                            " tokens with its template; the context of " + std::to_string(context) +
                            " leaves room for " +
                            std::to_string(context > room ? context - room : 0) +
                            ": shorten it or raise -c");
    }
    // A turn is the user's message and the answer after it.
    const auto first = messages.begin() + static_cast<long>(n_system);
    const long n = messages.size() > n_system + 2 && (*(first + 1))["role"] == "assistant" ? 2 : 1;
    messages.erase(first, first + n);
    dropped += static_cast<size_t>(n);
  }
}

int chat(ChatFlags f) {
  int code = kExitOk;
  std::unique_ptr<Engine> engine = load_engine(f.engine, code);
  if (!engine) return code;
  Result<ChatTemplateSource> tmpl = load_chat_template(f.engine.model_path, f.chat_template);
  if (!tmpl.ok()) return report(tmpl.error());

  install_sigint_handler();
  LineReader reader(default_history_path());
  std::fprintf(
      stderr, "strata chat: %s (%s template). /help lists the commands, /exit leaves.\n",
      engine->model().name.empty() ? f.engine.model_path.c_str() : engine->model().name.c_str(),
      !f.chat_template.empty() ? f.chat_template.c_str()
      : tmpl->is_default       ? "ChatML"
                               : "model's");
  Messages messages = Messages::array();
  if (!f.system.empty()) messages.push_back({{"role", "system"}, {"content", f.system}});
  size_t n_system = messages.size();  // the system message stays through /clear and trimming
  const int max_tokens = max_tokens_for(f.n_predict, *engine);
  // The answer's room in the context: its limit, but never more than half the context.
  const size_t room =
      std::min<size_t>(static_cast<size_t>(max_tokens), engine->model().context / 2);
  std::mt19937_64 seeds(f.seed.value_or(std::random_device{}()));

  for (;;) {
    g_interrupted.store(false);
    std::optional<std::string> read = reader.read("\n> ");
    if (!read) {
      if (g_interrupted.load()) {  // Ctrl-C at the prompt: the read failed with EINTR; go on
        std::printf("\n(type /exit to leave)");
        continue;
      }
      std::printf("\n");
      return kExitOk;
    }
    const std::string& line = *read;
    if (line.empty()) continue;
    if (line[0] == '/') {
      const std::string command = line.substr(0, line.find(' '));
      const std::string arg = command.size() < line.size() ? line.substr(command.size() + 1) : "";
      if (command == "/exit" || command == "/quit") return kExitOk;
      if (command == "/help") {
        std::printf("%s", kHelp);
      } else if (command == "/clear") {
        messages.erase(messages.begin() + static_cast<long>(n_system), messages.end());
        std::printf("(conversation cleared)");
      } else if (command == "/save" && !arg.empty()) {
        if (Status saved = save_messages(messages, arg); saved.ok()) {
          std::printf("(saved to %s)", arg.c_str());
        } else {
          std::printf("error: %s", saved.error().message.c_str());
        }
      } else if (command == "/load" && !arg.empty()) {
        if (Result<Messages> loaded = load_messages(arg); loaded.ok()) {
          messages = *loaded;
          n_system = !messages.empty() && messages[0]["role"] == "system" ? 1 : 0;
          std::printf("(%zu messages loaded)", messages.size());
        } else {
          std::printf("error: %s", loaded.error().message.c_str());
        }
      } else {
        std::printf("unknown command %s (or missing FILE); /help lists them", command.c_str());
      }
      continue;
    }
    messages.push_back({{"role", "user"}, {"content", line}});
    size_t dropped = 0;
    Result<std::vector<TokenId>> prompt =
        fit_prompt(*engine, *tmpl, messages, n_system, room, dropped);
    if (dropped > 0)
      std::fprintf(stderr, "(%zu old messages dropped to fit the context)\n", dropped);
    if (!prompt.ok()) {
      std::fprintf(stderr, "error: %s\n", prompt.error().message.c_str());
      messages.erase(messages.end() - 1);
      continue;
    }
    GenerationRequest request;
    request.prompt = std::move(prompt).value();
    request.max_tokens = max_tokens;
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
    const std::string error = !stats.ok()                             ? stats.error().message
                              : stats->finish == FinishReason::kError ? stats->error
                                                                      : "";
    if (!error.empty()) {
      std::fprintf(stderr, "\nerror: %s (try /clear)\n", error.c_str());
      messages.erase(messages.end() - 1);
      continue;
    }
    if (stats->finish == FinishReason::kCancelled) std::printf(" [stopped]");
    std::fprintf(
        stderr, "\n(%zu tokens, %.1f tokens/s%s)", stats->generated_tokens,
        stats->generate_seconds > 0
            ? static_cast<double>(stats->generated_tokens) / stats->generate_seconds
            : 0.0,
        stats->finish == FinishReason::kLength ? "; cut off at the limit: -n raises it" : "");
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
