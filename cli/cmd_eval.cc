// strata eval: perplexity of a model file on a text, and its fidelity to a reference file of the
// same model (see bench/eval.h for what is measured).
#include <cstdio>
#include <memory>

#include "bench/eval.h"
#include "cli/commands.h"
#include "cli/common.h"

namespace strata::cli {
namespace {

struct EvalFlags {
  bench::EvalOptions options;
  bool json = false;
};

int run(const EvalFlags& f) {
  Result<bench::EvalReport> result = bench::run_eval(f.options);
  if (!result.ok()) return report(result.error());
  const std::string text =
      f.json ? bench::format_eval_json(*result) + "\n" : bench::format_eval_table(*result);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

}  // namespace

Command add_eval_command(CLI::App& app) {
  auto f = std::make_shared<EvalFlags>();
  bench::EvalOptions& o = f->options;
  CLI::App* sub = app.add_subcommand(
      "eval", "perplexity on a text, and top-1 agreement and KL divergence against a reference");
  add_model_flags(*sub, o.engine);
  sub->add_option("--reference", o.reference_path,
                  "the file to compare with, e.g. the F16 file the model was quantized from "
                  "(both are loaded)");
  auto* text = sub->add_option("-f,--file", o.text_path,
                               "a text: cut into chunks, the second half of each scored");
  auto* tokens = sub->add_option("--tokens", o.tokens_path,
                                 "token sequences, one per line as space-separated ids, every "
                                 "position scored (teacher-forced)");
  text->excludes(tokens);
  sub->add_option("--chunk", o.chunk_tokens, "tokens per chunk of a text, BOS included")
      ->check(CLI::Range(4, 1 << 20))
      ->capture_default_str();
  sub->add_option("--chunks", o.max_chunks, "chunks of the text to evaluate (0: all)")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--json", f->json, "print one JSON object instead of the summary");
  return {sub, [f] { return run(*f); }};
}

}  // namespace strata::cli
