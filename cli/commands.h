// The `strata` subcommands. Each registers itself and its flags on the CLI11 app; its run
// function returns the exit code: 0 on success, 2 on bad input or a bad file (with a one-line
// `error: ...` on stderr).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace strata::cli {

struct Command {
  CLI::App* app;
  std::function<int()> run;
};

Command add_run_command(CLI::App& app);
Command add_info_command(CLI::App& app);
Command add_logits_command(CLI::App& app);
Command add_embed_command(CLI::App& app);
Command add_tokenize_command(CLI::App& app);
Command add_detokenize_command(CLI::App& app);
Command add_template_command(CLI::App& app);
Command add_chat_command(CLI::App& app);
Command add_synth_command(CLI::App& app);
Command add_quantize_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_eval_command(CLI::App& app);
Command add_inspect_command(CLI::App& app);
Command add_bench_grammar_command(CLI::App& app);
Command add_grammar_check_command(CLI::App& app);
Command add_serve_command(CLI::App& app);
Command add_pull_command(CLI::App& app);
Command add_list_command(CLI::App& app);

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

}  // namespace strata::cli
