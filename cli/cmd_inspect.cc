// strata inspect: where attention goes on prompts, per layer and head, and how much of it sparse
// attention's page selection keeps (bench/inspect.h).
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "bench/inspect.h"
#include "cli/commands.h"
#include "cli/common.h"

namespace strata::cli {
namespace {

struct InspectFlags {
  bench::InspectOptions options;
  std::string prompt, file, plot_path;
  bool json = false;
};

int run(InspectFlags f) {
  if (!f.prompt.empty()) f.options.prompts.push_back(f.prompt);
  if (!f.file.empty()) {
    std::ifstream in(f.file, std::ios::binary);
    if (!in) return report(make_error(ErrorCode::kNotFound, "cannot read " + f.file));
    std::ostringstream text;
    text << in.rdbuf();
    f.options.prompts.push_back(text.str());
  }
  Result<bench::InspectReport> result = bench::run_inspect(f.options);
  if (!result.ok()) return report(result.error());
  if (!f.plot_path.empty()) {
    if (Status s = bench::write_inspect_png(f.plot_path, *result); !s.ok()) {
      return report(s.error());
    }
  }
  const std::string text =
      f.json ? bench::format_inspect_json(*result) + "\n" : bench::format_inspect_table(*result);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

}  // namespace

Command add_inspect_command(CLI::App& app) {
  auto f = std::make_shared<InspectFlags>();
  CLI::App* sub = app.add_subcommand(
      "inspect",
      "per layer and head: the entropy of attention at a prompt's last positions, its mass in "
      "the sinks, the window, the pages sparse attention selects (--attn-budget, ...) and the "
      "rest, and the selection's recall");
  add_model_flags(*sub, f->options.engine);
  sub->add_option("-p,--prompt", f->prompt, "a prompt (BOS is added as the model asks)");
  sub->add_option("-f,--file", f->file, "a file whose text is one prompt");
  sub->add_option("--prompts", f->options.prompts_path,
                  "JSON lines with a \"prompt\" each, e.g. from strata eval --write-prompts");
  sub->add_option("--limit", f->options.limit, "at most this many prompts (0: all)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--queries", f->options.queries,
                  "the last positions of each prompt whose attention is profiled")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  sub->add_option("--plot", f->plot_path, "write the recall per layer and head as a PNG heatmap");
  sub->add_flag("--json", f->json, "print one JSON object");
  return {sub, [f] { return run(*f); }};
}

}  // namespace strata::cli
