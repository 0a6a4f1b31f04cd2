// Helpers shared by the subcommands: model loading flags and error reporting.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "strata/engine.h"

namespace strata::cli {

// Prints `error: <message>` to stderr and returns the exit code for bad input.
int report(const Error& error);

// Checks a -t/--threads value with strata::check_thread_count while the flags are parsed, so a
// count past kMaxThreads is refused before any model is read.
CLI::Validator thread_count_validator();

// -m, -t, -c, --mmap on a subcommand, filling `options`.
void add_model_flags(CLI::App& sub, EngineOptions& options);

// Loads the engine or prints why not.
std::unique_ptr<Engine> load_engine(const EngineOptions& options, int& exit_code);

}  // namespace strata::cli
