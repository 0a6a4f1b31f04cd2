#include "model/blocks.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/gelu.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kv/attend.h"

namespace strata::model {

constexpr float kPi = 3.14159265358979323846f;

void linear(const Matrix& w, const float* x, size_t n_tokens, float* out, ThreadPool& pool) {
  const kernels::MatmulProduct product{w.type, w.layout, w.data, w.rows, w.cols, out, &w.kernel};
  kernels::matmul_shared_input({&product, 1}, x, n_tokens, pool);
}

void linear_shared_input(std::initializer_list<LinearOutput> outputs, const float* x,
                         size_t n_tokens, ThreadPool& pool) {
  std::vector<kernels::MatmulProduct> products;
  products.reserve(outputs.size());
  for (const LinearOutput& o : outputs) {
    products.push_back({o.w.type, o.w.layout, o.w.data, o.w.rows, o.w.cols, o.out, &o.w.kernel});
  }
  kernels::matmul_shared_input(products, x, n_tokens, pool);
}

void embed_tokens(const Matrix& token_embd, const Batch& batch, float scale, float* x) {
  const size_t n = token_embd.cols;
  for (size_t t = 0; t < batch.size(); ++t) {
    kernels::dequantize_matrix_row(token_embd.type, token_embd.layout, token_embd.data, n,
                                   static_cast<size_t>(batch[t].token), x + t * n);
  }
  scale_rows(x, scale, batch.size() * n);
}

void rms_norm_rows(const float* x, const Vector& weight, size_t n_tokens, size_t n, float eps,
                   float* out) {
  for (size_t t = 0; t < n_tokens; ++t)
    kernels::rms_norm(x + t * n, weight.data(), out + t * n, n, eps);
}

void norm_rows(NormKind kind, float eps, const float* x, const Norm& norm, size_t n_tokens,
               size_t n, float* out) {
  if (kind == NormKind::kRms) return rms_norm_rows(x, norm.weight, n_tokens, n, eps, out);
  for (size_t t = 0; t < n_tokens; ++t) {
    kernels::layer_norm(x + t * n, norm.weight.data(), norm.bias.data(), out + t * n, n, eps);
  }
}

void add_input_embeddings(const ModelWeights& w, const Batch& batch, float* x) {
  const size_t n = w.token_embd.cols;
  std::vector<float> row(n);
  for (size_t t = 0; t < batch.size(); ++t) {
    float* xt = x + t * n;
    // In the reference engine's order: (token + type) + position.
    if (w.token_type.size() != 0) kernels::add(xt, w.token_type.data(), n);
    if (w.position_embd.data == nullptr) continue;
    const Matrix& p = w.position_embd;
    kernels::dequantize_matrix_row(p.type, p.layout, p.data, n, batch[t].pos, row.data());
    kernels::add(xt, row.data(), n);
  }
}

void add_bias_rows(float* x, const Vector& bias, size_t n_tokens) {
  if (bias.size() == 0) return;
  for (size_t t = 0; t < n_tokens; ++t) kernels::add(x + t * bias.size(), bias.data(), bias.size());
}

void scale_rows(float* x, float scale, size_t n) {
  if (scale == 1.0f) return;
  for (size_t i = 0; i < n; ++i) x[i] *= scale;
}

void soft_cap(float* x, size_t n, float cap) {
  if (cap == 0) return;
  for (size_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

void rms_norm_heads(float* x, const Vector& weight, size_t n_tokens, size_t n_heads,
                    size_t head_dim, float eps) {
  for (size_t i = 0; i < n_tokens * n_heads; ++i) {
    kernels::rms_norm(x + i * head_dim, weight.data(), x + i * head_dim, head_dim, eps);
  }
}

namespace {

// Rotates the rope_dims leading dimensions of one head by the per-pair (cos, sin).
void rotate_head(float* x, const float* cos_theta, const float* sin_theta, size_t rope_dims,
                 RopeStyle style) {
  const size_t half = rope_dims / 2;
  for (size_t i = 0; i < half; ++i) {
    // Normal style pairs adjacent dimensions; NeoX pairs dimension i with i + rope_dims/2.
    float* a = style == RopeStyle::kNormal ? &x[2 * i] : &x[i];
    float* b = style == RopeStyle::kNormal ? &x[2 * i + 1] : &x[i + half];
    // The x0 products are fused, as in the reference engine's compiled rotation: F32 models
    // then agree with it bit for bit (see kernels/dot_f32_ordered-inl.h for why that matters).
    const float x0 = *a, x1 = *b;
    *a = std::fma(x0, cos_theta[i], -(x1 * sin_theta[i]));
    *b = std::fma(x0, sin_theta[i], x1 * cos_theta[i]);
  }
}

}  // namespace

namespace {

// YaRN's correction dims: the pairs that turn beta_fast and beta_slow times over the original
// context, pair i turning n_ctx_orig / (2 pi base^(2i/d)) times: i = d ln(n_ctx_orig /
// (2 pi turns)) / (2 ln base); floor and ceil, clamped to [0, d - 1] as GGML does.
std::pair<float, float> yarn_corr_dims(const LayerSpec& s) {
  const auto dims = static_cast<float>(s.rope_dims);
  auto corr_dim = [&](float turns) {
    return dims * std::log(static_cast<float>(s.yarn.n_ctx_orig) / (turns * 2 * kPi)) /
           (2 * std::log(s.rope_freq_base));
  };
  return {std::max(0.0f, std::floor(corr_dim(s.yarn.beta_fast))),
          std::min(dims - 1, std::ceil(corr_dim(s.yarn.beta_slow)))};
}

}  // namespace

void apply_rope(const LayerSpec& s, const ModelConfig& c, const Vector& freq_factors,
                const Batch& batch, float* q, float* k) {
  const size_t half = s.rope_dims / 2;
  const float theta_scale = std::pow(s.rope_freq_base, -2.0f / static_cast<float>(s.rope_dims));
  const bool yarn = s.yarn.ext_factor != 0;
  const auto [corr_low, corr_high] = yarn ? yarn_corr_dims(s) : std::pair{0.0f, 0.0f};
  // cos and sin scale by mscale, which YaRN raises as the angles compress (its temperature).
  const float mscale =
      s.yarn.attn_factor * (yarn ? 1.0f + 0.1f * std::log(1.0f / s.rope_freq_scale) : 1.0f);
  std::vector<float> cos_theta(half), sin_theta(half);
  for (size_t t = 0; t < batch.size(); ++t) {
    // theta_i = pos * base^(-2i/d), built by repeated multiplication as GGML does, so positions
    // agree bit for bit with models' reference outputs.
    float theta = static_cast<float>(batch[t].pos);
    for (size_t i = 0; i < half; ++i) {
      const float ff = freq_factors.size() ? freq_factors[i] : 1.0f;
      const float extrapolated = theta / ff;
      float angle = s.rope_freq_scale * extrapolated;  // interpolated
      if (yarn) {
        const float y = (static_cast<float>(i) - corr_low) / std::max(0.001f, corr_high - corr_low);
        const float ramp = (1 - std::min(1.0f, std::max(0.0f, y))) * s.yarn.ext_factor;
        angle = angle * (1 - ramp) + extrapolated * ramp;
      }
      cos_theta[i] = std::cos(angle) * mscale;
      sin_theta[i] = std::sin(angle) * mscale;
      theta *= theta_scale;
    }
    for (size_t h = 0; h < c.n_heads; ++h) {
      rotate_head(q + (t * c.n_heads + h) * c.head_dim, cos_theta.data(), sin_theta.data(),
                  s.rope_dims, s.rope_style);
    }
    for (size_t h = 0; h < c.n_kv_heads; ++h) {
      rotate_head(k + (t * c.n_kv_heads + h) * c.head_dim, cos_theta.data(), sin_theta.data(),
                  s.rope_dims, s.rope_style);
    }
  }
}

void scale_queries_by_position(const LayerSpec& s, const ModelConfig& c, const Batch& batch,
                               float* q) {
  if (s.query_temp_scale == 0) return;
  for (size_t t = 0; t < batch.size(); ++t) {
    // As the reference engine computes it: the floor in float, the log in double.
    const float steps =
        std::floor(static_cast<float>(batch[t].pos) / static_cast<float>(s.query_temp_floor));
    const auto temp =
        static_cast<float>(std::log(double{steps} + 1.0) * double{s.query_temp_scale} + 1.0);
    float* row = q + t * c.q_dim();
    for (size_t i = 0; i < c.q_dim(); ++i) row[i] *= temp;
  }
}

void attention(const ModelConfig& c, size_t layer, const LayerSpec& spec, const Batch& batch,
               const float* q, const float* k, const float* v, kv::KvCache& cache, float* out,
               ThreadPool& pool) {
  // Every position of the batch is stored first, so an entry attends to the earlier entries of
  // its own sequence in this batch as well as to the cache.
  std::vector<kv::QueryPos> queries(batch.size());
  for (size_t t = 0; t < batch.size(); ++t) {
    cache.write(batch[t].seq, batch[t].pos, layer, k + t * c.kv_dim(), v + t * c.kv_dim());
    queries[t] = {batch[t].seq, batch[t].pos, batch[t].generated};
  }
  // Bidirectional attention: each query reads up to its sequence's last position in the batch
  // (the scheduler runs an encoder's whole input in one batch).
  if (!c.causal) {
    std::unordered_map<kv::SeqId, uint32_t> last;
    for (const BatchEntry& e : batch) last[e.seq] = std::max(last[e.seq], e.pos);
    for (kv::QueryPos& q : queries) q.pos = last[q.seq];
  }
  const kv::ScoreOptions scores{spec.attn_logit_softcap, spec.sliding_window};
  kv::attend(cache, layer, queries, c.n_heads, spec.attn_scale, q, out, pool, scores);
}

void activation_rows(Activation act, float* gate, const float* up, size_t n_tokens, size_t n) {
  if (act == Activation::kGelu) return kernels::gelu(gate, n_tokens * n);
  if (act == Activation::kGeGlu) return kernels::geglu(gate, up, n_tokens * n);
  // Row by row: the kernel's rounding depends on where a row ends (see kernels::swiglu).
  for (size_t t = 0; t < n_tokens; ++t) kernels::swiglu(gate + t * n, up + t * n, n);
}

void residual_add(float* x, const float* y, size_t n_tokens, size_t n) {
  kernels::add(x, y, n_tokens * n);
}

}  // namespace strata::model
