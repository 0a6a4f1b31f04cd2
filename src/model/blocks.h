// The building blocks the architectures' forward passes share. Every function works on a batch of
// T rows at once; shapes are given as [rows][columns].
#pragma once

#include <initializer_list>
#include <span>

#include "kv/kv_cache.h"
#include "model/batch.h"
#include "model/config.h"
#include "model/weights.h"
#include "platform/thread_pool.h"

namespace strata::model {

// out[t] = W x[t]: [T][w.rows] from [T][w.cols]
void linear(const Matrix& w, const float* x, size_t n_tokens, float* out, ThreadPool& pool);

// out_i[t] = W_i x[t] for matrices that read the same x (attention's q, k, v; the feed-forward's
// gate and up): one parallel pass over all their rows (kernels::matmul_shared_input).
struct LinearOutput {
  const Matrix& w;
  float* out;  // [T][w.rows]
};
void linear_shared_input(std::initializer_list<LinearOutput> outputs, const float* x,
                         size_t n_tokens, ThreadPool& pool);

// x[t] = token_embd[batch[t].token] * scale: [T][n_embd]
void embed_tokens(const Matrix& token_embd, const Batch& batch, float scale, float* x);

// out[t] = RMSNorm(x[t]) * weight, row by row: [T][n] (out may be x)
void rms_norm_rows(const float* x, const Vector& weight, size_t n_tokens, size_t n, float eps,
                   float* out);

// out[t] = the norm `kind` of x[t] with `eps`, times norm.weight (plus norm.bias for LayerNorm):
// [T][n] (out may be x).
void norm_rows(NormKind kind, float eps, const float* x, const Norm& norm, size_t n_tokens,
               size_t n, float* out);

// x[t] += row 0 of token_types (when present), then x[t] += position_embd[batch[t].pos] (when
// the model learned its positions): an encoder's inputs before token_embd_norm. [T][n_embd]
void add_input_embeddings(const ModelWeights& w, const Batch& batch, float* x);

// x[i] *= scale for i in [0, n); nothing for scale 1.
void scale_rows(float* x, float scale, size_t n);

// x[t][j] += bias[j]: [T][n]; nothing for an absent (empty) bias.
void add_bias_rows(float* x, const Vector& bias, size_t n_tokens);

// x[i] = cap * tanh(x[i] / cap) for i in [0, n) (Gemma 2's logit soft-capping); nothing for cap 0.
void soft_cap(float* x, size_t n, float cap);

// Per-head RMSNorm (Qwen3's q_norm/k_norm): each [head_dim] slice of x[t] normalized and scaled
// (one head of the row's width: OLMo 2's norm over all of q or k).
void rms_norm_heads(float* x, const Vector& weight, size_t n_tokens, size_t n_heads,
                    size_t head_dim, float eps);

// Rotary position embedding of q [T][n_heads][head_dim] and k [T][n_kv_heads][head_dim] at each
// entry's position, with the layer's RoPE (spec.rope_*): pair i of rope_dims rotates by theta =
// freq_scale * pos * base^(-2i/rope_dims) / freq_factor[i] (with YaRN, spec.yarn, blended with
// the unscaled angle and cos/sin scaled), pairs chosen by the rope style.
void apply_rope(const LayerSpec& spec, const ModelConfig& c, const Vector& freq_factors,
                const Batch& batch, float* q, float* k);

// q[t] *= 1 + spec.query_temp_scale * ln(1 + floor(pos_t / spec.query_temp_floor)): Mistral 3's
// query temperature; nothing when the scale is 0.
void scale_queries_by_position(const LayerSpec& spec, const ModelConfig& c, const Batch& batch,
                               float* q);

// Writes k, v [T][kv_dim] into the cache, then for each entry and head attends over positions
// [0, pos] (the last spec.sliding_window of them, when set; with c.causal false, every position
// of the entry's sequence in the batch or before it) with scores spec.attn_scale * q·k,
// soft-capped when spec.attn_logit_softcap is set: out [T][q_dim]. Query head h reads KV head
// h / (n_heads / n_kv_heads).
void attention(const ModelConfig& c, size_t layer, const LayerSpec& spec, const Batch& batch,
               const float* q, const float* k, const float* v, kv::KvCache& cache, float* out,
               ThreadPool& pool);

// gate[t] = act(gate[t]) * up[t]: [T][n], act SiLU (SwiGLU) or tanh GELU (GeGLU); with plain
// GELU gate[t] = gelu(gate[t]) and `up` is not read.
void activation_rows(Activation act, float* gate, const float* up, size_t n_tokens, size_t n);

// x[t] += y[t]: [T][n]
void residual_add(float* x, const float* y, size_t n_tokens, size_t n);

}  // namespace strata::model
