// matmul's plan: quantize (and pack) the activations once per kernel family, cut each matrix's
// rows into tasks, and run all the tasks of one call as one job of the thread pool. The kernels
// themselves are per SIMD target in matmul_kernels.cc.

#include "kernels/matmul.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "base/aligned.h"
#include "kernels/dequantize_scalar.h"
#include "kernels/interleave.h"
#include "kernels/matmul_kernels.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize_act.h"

namespace strata::kernels {

namespace {

// Multiply-adds below which handing a task to another thread costs more than it saves (a wake-up
// is microseconds, far more when the cores are shared).
constexpr size_t kMinTaskWork = size_t{1} << 15;

// Rows per parallel_for task. One token (decode) streams the weights from memory: two long tasks
// per thread keep each thread on one sequential stream that its prefetches run ahead of (tg128
// of llama-1b Q4_K_M, 102K vocabulary, 2 threads: 58-68 -> 64-74 t/s in alternating runs
// against 8 tasks per thread of at most 64 rows). More tokens: enough tasks to balance the
// threads (about 8 each), 16-64 rows. Never less than kMinTaskWork, so small matrices (tiny
// models) run on one thread.
size_t rows_per_task(size_t rows, size_t cols, size_t n_tokens, size_t threads) {
  const size_t balanced = n_tokens == 1
                              ? std::max<size_t>((rows + 2 * threads - 1) / (2 * threads), 16)
                              : std::clamp<size_t>(rows / (threads * 8), 16, 64);
  const size_t min_rows = (kMinTaskWork + cols * n_tokens - 1) / (cols * n_tokens);
  return std::max(balanced, min_rows);
}

// X as one kind of kernel reads it: quantized rows (X itself for F32 weights) and, where the
// kernel wants them, the same rows packed.
struct KernelInput {
  ActivationFormat format = ActivationFormat::kNone;
  MatmulKernel::PackFn pack = nullptr;
  AlignedBuffer<uint8_t> quantized, packed;
  const uint8_t* rows = nullptr;
  size_t row_stride = 0, packed_stride = 0;

  // What the kernel reads, and its bytes per token.
  const uint8_t* act() const { return pack ? packed.data() : rows; }
  size_t act_stride() const { return pack ? packed_stride : row_stride; }
};

// A kernel's input: quantizes X into its format and packs it, or finds an input an earlier
// product of the same call already prepared.
const KernelInput& input_for(std::vector<KernelInput>& inputs, const MatmulKernel& k,
                             const float* x, size_t cols, size_t n_tokens, ThreadPool& pool) {
  for (const KernelInput& in : inputs) {
    if (in.format == k.format && in.pack == k.pack) return in;
  }
  KernelInput in;
  in.format = k.format;
  in.pack = k.pack;
  // Rows of this format prepared for another packing are reused.
  for (const KernelInput& other : inputs) {
    if (other.format == k.format) {
      in.rows = other.rows;
      in.row_stride = other.row_stride;
      break;
    }
  }
  if (in.rows == nullptr && k.format == ActivationFormat::kF32) {
    in.rows = reinterpret_cast<const uint8_t*>(x);
    in.row_stride = cols * sizeof(float);
  } else if (in.rows == nullptr) {
    in.row_stride = activation_row_bytes(k.format, cols);
    in.quantized = AlignedBuffer<uint8_t>(in.row_stride * n_tokens);
    uint8_t* dst = in.quantized.data();
    pool.parallel_for(n_tokens, [&](size_t t, size_t) {
      quantize_activations(k.format, x + t * cols, dst + t * in.row_stride, cols);
    });
    in.rows = in.quantized.data();
  }
  if (k.pack != nullptr) {
    in.packed_stride = k.packed_row_bytes(cols);
    in.packed = AlignedBuffer<uint8_t>(in.packed_stride * n_tokens);
    uint8_t* dst = in.packed.data();
    pool.parallel_for(n_tokens, [&](size_t t, size_t) {
      k.pack(in.rows + t * in.row_stride, cols, dst + t * in.packed_stride);
    });
  }
  inputs.push_back(std::move(in));
  return inputs.back();
}

// Rows [begin, end) of one product for every token.
void run_rows(const MatmulProduct& p, const MatmulKernel& k, const KernelInput& in, size_t begin,
              size_t end, size_t n_tokens) {
  const size_t w_stride = row_bytes(p.type, p.cols);
  const uint8_t* weights = static_cast<const uint8_t*>(p.w);
  if (!k.read_back_groups) {
    return k.rows(weights, w_stride, begin, end, p.cols, in.act(), in.act_stride(), n_tokens, p.y,
                  p.rows);
  }
  // No interleaved kernel on this target: read the groups back into GGUF rows.
  std::vector<uint8_t> group_rows(kInterleaveRows * w_stride);
  for (size_t g = begin; g < end; g += kInterleaveRows) {
    for (size_t r = 0; r < kInterleaveRows; ++r) {
      deinterleave_row(p.type, weights + g * w_stride, p.cols, r, group_rows.data() + r * w_stride);
    }
    k.rows(group_rows.data(), w_stride, 0, kInterleaveRows, p.cols, in.act(), in.act_stride(),
           n_tokens, p.y + g, p.rows);
  }
}

}  // namespace

bool supports_weight_type(DType type) { return activation_format(type) != ActivationFormat::kNone; }

void matvec(DType type, const void* w, size_t rows, size_t cols, const float* x, float* y,
            ThreadPool& pool) {
  matmul(type, WeightLayout::kRows, w, rows, cols, x, 1, y, pool);
}

void matmul(DType type, const void* w, size_t rows, size_t cols, const float* x, size_t n_tokens,
            float* y, ThreadPool& pool) {
  matmul(type, WeightLayout::kRows, w, rows, cols, x, n_tokens, y, pool);
}

WeightLayout preferred_layout(DType type, size_t rows, size_t cols) {
  return dispatch::has_interleaved_kernel(type) && can_interleave(type, rows, cols)
             ? WeightLayout::kInterleaved
             : WeightLayout::kRows;
}

void matmul(DType type, WeightLayout layout, const void* w, size_t rows, size_t cols,
            const float* x, size_t n_tokens, float* y, ThreadPool& pool) {
  const MatmulProduct product{type, layout, w, rows, cols, y};
  matmul_shared_input({&product, 1}, x, n_tokens, pool);
}

void matmul_shared_input(std::span<const MatmulProduct> products, const float* x, size_t n_tokens,
                         ThreadPool& pool) {
  // Each product's kernel and input, and its rows cut into tasks; the tasks of all the products
  // are one parallel_for.
  struct Plan {
    const MatmulProduct* p;
    const MatmulKernel* kernel;
    const KernelInput* in;
    size_t chunk, first_task;
  };
  std::vector<MatmulKernel> selected;  // kernels chosen for this call (none for a model's)
  for (const MatmulProduct& p : products) {
    if (p.kernel == nullptr) selected.reserve(products.size());  // Plan keeps pointers into it
  }
  std::vector<KernelInput> inputs;
  inputs.reserve(products.size());  // Plan keeps pointers into it
  std::vector<Plan> plans;
  size_t tasks = 0;
  for (const MatmulProduct& p : products) {
    const MatmulKernel* k = p.kernel;
    if (k == nullptr) {
      selected.push_back(select_matmul_kernel(p.type, p.layout, p.cols));
      k = &selected.back();
    }
    const bool interleaved = p.layout == WeightLayout::kInterleaved;
    if (k->rows == nullptr || p.cols != products[0].cols ||
        p.cols % traits(p.type).block_size != 0 ||
        (interleaved && !can_interleave(p.type, p.rows, p.cols))) {
      // Callers check supports_weight_type and the shape when loading a model; NaN makes a
      // violation visible instead of silently wrong.
      std::fill_n(p.y, p.rows * n_tokens, std::numeric_limits<float>::quiet_NaN());
      continue;
    }
    const KernelInput& in = input_for(inputs, *k, x, p.cols, n_tokens, pool);
    size_t chunk = rows_per_task(p.rows, p.cols, n_tokens, pool.num_threads());
    if (interleaved) chunk = (chunk + kInterleaveRows - 1) / kInterleaveRows * kInterleaveRows;
    plans.push_back({&p, k, &in, chunk, tasks});
    tasks += (p.rows + chunk - 1) / chunk;
  }
  pool.parallel_for(tasks, [&](size_t task, size_t) {
    size_t i = plans.size() - 1;
    while (plans[i].first_task > task) --i;
    const Plan& plan = plans[i];
    const size_t begin = (task - plan.first_task) * plan.chunk;
    const size_t end = std::min(plan.p->rows, begin + plan.chunk);
    run_rows(*plan.p, *plan.kernel, *plan.in, begin, end, n_tokens);
  });
}

void dequantize_row(DType type, const void* src, float* dst, size_t n) {
  if (!can_dequantize_scalar(type) || n % traits(type).block_size != 0) {
    std::fill_n(dst, n, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  dequantize_row_scalar(type, src, dst, n);
}

void dequantize_matrix_row(DType type, WeightLayout layout, const void* w, size_t cols, size_t r,
                           float* dst) {
  const size_t stride = row_bytes(type, cols);
  const auto* bytes = static_cast<const uint8_t*>(w);
  if (layout == WeightLayout::kRows) return dequantize_row(type, bytes + r * stride, dst, cols);
  std::vector<uint8_t> row(stride);
  const size_t group = r / kInterleaveRows * kInterleaveRows;
  deinterleave_row(type, bytes + group * stride, cols, r - group, row.data());
  dequantize_row(type, row.data(), dst, cols);
}

}  // namespace strata::kernels
