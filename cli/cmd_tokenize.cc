// strata tokenize / detokenize.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "cli/common.h"
#include "strata/tokenizer.h"

namespace strata::cli {
namespace {

struct TokenizeFlags {
  EngineOptions engine;
  std::string prompt;
  std::string file;
  bool no_bos = false;
  bool special = false;
  bool ids = false;
};

int tokenize(const TokenizeFlags& f) {
  std::string text = f.prompt;
  if (!f.file.empty()) {
    std::ifstream in(f.file, std::ios::binary);
    if (!in) return report(make_error(ErrorCode::kNotFound, "cannot read " + f.file));
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  Result<std::unique_ptr<TextTokenizer>> tokenizer = TextTokenizer::load(f.engine.model_path);
  if (!tokenizer.ok()) return report(tokenizer.error());
  const TextTokenizer& engine = **tokenizer;
  std::vector<TokenId> ids = engine.tokenize(text, !f.no_bos, f.special);
  if (f.ids) {
    for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? " %d" : "%d", ids[i]);
    std::printf("\n");
  } else {
    for (TokenId id : ids) std::printf("%6d -> '%s'\n", id, engine.token_piece(id).c_str());
  }
  return kExitOk;
}

struct DetokenizeFlags {
  EngineOptions engine;
  std::vector<TokenId> ids;
};

int detokenize(const DetokenizeFlags& f) {
  Result<std::unique_ptr<TextTokenizer>> tokenizer = TextTokenizer::load(f.engine.model_path);
  if (!tokenizer.ok()) return report(tokenizer.error());
  const TextTokenizer& engine = **tokenizer;
  for (TokenId id : f.ids) {
    if (id < 0 || static_cast<size_t>(id) >= engine.n_vocab()) {
      return report(make_error(ErrorCode::kInvalidArgument,
                               "token id " + std::to_string(id) + " is outside the vocabulary"));
    }
  }
  std::string text = engine.detokenize(f.ids);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::printf("\n");
  return kExitOk;
}

}  // namespace

Command add_tokenize_command(CLI::App& app) {
  auto f = std::make_shared<TokenizeFlags>();
  CLI::App* sub = app.add_subcommand("tokenize", "print the token ids of a text");
  add_model_flags(*sub, f->engine);
  auto* p = sub->add_option("-p,--prompt", f->prompt, "text to tokenize");
  sub->add_option("-f,--file", f->file, "read the text from a file")->excludes(p);
  sub->add_flag("--no-bos", f->no_bos, "do not add BOS/EOS tokens");
  sub->add_flag("--special", f->special, "parse the text of special tokens into those tokens");
  sub->add_flag("--ids", f->ids, "print only the ids, space separated");
  return {sub, [f] { return tokenize(*f); }};
}

Command add_detokenize_command(CLI::App& app) {
  auto f = std::make_shared<DetokenizeFlags>();
  CLI::App* sub = app.add_subcommand("detokenize", "print the text of token ids");
  add_model_flags(*sub, f->engine);
  sub->add_option("ids", f->ids, "token ids")->required();
  return {sub, [f] { return detokenize(*f); }};
}

}  // namespace strata::cli
