// llama.cpp's spellings on strata's command line: its multi-letter single-dash names, the
// GPU-only flags strata accepts and ignores, and the one-line message for a flag that is unknown
// (naming the nearest valid one).
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

namespace strata::cli {

struct RewrittenArgs {
  std::vector<std::string> args;             // argv with the spellings rewritten
  std::map<std::string, std::string> typed;  // rewritten name -> what was typed, for messages
};

// CLI11 reads "-ngl 99" as "-n gl 99" and "-hf" as "-h f". llama.cpp's multi-letter single-dash
// names (-ngl, -np, -cnv, -fa, -md, ...) become the long names strata registers; any other
// multi-letter single-dash name becomes "--NAME", which is then refused as unknown. Arguments
// after "--" are left alone.
RewrittenArgs rewrite_llama_spellings(int argc, const char* const* argv);

// llama.cpp flags that mean nothing on strata's CPU engine (-ngl, -fa, --jinja, --color, ...):
// accepted, each with one `warning:` line on stderr. Names `sub` already has are skipped, so
// main.cc adds them after every command's own flags (to the commands that load a model).
void add_ignored_llama_flags(CLI::App& sub);

// The text after "error: " for a failed parse. For arguments CLI11 did not expect: the first
// unknown flag (as typed) and the nearest valid flag of the command by edit distance, or the
// nearest subcommand.
std::string parse_failure_message(const CLI::App& app, const CLI::Error& error,
                                  const std::map<std::string, std::string>& typed);

}  // namespace strata::cli
