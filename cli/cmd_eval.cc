// strata eval: perplexity of a model file on a text, and its fidelity to a reference file of the
// same model (see bench/eval.h for what is measured); with --task, accuracy on a long-context
// task over lengths and depths (bench/task_eval.h).
#include <cstdio>
#include <memory>

#include "bench/eval.h"
#include "bench/heatmap.h"
#include "bench/task_eval.h"
#include "cli/commands.h"
#include "cli/common.h"

namespace strata::cli {
namespace {

struct EvalFlags {
  bench::EvalOptions options;
  bench::TaskEvalOptions task;
  std::string task_name;  // empty: perplexity
  std::string plot_path;
  bool json = false;
};

void print(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }

int run_task(EvalFlags f) {
  f.task.engine = f.options.engine;
  f.task.task = *bench::parse_long_task(f.task_name);  // checked by CLI11
  Result<bench::TaskEvalReport> result = bench::run_task_eval(f.task);
  if (!result.ok()) return report(result.error());
  if (!f.plot_path.empty()) {
    if (Status s = bench::write_heatmap_png(f.plot_path, *result); !s.ok()) {
      return report(s.error());
    }
  }
  print(f.json ? bench::format_task_json(*result) + "\n" : bench::format_task_table(*result));
  return kExitOk;
}

int run(const EvalFlags& f) {
  if (!f.task_name.empty()) return run_task(f);
  Result<bench::EvalReport> result = bench::run_eval(f.options);
  if (!result.ok()) return report(result.error());
  print(f.json ? bench::format_eval_json(*result) + "\n" : bench::format_eval_table(*result));
  return kExitOk;
}

void add_task_flags(CLI::App& sub, EvalFlags& f) {
  bench::TaskEvalOptions& t = f.task;
  sub.add_option("--lengths", t.lengths,
                 "--task: prompt lengths in tokens with BOS, e.g. 1024,2048,4096,8192")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  sub.add_option("--depths", t.depths, "--task: needle depths in [0, 1], e.g. 0,0.25,0.5,0.75,1")
      ->delimiter(',')
      ->check(CLI::Range(0.0, 1.0));
  sub.add_option("--seed", t.seed, "--task: the seed the prompts are made from")
      ->capture_default_str();
  sub.add_option("--samples", t.samples, "--task: prompts per (length, depth) cell")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub.add_option("--haystack", t.haystack_path,
                 "--task multikey: a text file whose non-empty lines hide the needles");
  sub.add_option("--parallel", t.parallel, "--task: prompts decoded at once (continuous batching)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  auto* plot = sub.add_option("--plot", f.plot_path,
                              "--task: write the accuracy as a depth x length heatmap (PNG)");
  sub.add_option("--write-prompts", t.prompts_path,
                 "--task: write every prompt as a JSON line {prompt, answer, length, depth}, with "
                 "strata's answer (generated, correct) when it runs them");
  auto* no_run = sub.add_flag("!--no-run", t.run,
                              "--task: make (and write) the prompts only; reads the model's "
                              "vocabulary, not its weights");
  plot->excludes(no_run);
}

}  // namespace

Command add_eval_command(CLI::App& app) {
  auto f = std::make_shared<EvalFlags>();
  bench::EvalOptions& o = f->options;
  CLI::App* sub = app.add_subcommand(
      "eval",
      "perplexity on a text, and top-1 agreement and KL divergence against a reference; with "
      "--task, accuracy on a long-context task (passkey, multikey, vt) by length and depth");
  add_model_flags(*sub, o.engine);
  auto* reference = sub->add_option(
      "--reference", o.reference_path,
      "the file to compare with, e.g. the F16 file the model was quantized from (both are loaded)");
  auto* reference_kv = add_kv_type_option(
      *sub, "--reference-kv-type", [&o](KvPrecision p) { o.reference_kv_type = p; },
      "the reference's KV precision, for every page (default: the model's --kv-type and "
      "--kv-tiers); the model file itself with f16 here measures what a KV type or tier policy "
      "costs");
  auto* reference_attention = add_attention_option(
      *sub, "--reference-attention", [&o](AttentionMode m) { o.reference_attention = m; },
      "the reference's attention (default: the model's --attention); with the model file as "
      "--reference, what fast attention or a KV type costs");
  auto* reference_sparse = add_sparse_mode_option(
      *sub, "--reference-attn", [&o](bool on) { o.reference_sparse = on; },
      "the reference's page reads, dense or sparse (default: the model's --attn); with the model "
      "file as --reference and --attn sparse, what reading only the selected pages costs");
  reference_sparse->needs(reference);
  reference_kv->needs(reference);
  reference_attention->needs(reference);
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
  auto* task = sub->add_option("--task", f->task_name,
                               "a long-context task instead of perplexity: passkey, multikey "
                               "(needs --haystack) or vt; needs --lengths and --depths")
                   ->check(CLI::IsMember({"passkey", "multikey", "vt"}))
                   ->excludes(text)
                   ->excludes(tokens)
                   ->excludes(reference);
  add_task_flags(*sub, *f);
  for (const char* name : {"--lengths", "--depths"}) task->needs(sub->get_option(name));
  sub->add_flag("--json", f->json, "print one JSON object instead of the summary");
  return {sub, [f] { return run(*f); }};
}

}  // namespace strata::cli
