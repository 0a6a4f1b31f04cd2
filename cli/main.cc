// strata: run, inspect and measure GGUF language models on the CPU.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/llama_aliases.h"
#include "strata_version.h"  // generated: the version and commit (cmake/version.cmake)

int main(int argc, char** argv) {
  using namespace strata::cli;
  CLI::App app{"strata: a CPU inference engine for GGUF language models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", STRATA_VERSION_STRING);
  // --help shows every option's default; inherited by the subcommands added below.
  app.option_defaults()->always_capture_default();
  // llama.cpp's spellings (-ngl, -np, ...) as strata's names, before CLI11 reads them.
  const RewrittenArgs rewritten = rewrite_llama_spellings(argc, argv);
  // Bad flags are bad input like a bad file: one `error: ...` line (CLI11's default adds a
  // second line, and some of its messages span lines); an unknown flag names the nearest one.
  app.failure_message([&rewritten](const CLI::App* failed, const CLI::Error& e) {
    return "error: " + parse_failure_message(*failed, e, rewritten.typed) + "\n";
  });
  // One line per subcommand.
  // clang-format off
  const std::vector<Command> commands = {
      add_run_command(app),
      add_info_command(app),
      add_logits_command(app),
      add_embed_command(app),
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
      add_pull_command(app),
      add_list_command(app),
  };
  // clang-format on
  // llama.cpp's GPU-only and no-op flags, on the commands that load a model (add_model_flags),
  // unless a command has its own meaning for one.
  for (const Command& c : commands) {
    if (c.app->get_option_no_throw("--ctx-size") != nullptr) add_ignored_llama_flags(*c.app);
  }
  try {
    std::vector<const char*> args;
    for (const std::string& a : rewritten.args) args.push_back(a.c_str());
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitBadInput;
  }
  for (const Command& c : commands) {
    if (c.app->parsed()) return c.run();
  }
  return kExitBadInput;
}
