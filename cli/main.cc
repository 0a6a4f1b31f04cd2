// strata: run, inspect and measure GGUF language models on the CPU.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <vector>

#include "cli/commands.h"

int main(int argc, char** argv) {
  using namespace strata::cli;
  CLI::App app{"strata: a CPU inference engine for GGUF language models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "strata 0.1.0");
  // Bad flags are bad input like a bad file: one `error: ...` line (CLI11's default adds a
  // second line, and some of its messages span lines).
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    std::string message = e.what();
    std::replace(message.begin(), message.end(), '\n', ' ');
    while (!message.empty() && message.back() == ' ') message.pop_back();
    return "error: " + message + " (see --help)\n";
  });
  // One line per subcommand.
  // clang-format off
  const std::vector<Command> commands = {
      add_run_command(app),
      add_info_command(app),
      add_logits_command(app),
      add_tokenize_command(app),
      add_detokenize_command(app),
      add_template_command(app),
      add_chat_command(app),
      add_synth_command(app),
      add_quantize_command(app),
      add_bench_command(app),
      add_eval_command(app),
      add_inspect_command(app),
      add_bench_grammar_command(app),
      add_grammar_check_command(app),
      add_serve_command(app),
  };
  // clang-format on
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitBadInput;
  }
  for (const Command& c : commands) {
    if (c.app->parsed()) return c.run();
  }
  return kExitBadInput;
}
