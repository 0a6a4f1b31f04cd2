// strata quantize: re-encode a model's weight matrices in a 32-element block format.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/common.h"
#include "strata/model_tools.h"

namespace strata::cli {
namespace {

void print_progress(const WriteProgress& p) {
  const bool tty = ::isatty(STDERR_FILENO);
  std::fprintf(stderr, tty ? "\r%s\033[K" : "%s\n", format_progress(p).c_str());
  if (tty && p.tensor_index == p.tensor_count) std::fprintf(stderr, "\n");
}

int run(const QuantizeOptions& options) {
  Result<QuantizeReport> result = quantize_model(options, print_progress);
  if (!result.ok()) return report(result.error());
  const QuantizeReport& r = *result;
  for (const std::string& w : r.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  std::fprintf(stderr, "%-32s %-6s %-6s %12s %12s %10s\n", "tensor", "from", "to", "bytes in",
               "bytes out", "rel. RMSE");
  for (const TensorQuantizeReport& t : r.tensors) {
    std::fprintf(stderr, "%-32s %-6s %-6s %12llu %12llu ", t.name.c_str(), t.input_type.c_str(),
                 t.output_type.c_str(), static_cast<unsigned long long>(t.input_bytes),
                 static_cast<unsigned long long>(t.output_bytes));
    if (t.quantized) {
      std::fprintf(stderr, "%10.5f\n", t.relative_rmse);
    } else {
      std::fprintf(stderr, "%10s\n", "kept");
    }
  }
  std::fprintf(stderr, "wrote %s: %.1f MB of tensors -> %.1f MB (%s) in %.1f s\n",
               options.output_path.c_str(), r.input_bytes / 1e6, r.output_bytes / 1e6,
               options.type.c_str(), r.seconds);
  return kExitOk;
}

}  // namespace

Command add_quantize_command(CLI::App& app) {
  auto options = std::make_shared<QuantizeOptions>();
  std::string types;
  for (const std::string& t : quantize_type_names()) types += (types.empty() ? "" : ", ") + t;
  CLI::App* sub =
      app.add_subcommand("quantize", "quantize a GGUF model's weight matrices (" + types + ")");
  sub->add_option("input", options->input_path, "GGUF model to read (F32, F16 or BF16 weights)")
      ->required();
  sub->add_option("output", options->output_path, "GGUF file to write")->required();
  // Not checked by CLI11: quantize_model's error lists the supported types.
  sub->add_option("type", options->type, "quantization type: " + types)->required();
  sub->add_option("-t,--threads", options->threads, "threads (0: one per core)")
      ->check(CLI::NonNegativeNumber);
  return {sub, [options] { return run(*options); }};
}

}  // namespace strata::cli
