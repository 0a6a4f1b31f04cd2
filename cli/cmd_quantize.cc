// strata quantize: re-encode a model's weight matrices in the GGUF block formats (the community's
// per-tensor type mixes), with an optional importance matrix.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <map>
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

// Totals per output type: how many tensors and bytes, and the error over all their elements
// (each tensor's relative error weighted by its element count).
struct TypeTotals {
  size_t tensors = 0;
  uint64_t elements = 0, bytes = 0;
  double weighted_sq_error = 0;
};

void print_type_summary(const QuantizeReport& r) {
  std::map<std::string, TypeTotals> by_type;
  for (const TensorQuantizeReport& t : r.tensors) {
    TypeTotals& s = by_type[t.quantized ? t.output_type : t.output_type + " (kept)"];
    ++s.tensors;
    s.elements += t.n_elements;
    s.bytes += t.output_bytes;
    s.weighted_sq_error += t.relative_rmse * t.relative_rmse * static_cast<double>(t.n_elements);
  }
  std::fprintf(stderr, "%-12s %8s %14s %12s %10s %10s\n", "type", "tensors", "elements", "bytes",
               "bits/wt", "rel. RMSE");
  for (const auto& [type, s] : by_type) {
    const double n = static_cast<double>(s.elements);
    std::fprintf(stderr, "%-12s %8zu %14llu %12llu %10.3f %10.5f\n", type.c_str(), s.tensors,
                 static_cast<unsigned long long>(s.elements),
                 static_cast<unsigned long long>(s.bytes), n > 0 ? 8.0 * s.bytes / n : 0.0,
                 n > 0 ? std::sqrt(s.weighted_sq_error / n) : 0.0);
  }
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
      std::fprintf(stderr, "%10.5f%s\n", t.relative_rmse, t.importance_weighted ? "  imatrix" : "");
    } else {
      std::fprintf(stderr, "%10s\n", "kept");
    }
  }
  print_type_summary(r);
  std::fprintf(stderr, "wrote %s: %.1f MB of tensors -> %.1f MB (%s, file type %u) in %.1f s\n",
               options.output_path.c_str(), r.input_bytes / 1e6, r.output_bytes / 1e6,
               r.file_type.c_str(), r.file_type_id, r.seconds);
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
      ->check(thread_count_validator());
  sub->add_option("--imatrix", options->imatrix_path,
                  "importance matrix from llama-imatrix (.gguf, or the legacy .dat format)");
  sub->add_flag("--pure", options->pure,
                "every matrix at the type's default type (no raised attn_v/ffn_down/output)");
  sub->add_flag("--allow-requantize", options->allow_requantize,
                "quantize a file whose weights are already quantized (dequantized first; worse "
                "than quantizing the original)");
  return {sub, [options] { return run(*options); }};
}

}  // namespace strata::cli
