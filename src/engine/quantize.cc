// `strata quantize`: re-encodes a model's weight matrices in a 32-element block format.
//
// Which tensors: as the community's quantizer does for the legacy formats, 2-D tensors named
// `*.weight` whose rows (dims[0]) are a multiple of the block size; 1-D norms, biases and
// matrices with odd row lengths (stories260K's ffn_down has 172 columns) are copied unchanged.
// Every tensor is produced while the output is written, so memory holds one tensor at a time.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/timer.h"
#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "kernels/matmul.h"
#include "kernels/reference/quantize_ref.h"
#include "platform/thread_pool.h"
#include "strata/model_tools.h"

namespace strata {
namespace {

struct QuantType {
  const char* name;
  DType type;
  uint32_t file_type;  // llama.cpp's LLAMA_FTYPE id for general.file_type
};

constexpr QuantType kQuantTypes[] = {
    {"Q8_0", DType::kQ8_0, 7}, {"Q4_0", DType::kQ4_0, 2}, {"Q4_1", DType::kQ4_1, 3},
    {"Q5_0", DType::kQ5_0, 8}, {"Q5_1", DType::kQ5_1, 9},
};
// The block layout version of the quantized formats (GGML_QNT_VERSION).
constexpr uint32_t kQuantizationVersion = 2;
// Rows per parallel work item: enough elements to amortize the hand-out.
constexpr size_t kElementsPerChunk = 1 << 16;

Result<const QuantType*> find_quant_type(const std::string& name) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
  for (const QuantType& q : kQuantTypes) {
    if (upper == q.name) return &q;
  }
  std::string names;
  for (const std::string& n : quantize_type_names()) names += (names.empty() ? "" : ", ") + n;
  return make_error(ErrorCode::kInvalidArgument,
                    "unsupported quantization type '" + name + "'; supported: " + names);
}

bool is_float_type(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

// Quantizes `t` into `dst` row by row on the pool; returns RMS(error) / RMS(input), where the
// error is the dequantized output minus the (dequantized) input. Sums are kept per chunk and
// added in order, so the figure does not depend on scheduling.
double quantize_tensor(const gguf::TensorInfo& t, DType out_type, uint8_t* dst, ThreadPool& pool) {
  const size_t cols = t.dims[0], rows = t.rows();
  const size_t in_stride = row_bytes(t.type, cols), out_stride = row_bytes(out_type, cols);
  const size_t rows_per_chunk = std::max<size_t>(1, kElementsPerChunk / cols);
  const size_t n_chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
  std::vector<double> err(n_chunks, 0.0), ref(n_chunks, 0.0);
  std::vector<std::vector<float>> input(pool.num_threads()), back(pool.num_threads());
  pool.parallel_for(n_chunks, [&](size_t chunk, size_t thread) {
    std::vector<float>& x = input[thread];
    std::vector<float>& y = back[thread];
    x.resize(cols);
    y.resize(cols);
    const size_t end = std::min(rows, (chunk + 1) * rows_per_chunk);
    for (size_t r = chunk * rows_per_chunk; r < end; ++r) {
      uint8_t* out = dst + r * out_stride;
      kernels::dequantize_row(t.type, t.data + r * in_stride, x.data(), cols);
      kernels::reference::quantize_row_ref(out_type, x.data(), out, cols);
      kernels::dequantize_row(out_type, out, y.data(), cols);
      for (size_t c = 0; c < cols; ++c) {
        const double d = static_cast<double>(y[c]) - x[c];
        err[chunk] += d * d;
        ref[chunk] += static_cast<double>(x[c]) * x[c];
      }
    }
  });
  double e = 0, s = 0;
  for (size_t i = 0; i < n_chunks; ++i) {
    e += err[i];
    s += ref[i];
  }
  if (s == 0) return e == 0 ? 0.0 : INFINITY;
  return std::sqrt(e / s);
}

}  // namespace

std::vector<std::string> quantize_type_names() {
  std::vector<std::string> names;
  for (const QuantType& q : kQuantTypes) names.emplace_back(q.name);
  return names;
}

Result<QuantizeReport> quantize_model(const QuantizeOptions& options,
                                      const WriteProgressCallback& progress) {
  STRATA_ASSIGN_OR_RETURN(const QuantType* quant, find_quant_type(options.type));
  if (options.output_path.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "no output path given");
  }
  Result<std::unique_ptr<gguf::File>> opened = gguf::File::open(options.input_path);
  if (!opened.ok()) {
    return make_error(opened.error().code,
                      "input model " + options.input_path + ": " + opened.error().message);
  }
  const gguf::File& in = **opened;
  const uint32_t block = traits(quant->type).block_size;

  gguf::Writer writer;
  writer.copy_metadata(in);
  writer.set("general.file_type", gguf::Value::uint32(quant->file_type));
  writer.set("general.quantization_version", gguf::Value::uint32(kQuantizationVersion));

  QuantizeReport report;
  report.tensors.reserve(in.tensors().size());
  for (const gguf::TensorInfo& t : in.tensors()) {
    TensorQuantizeReport r;
    r.name = t.name;
    r.input_type = std::string(dtype_name(t.type));
    r.n_elements = t.n_elements;
    r.input_bytes = t.n_bytes;
    const bool weight_matrix = t.name.ends_with(".weight") && t.dims.size() == 2;
    r.quantized = weight_matrix && is_float_type(t.type) && t.dims[0] % block == 0;
    if (weight_matrix && !r.quantized) {
      const std::string why =
          !is_float_type(t.type)
              ? "is already " + r.input_type + " (only F32, F16 and BF16 are quantized)"
              : "has rows of " + std::to_string(t.dims[0]) + " elements, not a multiple of the " +
                    quant->name + " block size " + std::to_string(block);
      report.warnings.push_back("tensor " + t.name + " " + why + "; kept as " + r.input_type);
    }
    const DType out_type = r.quantized ? quant->type : t.type;
    r.output_type = std::string(dtype_name(out_type));
    r.output_bytes = row_bytes(out_type, t.dims[0]) * t.rows();
    report.input_bytes += r.input_bytes;
    report.output_bytes += r.output_bytes;
    report.tensors.push_back(std::move(r));
  }

  ThreadPool pool(static_cast<size_t>(std::max(options.threads, 0)));
  Timer timer;
  WriteProgress state{0, in.tensors().size(), "", 0, report.input_bytes, 0};
  for (size_t i = 0; i < in.tensors().size(); ++i) {
    const gguf::TensorInfo* t = &in.tensors()[i];
    TensorQuantizeReport* r = &report.tensors[i];
    const DType out_type = r->quantized ? quant->type : t->type;
    // Kept tensors go through a generator too, so progress counts every tensor's bytes.
    STRATA_RETURN_IF_ERROR(writer.add_tensor_generator(
        t->name, out_type, t->dims, [&, t, r, i, out_type](uint8_t* dst) {
          if (r->quantized) {
            r->relative_rmse = quantize_tensor(*t, out_type, dst, pool);
          } else {
            std::memcpy(dst, t->data, t->n_bytes);
          }
          state.tensor_index = i + 1;
          state.tensor_name = t->name;
          state.bytes_done += t->n_bytes;
          state.elapsed_seconds = timer.elapsed_seconds();
          if (progress) progress(state);
        }));
  }
  STRATA_RETURN_IF_ERROR(writer.write(options.output_path));
  report.seconds = timer.elapsed_seconds();
  return report;
}

std::string format_progress(const WriteProgress& p) {
  const double gb = 1e9;
  const double done = p.bytes_total ? static_cast<double>(p.bytes_done) / p.bytes_total : 1.0;
  const double eta = done > 0 ? p.elapsed_seconds * (1.0 - done) / done : 0.0;
  char line[160];
  std::snprintf(line, sizeof(line), "[%4zu/%zu] %.2f / %.2f GB, %.0f s elapsed, ETA %.0f s  ",
                p.tensor_index, p.tensor_count, p.bytes_done / gb, p.bytes_total / gb,
                p.elapsed_seconds, eta);
  return line + p.tensor_name;
}

}  // namespace strata
