#include "model/weights.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <string>

#include "gguf/names.h"
#include "kernels/interleave.h"
#include "kernels/matmul.h"
#include "model/architectures.h"

namespace strata::model {
namespace {

std::string shape_string(const std::vector<uint64_t>& dims) {
  std::string s = "{";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "}";
}

class Loader {
 public:
  explicit Loader(const gguf::File& file) : file_(file) {}

  bool has(const std::string& name) const { return file_.find_tensor(name) != nullptr; }

  Result<Matrix> matrix(const std::string& name, size_t rows, size_t cols) {
    STRATA_ASSIGN_OR_RETURN(const gguf::TensorInfo* t, weight_tensor(name, {cols, rows}));
    return Matrix::rows_of(t->type, t->data, rows, cols);
  }

  // A matrix of sum(rows) rows (GGUF dims {cols, sum(rows)}) as row-range views: the first
  // rows[0] rows, the next rows[1], ...
  Result<std::vector<Matrix>> row_views(const std::string& name, std::span<const size_t> rows,
                                        size_t cols) {
    size_t total = 0;
    for (size_t r : rows) total += r;
    STRATA_ASSIGN_OR_RETURN(const gguf::TensorInfo* t, weight_tensor(name, {cols, total}));
    std::vector<Matrix> views;
    const uint8_t* data = t->data;
    for (size_t r : rows) {
      views.push_back(Matrix::rows_of(t->type, data, r, cols));
      data += r * row_bytes(t->type, cols);
    }
    return views;
  }

  // A stack of n matrices of rows x cols (GGUF dims {cols, rows, n}).
  Result<ExpertMatrices> experts(const std::string& name, size_t rows, size_t cols, size_t n) {
    STRATA_ASSIGN_OR_RETURN(const gguf::TensorInfo* t, weight_tensor(name, {cols, rows, n}));
    return ExpertMatrices{Matrix::rows_of(t->type, t->data, rows, cols), n,
                          rows * row_bytes(t->type, cols)};
  }

  Result<Vector> vector(const std::string& name, size_t n) {
    STRATA_ASSIGN_OR_RETURN(const gguf::TensorInfo* t, file_.require_tensor(name));
    STRATA_RETURN_IF_ERROR(check_shape(*t, {n}));
    if (!kernels::supports_weight_type(t->type)) {
      return make_error(ErrorCode::kUnsupported, "tensor " + gguf::quoted_name(name) +
                                                     ": unsupported type " +
                                                     std::string(dtype_name(t->type)));
    }
    Vector v(n);
    kernels::dequantize_row(t->type, t->data, v.data(), n);
    return v;
  }

  // An absent tensor is an empty Vector; a present one is checked as vector() does.
  Result<Vector> optional_vector(const std::string& name, size_t n) {
    if (!has(name)) return Vector();
    return vector(name, n);
  }

  // As the architecture uses it: required, read when present, or not read at all.
  Result<Vector> vector(TensorUse use, const std::string& name, size_t n) {
    if (use == TensorUse::kIgnored) return Vector();
    if (use == TensorUse::kOptional) return optional_vector(name, n);
    return vector(name, n);
  }

  // `<name>.weight`, and for LayerNorm `<name>.bias`: [n] each.
  Result<Norm> norm(NormKind kind, const std::string& name, size_t n) {
    Norm norm;
    STRATA_ASSIGN_OR_RETURN(norm.weight, vector(name + ".weight", n));
    if (kind == NormKind::kLayer) {
      STRATA_ASSIGN_OR_RETURN(norm.bias, vector(name + ".bias", n));
    }
    return norm;
  }

  // Row 0 of a table of `cols` columns and any number of rows (GGUF dims {cols, rows}), as f32;
  // empty if the tensor is absent.
  Result<Vector> optional_first_row(const std::string& name, size_t cols) {
    const gguf::TensorInfo* t = file_.find_tensor(name);
    if (t == nullptr) return Vector();
    if (t->dims.size() != 2 || t->dims[0] != cols || t->dims[1] == 0) {
      return make_error(ErrorCode::kInvalidFile, "tensor " + gguf::quoted_name(name) + ": shape " +
                                                     shape_string(t->dims) + ", expected {" +
                                                     std::to_string(cols) + ", rows}");
    }
    STRATA_ASSIGN_OR_RETURN(t, weight_tensor(name, t->dims));
    Vector v(cols);
    kernels::dequantize_row(t->type, t->data, v.data(), cols);
    return v;
  }

 private:
  Result<const gguf::TensorInfo*> weight_tensor(const std::string& name,
                                                const std::vector<uint64_t>& dims) {
    STRATA_ASSIGN_OR_RETURN(const gguf::TensorInfo* t, file_.require_tensor(name));
    STRATA_RETURN_IF_ERROR(check_shape(*t, dims));
    if (!kernels::supports_weight_type(t->type)) {
      return make_error(ErrorCode::kUnsupported, "tensor " + gguf::quoted_name(name) + ": type " +
                                                     std::string(dtype_name(t->type)) +
                                                     " is not supported for weight matrices");
    }
    return t;
  }

  static Status check_shape(const gguf::TensorInfo& t, const std::vector<uint64_t>& want) {
    if (t.dims != want) {
      return make_error(ErrorCode::kInvalidFile, "tensor " + gguf::quoted_name(t.name) +
                                                     ": shape " + shape_string(t.dims) +
                                                     ", expected " + shape_string(want));
    }
    return ok_status();
  }

  const gguf::File& file_;
};

// Splits a fused bias [q_dim + 2 kv_dim] into bq, bk, bv.
void split_qkv_bias(const Vector& fused, const ModelConfig& c, LayerWeights& l) {
  Vector* parts[] = {&l.bq, &l.bk, &l.bv};
  const size_t sizes[] = {c.q_dim(), c.kv_dim(), c.kv_dim()};
  size_t offset = 0;
  for (size_t i = 0; i < 3; ++i) {
    *parts[i] = Vector(sizes[i]);
    std::copy_n(fused.data() + offset, sizes[i], parts[i]->data());
    offset += sizes[i];
  }
}

// Attention: the norm, q/k/v (split or fused attn_qkv), their biases and norms, the output.
Status load_attention(Loader& load, const std::string& p, const ModelConfig& c,
                      const ArchitectureInfo& arch, const LayerSpec& s, LayerWeights& l) {
  if (s.pre_norm()) {
    STRATA_ASSIGN_OR_RETURN(l.attn_norm, load.norm(s.norm, p + "attn_norm", c.n_embd));
  }
  if (load.has(p + "attn_qkv.weight")) {
    const size_t rows[] = {c.q_dim(), c.kv_dim(), c.kv_dim()};
    STRATA_ASSIGN_OR_RETURN(std::vector<Matrix> qkv,
                            load.row_views(p + "attn_qkv.weight", rows, c.n_embd));
    l.wq = qkv[0], l.wk = qkv[1], l.wv = qkv[2];
    STRATA_ASSIGN_OR_RETURN(
        Vector bias, load.vector(arch.qkv_bias, p + "attn_qkv.bias", c.q_dim() + 2 * c.kv_dim()));
    if (bias.size() != 0) split_qkv_bias(bias, c, l);
  } else {
    STRATA_ASSIGN_OR_RETURN(l.wq, load.matrix(p + "attn_q.weight", c.q_dim(), c.n_embd));
    STRATA_ASSIGN_OR_RETURN(l.wk, load.matrix(p + "attn_k.weight", c.kv_dim(), c.n_embd));
    STRATA_ASSIGN_OR_RETURN(l.wv, load.matrix(p + "attn_v.weight", c.kv_dim(), c.n_embd));
    STRATA_ASSIGN_OR_RETURN(l.bq, load.vector(arch.qkv_bias, p + "attn_q.bias", c.q_dim()));
    STRATA_ASSIGN_OR_RETURN(l.bk, load.vector(arch.qkv_bias, p + "attn_k.bias", c.kv_dim()));
    STRATA_ASSIGN_OR_RETURN(l.bv, load.vector(arch.qkv_bias, p + "attn_v.bias", c.kv_dim()));
  }
  STRATA_ASSIGN_OR_RETURN(l.wo, load.matrix(p + "attn_output.weight", c.n_embd, c.q_dim()));
  STRATA_ASSIGN_OR_RETURN(l.bo, load.vector(arch.out_bias, p + "attn_output.bias", c.n_embd));
  if (s.qk_norm) {
    const size_t q_width = s.qk_norm_full_width ? c.q_dim() : c.head_dim;
    const size_t k_width = s.qk_norm_full_width ? c.kv_dim() : c.head_dim;
    STRATA_ASSIGN_OR_RETURN(l.q_norm, load.vector(p + "attn_q_norm.weight", q_width));
    STRATA_ASSIGN_OR_RETURN(l.k_norm, load.vector(p + "attn_k_norm.weight", k_width));
  }
  if (s.post_norm() || s.norm_after_residual()) {
    const char* name = s.post_norm() ? "post_attention_norm" : "attn_output_norm";
    STRATA_ASSIGN_OR_RETURN(l.attn_post_norm, load.norm(s.norm, p + name, c.n_embd));
  }
  return ok_status();
}

// Feed-forward: the norm, gate and up (split or fused ffn_gate_up), down; or the router and
// expert stacks of a mixture of experts.
Status load_feed_forward(Loader& load, const std::string& p, const ModelConfig& c,
                         const ArchitectureInfo& arch, const LayerSpec& s, LayerWeights& l) {
  if (s.pre_norm()) {
    STRATA_ASSIGN_OR_RETURN(l.ffn_norm, load.norm(s.norm, p + "ffn_norm", c.n_embd));
  }
  if (c.n_experts > 0) {
    const size_t n = c.n_experts, ff = c.n_ff_expert;
    STRATA_ASSIGN_OR_RETURN(l.w_router, load.matrix(p + "ffn_gate_inp.weight", n, c.n_embd));
    STRATA_ASSIGN_OR_RETURN(l.gate_exps, load.experts(p + "ffn_gate_exps.weight", ff, c.n_embd, n));
    STRATA_ASSIGN_OR_RETURN(l.up_exps, load.experts(p + "ffn_up_exps.weight", ff, c.n_embd, n));
    STRATA_ASSIGN_OR_RETURN(l.down_exps, load.experts(p + "ffn_down_exps.weight", c.n_embd, ff, n));
  } else if (load.has(p + "ffn_gate_up.weight") ||
             (arch.up_holds_gate && !load.has(p + "ffn_gate.weight"))) {
    const size_t rows[] = {c.n_ff, c.n_ff};  // gate, then up
    const std::string name = load.has(p + "ffn_gate_up.weight") ? "ffn_gate_up" : "ffn_up";
    STRATA_ASSIGN_OR_RETURN(std::vector<Matrix> gate_up,
                            load.row_views(p + name + ".weight", rows, c.n_embd));
    l.w_gate = gate_up[0], l.w_up = gate_up[1];
  } else {
    if (s.activation != Activation::kGelu) {
      STRATA_ASSIGN_OR_RETURN(l.w_gate, load.matrix(p + "ffn_gate.weight", c.n_ff, c.n_embd));
    }
    STRATA_ASSIGN_OR_RETURN(l.w_up, load.matrix(p + "ffn_up.weight", c.n_ff, c.n_embd));
  }
  if (c.n_experts == 0) {
    STRATA_ASSIGN_OR_RETURN(l.w_down, load.matrix(p + "ffn_down.weight", c.n_embd, c.n_ff));
    STRATA_ASSIGN_OR_RETURN(l.b_up, load.vector(arch.ffn_bias, p + "ffn_up.bias", c.n_ff));
    STRATA_ASSIGN_OR_RETURN(l.b_down, load.vector(arch.ffn_bias, p + "ffn_down.bias", c.n_embd));
  }
  if (s.post_norm() || s.norm_after_residual()) {
    const char* name = s.post_norm() ? "post_ffw_norm" : "layer_output_norm";
    STRATA_ASSIGN_OR_RETURN(l.ffn_post_norm, load.norm(s.norm, p + name, c.n_embd));
  }
  return ok_status();
}

Status check_rope_freqs(const Vector& rope_freqs, const std::string& name) {
  // RoPE divides each frequency by its rope_freqs entry: a zero, negative or non-finite one
  // makes every angle, and so every logit, NaN.
  for (size_t i = 0; i < rope_freqs.size(); ++i) {
    if (!std::isfinite(rope_freqs[i]) || !(rope_freqs[i] > 0)) {
      return make_error(ErrorCode::kInvalidFile,
                        "tensor '" + name + "': element " + std::to_string(i) + " is " +
                            std::to_string(rope_freqs[i]) + ", must be a finite number above 0");
    }
  }
  return ok_status();
}

// The matrices a generated token reads once each: every layer's and the output projection (the
// embedding table only one row).
std::vector<Matrix*> streamed_matrices(ModelWeights& w) {
  std::vector<Matrix*> matrices;
  if (w.output.data != nullptr) matrices.push_back(&w.output);
  for (LayerWeights& l : w.layers) {
    for (Matrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      if (m->data != nullptr) matrices.push_back(m);
    }
  }
  return matrices;
}

}  // namespace

Result<ModelWeights> load_weights(const gguf::File& file, const ModelConfig& c) {
  const ArchitectureInfo* arch = find_architecture(c.arch_name);
  if (arch == nullptr || c.layers.size() != c.n_layers) {
    return make_error(ErrorCode::kInvalidArgument,
                      "load_weights: a configuration read_config did not fill");
  }
  ModelWeights w;
  Loader load(file);
  STRATA_ASSIGN_OR_RETURN(w.token_embd, load.matrix("token_embd.weight", c.n_vocab, c.n_embd));
  if (c.learned_positions) {
    STRATA_ASSIGN_OR_RETURN(w.position_embd,
                            load.matrix("position_embd.weight", c.n_ctx_train, c.n_embd));
  }
  if (c.encoder) {
    STRATA_ASSIGN_OR_RETURN(w.token_type, load.optional_first_row("token_types.weight", c.n_embd));
    STRATA_ASSIGN_OR_RETURN(w.input_norm, load.norm(NormKind::kLayer, "token_embd_norm", c.n_embd));
  } else {
    STRATA_ASSIGN_OR_RETURN(w.output_norm, load.norm(NormKind::kRms, "output_norm", c.n_embd));
    if (load.has("output.weight")) {
      STRATA_ASSIGN_OR_RETURN(w.output, load.matrix("output.weight", c.n_vocab, c.n_embd));
    } else {
      w.output = w.token_embd;  // tied embeddings
    }
  }
  STRATA_ASSIGN_OR_RETURN(w.rope_freqs, load.optional_vector("rope_freqs.weight", c.rope_dims / 2));
  STRATA_ASSIGN_OR_RETURN(w.rope_long,
                          load.optional_vector("rope_factors_long.weight", c.rope_dims / 2));
  STRATA_ASSIGN_OR_RETURN(w.rope_short,
                          load.optional_vector("rope_factors_short.weight", c.rope_dims / 2));
  STRATA_RETURN_IF_ERROR(check_rope_freqs(w.rope_freqs, "rope_freqs.weight"));
  STRATA_RETURN_IF_ERROR(check_rope_freqs(w.rope_long, "rope_factors_long.weight"));
  STRATA_RETURN_IF_ERROR(check_rope_freqs(w.rope_short, "rope_factors_short.weight"));

  w.layers.resize(c.n_layers);
  for (size_t i = 0; i < c.n_layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    STRATA_RETURN_IF_ERROR(load_attention(load, p, c, *arch, c.layers[i], w.layers[i]));
    STRATA_RETURN_IF_ERROR(load_feed_forward(load, p, c, *arch, c.layers[i], w.layers[i]));
  }
  for (const Matrix* m : streamed_matrices(w)) w.bytes += m->rows * row_bytes(m->type, m->cols);
  return w;
}

size_t interleave_weights(gguf::File& file, ModelWeights& w, ThreadPool& pool) {
  uint8_t* writable = file.mutable_image_data();
  if (writable == nullptr) return 0;
  const uint8_t* image = file.image().data();
  // The embedding table is only read a row at a time, unless it is also the output projection.
  std::vector<Matrix*> matrices = streamed_matrices(w);
  size_t count = 0;
  for (Matrix* m : matrices) {
    if (kernels::preferred_layout(m->type, m->rows, m->cols) !=
        kernels::WeightLayout::kInterleaved) {
      continue;
    }
    uint8_t* data = writable + (static_cast<const uint8_t*>(m->data) - image);
    // Tasks of 16 groups: a few hundred KB each, enough to hide the task hand-off.
    constexpr size_t kGroupsPerTask = 16;
    const size_t groups = m->rows / kernels::kInterleaveRows;
    pool.parallel_for((groups + kGroupsPerTask - 1) / kGroupsPerTask, [&](size_t task, size_t) {
      const size_t begin = task * kGroupsPerTask;
      kernels::interleave_groups_in_place(m->type, data, m->cols, begin,
                                          std::min(groups, begin + kGroupsPerTask));
    });
    m->layout = kernels::WeightLayout::kInterleaved;
    m->kernel = kernels::select_matmul_kernel(m->type, m->layout, m->cols);
    if (w.token_embd.data == m->data) {  // tied embeddings
      w.token_embd.layout = m->layout;
      w.token_embd.kernel = m->kernel;
    }
    ++count;
  }
  return count;
}

}  // namespace strata::model
