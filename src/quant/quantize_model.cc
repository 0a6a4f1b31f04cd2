// `strata quantize`: re-encodes a model's weight matrices in the GGUF block formats.
//
// Which tensors and which types: quantize_mix.h (the community's per-tensor rules and
// fallbacks). Every tensor is produced while the output is written, so memory holds one tensor
// at a time; rows are quantized in parallel and each row's bytes depend only on the row, so the
// file does not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/timer.h"
#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "kernels/matmul.h"
#include "platform/thread_pool.h"
#include "quant/imatrix.h"
#include "quant/quantize_k.h"
#include "quant/quantize_row.h"
#include "quant/type_mix.h"
#include "strata/model_tools.h"

namespace strata {
namespace {

// The block layout version of the quantized formats (GGML_QNT_VERSION).
constexpr uint32_t kQuantizationVersion = 2;
// Rows per parallel work item: enough elements to amortize the hand-out.
constexpr size_t kElementsPerChunk = 1 << 16;

// One row in `type`; importance (null or one weight per element) steers the scale search.
void encode_row(DType type, const float* x, uint8_t* out, size_t n, const float* importance) {
  if (quant::is_k_quant(type)) return quant::quantize_row_k(type, x, out, n, importance);
  if (type == DType::kQ8_0) return quant::quantize_row_q8_0_stored_scale(x, out, n);
  if (importance != nullptr && quant::can_quantize_weighted(type)) {
    return quant::quantize_row_weighted(type, x, out, n, importance);
  }
  quant::quantize_row(type, x, out, n);
}

// Quantizes `t` into `dst` row by row on the pool; returns RMS(error) / RMS(input), where the
// error is the dequantized output minus the (dequantized) input. Sums are kept per chunk and
// added in order, so the figure does not depend on scheduling. `importance` holds dims[0]
// weights per matrix of the tensor (one matrix per dims[2] slice) or is null.
double quantize_tensor(const gguf::TensorInfo& t, DType out_type, const float* importance,
                       uint8_t* dst, ThreadPool& pool) {
  const size_t cols = t.dims[0], rows = t.rows(), rows_per_matrix = t.dims[1];
  const size_t in_stride = row_bytes(t.type, cols), out_stride = row_bytes(out_type, cols);
  const size_t rows_per_chunk = std::max<size_t>(1, kElementsPerChunk / cols);
  const size_t n_chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
  std::vector<double> err(n_chunks, 0.0), ref_sq(n_chunks, 0.0);
  std::vector<std::vector<float>> input(pool.num_threads()), back(pool.num_threads());
  pool.parallel_for(n_chunks, [&](size_t chunk, size_t thread) {
    std::vector<float>& x = input[thread];
    std::vector<float>& y = back[thread];
    x.resize(cols);
    y.resize(cols);
    const size_t end = std::min(rows, (chunk + 1) * rows_per_chunk);
    for (size_t r = chunk * rows_per_chunk; r < end; ++r) {
      uint8_t* out = dst + r * out_stride;
      const float* row_importance =
          importance ? importance + (r / rows_per_matrix) * cols : nullptr;
      kernels::dequantize_row(t.type, t.data + r * in_stride, x.data(), cols);
      encode_row(out_type, x.data(), out, cols, row_importance);
      kernels::dequantize_row(out_type, out, y.data(), cols);
      for (size_t c = 0; c < cols; ++c) {
        const double d = static_cast<double>(y[c]) - x[c];
        err[chunk] += d * d;
        ref_sq[chunk] += static_cast<double>(x[c]) * x[c];
      }
    }
  });
  double e = 0, s = 0;
  for (size_t i = 0; i < n_chunks; ++i) {
    e += err[i];
    s += ref_sq[i];
  }
  if (s == 0) return e == 0 ? 0.0 : INFINITY;
  return std::sqrt(e / s);
}

// The importance entry for a tensor about to be quantized to `type`, or null; an entry of the
// wrong size is an error (the matrix file belongs to another model), except for token_embd, which
// llama.cpp also lets through unweighted.
Result<const float*> importance_for(const quant::ImportanceMatrix* imatrix,
                                    const gguf::TensorInfo& t, DType type) {
  if (imatrix == nullptr || !(quant::is_k_quant(type) || quant::can_quantize_weighted(type))) {
    return nullptr;
  }
  const std::vector<float>* values = imatrix->find(t.name);
  if (values == nullptr) return nullptr;
  const uint64_t want = t.dims[0] * (t.dims.size() > 2 ? t.dims[2] : 1);
  if (values->size() == want) return values->data();
  if (t.name == "token_embd.weight") return nullptr;
  return make_error(ErrorCode::kInvalidArgument,
                    "importance matrix entry for " + t.name + " has " +
                        std::to_string(values->size()) + " values, the tensor needs " +
                        std::to_string(want) + ": was the matrix computed for another model?");
}

// "NAME is TYPE" for the first weight matrix of `in` that is already quantized, or "".
std::string first_quantized_matrix(const gguf::File& in) {
  for (const gguf::TensorInfo& t : in.tensors()) {
    if (t.dims.size() < 2 || t.type == DType::kF32 || t.type == DType::kF16 ||
        t.type == DType::kBF16) {
      continue;
    }
    return t.name + " is " + std::string(dtype_name(t.type));
  }
  return "";
}

}  // namespace

std::vector<std::string> quantize_type_names() {
  std::vector<std::string> names;
  for (const quant::FileType& t : quant::file_types()) names.emplace_back(t.name);
  return names;
}

Result<QuantizeReport> quantize_model(const QuantizeOptions& options,
                                      const WriteProgressCallback& progress) {
  STRATA_RETURN_IF_ERROR(check_thread_count(options.threads));
  STRATA_ASSIGN_OR_RETURN(const quant::FileType* file_type, quant::find_file_type(options.type));
  if (options.output_path.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "no output path given");
  }
  Result<std::unique_ptr<gguf::File>> opened = gguf::File::open(options.input_path);
  if (!opened.ok()) {
    return make_error(opened.error().code,
                      "input model " + options.input_path + ": " + opened.error().message);
  }
  const gguf::File& in = **opened;
  const std::string quantized = first_quantized_matrix(in);
  if (!quantized.empty() && !options.allow_requantize) {
    return make_error(ErrorCode::kInvalidArgument,
                      options.input_path + " is already quantized (" + quantized +
                          "): requantizing loses more than quantizing the F32/F16/BF16 "
                          "original; pass --allow-requantize to do it anyway");
  }
  std::optional<quant::ImportanceMatrix> imatrix;
  if (!options.imatrix_path.empty()) {
    STRATA_ASSIGN_OR_RETURN(imatrix, quant::load_importance_matrix(options.imatrix_path));
  }

  gguf::Writer writer;
  writer.copy_metadata(in);
  writer.set("general.file_type", gguf::Value::uint32(file_type->id));
  writer.set("general.quantization_version", gguf::Value::uint32(kQuantizationVersion));

  QuantizeReport report;
  if (!quantized.empty()) {
    report.warnings.push_back("requantizing " + options.input_path + " (" + quantized +
                              "): quality is lower than from the original");
  }
  report.file_type = std::string(file_type->name);
  report.file_type_id = file_type->id;
  report.tensors.reserve(in.tensors().size());
  quant::TypeMix mix(*file_type, quant::ModelShape::of(in), imatrix.has_value(), options.pure);
  std::vector<DType> out_types;
  std::vector<const float*> importance;
  std::string unweighted;
  for (const gguf::TensorInfo& t : in.tensors()) {
    const quant::TensorChoice choice = mix.choose(t);
    if (!choice.warning.empty()) report.warnings.push_back(choice.warning);
    TensorQuantizeReport r;
    r.name = t.name;
    r.input_type = std::string(dtype_name(t.type));
    r.output_type = std::string(dtype_name(choice.type));
    r.n_elements = t.n_elements;
    r.input_bytes = t.n_bytes;
    r.output_bytes = row_bytes(choice.type, t.dims[0]) * t.rows();
    r.quantized = choice.quantize;
    const float* weights = nullptr;
    if (choice.quantize) {
      STRATA_ASSIGN_OR_RETURN(weights,
                              importance_for(imatrix ? &*imatrix : nullptr, t, choice.type));
      r.importance_weighted = weights != nullptr;
      const bool searched =
          quant::is_k_quant(choice.type) || quant::can_quantize_weighted(choice.type);
      if (imatrix && weights == nullptr && searched) {
        unweighted += (unweighted.empty() ? "" : ", ") + t.name;
      }
    }
    out_types.push_back(choice.type);
    importance.push_back(weights);
    report.input_bytes += r.input_bytes;
    report.output_bytes += r.output_bytes;
    report.tensors.push_back(std::move(r));
  }
  if (!unweighted.empty()) {
    report.warnings.push_back("the importance matrix has no entry for " + unweighted +
                              "; quantized unweighted");
  }

  ThreadPool pool(static_cast<size_t>(std::max(options.threads, 0)));
  Timer timer;
  WriteProgress state{0, in.tensors().size(), "", 0, report.input_bytes, 0};
  for (size_t i = 0; i < in.tensors().size(); ++i) {
    const gguf::TensorInfo* t = &in.tensors()[i];
    TensorQuantizeReport* r = &report.tensors[i];
    const DType out_type = out_types[i];
    const float* weights = importance[i];
    // Kept tensors go through a generator too, so progress counts every tensor's bytes.
    STRATA_RETURN_IF_ERROR(writer.add_tensor_generator(
        t->name, out_type, t->dims, [&, t, r, i, out_type, weights](uint8_t* dst) {
          if (r->quantized) {
            r->relative_rmse = quantize_tensor(*t, out_type, weights, dst, pool);
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
