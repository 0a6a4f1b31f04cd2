// Helpers shared by the subcommands: model loading flags and error reporting.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "strata/engine.h"

namespace strata::cli {

// Prints `error: <message>` to stderr and returns the exit code for bad input.
int report(const Error& error);

// The whole of a file, or kNotFound naming it.
Result<std::string> read_file(const std::string& path);

// Checks a -t/--threads value with strata::check_thread_count while the flags are parsed, so a
// count past kMaxThreads is refused before any model is read.
CLI::Validator thread_count_validator();

// Options that name how a KV cache is kept, with their values spelled in one place for every
// command that sets a cache (add_model_flags; eval's reference): `set` gets the parsed value.
// --kv-tiers SPEC (strata::parse_kv_tiers) into `tiers`.
CLI::Option* add_kv_tiers_option(CLI::App& sub, KvTierPolicy& tiers);
// --pooling mean|cls|last|none: overrides the model's pooling of embeddings.
CLI::Option* add_pooling_option(CLI::App& sub, std::optional<Pooling>& pooling);
CLI::Option* add_kv_type_option(CLI::App& sub, const std::string& name,
                                std::function<void(KvPrecision)> set, const std::string& help);
CLI::Option* add_attention_option(CLI::App& sub, const std::string& name,
                                  std::function<void(AttentionMode)> set, const std::string& help);
// dense | sparse: whether decode steps read every KV page or a selection (--attn).
CLI::Option* add_sparse_mode_option(CLI::App& sub, const std::string& name,
                                    std::function<void(bool)> set, const std::string& help);

// --attn dense|sparse, --attn-budget, --attn-window, --attn-sinks, --attn-dense-layers.
void add_sparse_attention_flags(CLI::App& sub, SparseAttentionPolicy& sparse);

// Turns a -m value that names no file into the models folder's file of that name
// (cli/model_store.h), for CLI11's transform().
CLI::Validator model_name_resolver();

// -m, -t, -c, --mmap on a subcommand, filling `options`.
void add_model_flags(CLI::App& sub, EngineOptions& options);
// --spec none|ngram, --draft-max, --spec-ngram-min, --spec-ngram-max: speculative decoding, for
// the commands that generate (run, chat, serve, bench).
void add_speculative_flags(CLI::App& sub, SpeculativeOptions& options);

// -n/--n-predict: tokens to generate at most, or -1 (llama.cpp's -1 and -2) for "until the
// context ends"; max_tokens_for turns the value into a request's max_tokens.
CLI::Option* add_n_predict_option(CLI::App& sub, int& n_predict, const std::string& help);
int max_tokens_for(int n_predict, const Engine& engine);

// llama.cpp's sampling flags (--temp, --top-k, --top-p, --min-p, --repeat-penalty,
// --repeat-last-n, --presence-penalty, --frequency-penalty) into `sampling`.
void add_sampling_flags(CLI::App& sub, SamplingOptions& sampling);

// --chat-template NAME|FILE (and llama.cpp's --chat-template-file FILE): "chatml" or a Jinja
// file in place of the model's template.
void add_chat_template_option(CLI::App& sub, std::string& chat_template);

// Loads the engine or prints why not; warns when the context is past the trained one.
std::unique_ptr<Engine> load_engine(const EngineOptions& options, int& exit_code);
// One `warning:` line when -c asked for more than the model's trained context.
void warn_if_beyond_trained_context(const EngineOptions& options, const ModelSummary& model);

}  // namespace strata::cli
