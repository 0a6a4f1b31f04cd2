// strata synth: write a GGUF with seeded random weights at a real model's shapes.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/common.h"
#include "strata/model_tools.h"

namespace strata::cli {
namespace {

// Rewrites one status line on a terminal; prints a line per tensor into a log.
void print_progress(const WriteProgress& p) {
  const bool tty = ::isatty(STDERR_FILENO);
  std::fprintf(stderr, tty ? "\r%s\033[K" : "%s\n", format_progress(p).c_str());
  if (tty && p.tensor_index == p.tensor_count) std::fprintf(stderr, "\n");
}

int run(const SynthOptions& options) {
  Status s = synthesize_model(options, print_progress);
  if (!s.ok()) return report(s.error());
  std::fprintf(stderr, "wrote %s (%s, preset %s, %s weights, seed %llu)\n",
               options.output_path.c_str(), options.arch.c_str(), options.preset.c_str(),
               options.type.c_str(), static_cast<unsigned long long>(options.seed));
  return kExitOk;
}

}  // namespace

Command add_synth_command(CLI::App& app) {
  auto options = std::make_shared<SynthOptions>();
  CLI::App* sub = app.add_subcommand(
      "synth",
      "write a GGUF with seeded random weights at a real model's shape, for speed measurements "
      "and differential tests");
  sub->add_option("--preset", options->preset, "model shape")
      ->check(CLI::IsMember(synth_preset_names()))
      ->capture_default_str();
  sub->add_option("--arch", options->arch, "architecture (general.architecture)")
      ->check(CLI::IsMember(synth_architecture_names()))
      ->capture_default_str();
  sub->add_option("-o,--output", options->output_path, "GGUF file to write")->required();
  sub->add_option("--type", options->type, "weight matrix type: F16 or F32")->capture_default_str();
  sub->add_option("--vocab", options->vocab_path, "GGUF whose tokenizer.* metadata to copy")
      ->capture_default_str();
  sub->add_option("--n-vocab", options->n_vocab,
                  "pad the vocabulary with reserved control tokens to this size (0: as copied)")
      ->capture_default_str();
  sub->add_option("--seed", options->seed, "weight generator seed")->capture_default_str();
  sub->add_option("--pooling-type", options->pooling_type,
                  "write <arch>.pooling_type (1 mean, 2 cls, 3 last: an embedding model)")
      ->check(CLI::Range(1, 3));
  sub->add_option("-t,--threads", options->threads, "threads (0: one per core)")
      ->check(thread_count_validator());
  return {sub, [options] { return run(*options); }};
}

}  // namespace strata::cli
