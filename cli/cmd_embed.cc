// strata embed: the pooled, L2-normalized embedding of each line of a file, as llama.cpp's
// llama-embedding prints them (one line of floats per text), or as one JSON object.
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"

namespace strata::cli {
namespace {

struct EmbedFlags {
  EngineOptions engine;
  std::string texts_path;
  bool json = false;
};

// The non-empty lines of `text` (a trailing '\r' dropped).
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

int run(EmbedFlags f) {
  Result<std::string> text = read_file(f.texts_path);
  if (!text.ok()) return report(text.error());
  const std::vector<std::string> texts = lines_of(*text);
  if (texts.empty()) {
    return report(make_error(ErrorCode::kInvalidArgument,
                             f.texts_path + " has no text to embed (one text per line)"));
  }
  // Every text runs at once, each its own sequence, batched in the engine's steps.
  f.engine.max_sequences = std::max(f.engine.max_sequences, static_cast<int>(texts.size()));
  int code = kExitOk;
  std::unique_ptr<Engine> engine = load_engine(f.engine, code);
  if (!engine) return code;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::vector<TokenId>> prompts;
  prompts.reserve(texts.size());
  size_t n_tokens = 0;
  for (const std::string& t : texts) {
    prompts.push_back(engine->tokenize(t, /*add_special=*/true, /*parse_special=*/false));
    n_tokens += prompts.back().size();
  }
  Result<std::vector<std::vector<float>>> embeddings = engine->embed(prompts);
  if (!embeddings.ok()) return report(embeddings.error());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "embedded %zu texts, %zu tokens in %.2f s: %.1f texts/s, %.0f tokens/s\n",
               texts.size(), n_tokens, seconds, static_cast<double>(texts.size()) / seconds,
               static_cast<double>(n_tokens) / seconds);
  if (f.json) {
    std::printf("%s\n", nlohmann::json{{"embeddings", *embeddings}}.dump().c_str());
    return kExitOk;
  }
  for (const std::vector<float>& e : *embeddings) {
    for (size_t i = 0; i < e.size(); ++i) std::printf(i ? " %.6f" : "%.6f", e[i]);
    std::printf("\n");
  }
  return kExitOk;
}

}  // namespace

Command add_embed_command(CLI::App& app) {
  auto f = std::make_shared<EmbedFlags>();
  CLI::App* sub = app.add_subcommand(
      "embed", "print the embedding of each line of a file (pooled, L2-normalized)");
  add_model_flags(*sub, f->engine);
  sub->add_option("-f,--file", f->texts_path, "text file, one text per line")->required();
  add_pooling_option(*sub, f->engine.pooling);
  sub->add_flag("--json", f->json, R"(print {"embeddings": [[...], ...]} instead of lines)");
  return {sub, [f] { return run(*f); }};
}

}  // namespace strata::cli
