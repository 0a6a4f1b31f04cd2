// strata logits: the last-position logits of a prompt (with BOS), for comparison with references.
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"

namespace strata::cli {
namespace {

struct LogitsFlags {
  EngineOptions engine;
  std::string prompt;
  std::string out;
};

int run(const LogitsFlags& f) {
  int code = kExitOk;
  std::unique_ptr<Engine> engine = load_engine(f.engine, code);
  if (!engine) return code;
  std::vector<TokenId> tokens =
      engine->tokenize(f.prompt, /*add_special=*/true, /*parse_special=*/true);
  Result<std::vector<float>> logits = engine->evaluate(tokens);
  if (!logits.ok()) return report(logits.error());
  // Little-endian float32, as every platform strata targets stores floats.
  FILE* out = f.out.empty() ? stdout : std::fopen(f.out.c_str(), "wb");
  if (out == nullptr) return report(make_error(ErrorCode::kIo, "cannot write " + f.out));
  const size_t written = std::fwrite(logits->data(), sizeof(float), logits->size(), out);
  const bool ok =
      written == logits->size() && (out == stdout ? std::fflush(out) : std::fclose(out)) == 0;
  if (!ok)
    return report(make_error(ErrorCode::kIo, "cannot write " + (f.out.empty() ? "stdout" : f.out)));
  return kExitOk;
}

}  // namespace

Command add_logits_command(CLI::App& app) {
  auto f = std::make_shared<LogitsFlags>();
  CLI::App* sub =
      app.add_subcommand("logits", "write the last-position logits of a prompt as float32");
  add_model_flags(*sub, f->engine);
  sub->add_option("-p,--prompt", f->prompt, "prompt text (BOS is added as the model asks)");
  sub->add_option("--out", f->out, "output file (default: stdout)");
  return {sub, [f] { return run(*f); }};
}

}  // namespace strata::cli
