#include "model/weights.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "gguf/names.h"
#include "kernels/interleave.h"
#include "kernels/matmul.h"

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

  Result<Matrix> matrix(const std::string& name, size_t rows, size_t cols) {
    STRATA_ASSIGN_OR_RETURN(const gguf::TensorInfo* t, file_.require_tensor(name));
    STRATA_RETURN_IF_ERROR(check_shape(*t, {cols, rows}));
    if (!kernels::supports_weight_type(t->type)) {
      return make_error(ErrorCode::kUnsupported, "tensor " + gguf::quoted_name(name) + ": type " +
                                                     std::string(dtype_name(t->type)) +
                                                     " is not supported for weight matrices");
    }
    return Matrix{t->type, kernels::WeightLayout::kRows, t->data, rows, cols};
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

  Result<Vector> optional_vector(const std::string& name, size_t n) {
    if (!file_.find_tensor(name)) return Vector();
    return vector(name, n);
  }

 private:
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

}  // namespace

Result<ModelWeights> load_weights(const gguf::File& file, const ModelConfig& c) {
  ModelWeights w;
  Loader load(file);
  STRATA_ASSIGN_OR_RETURN(w.token_embd, load.matrix("token_embd.weight", c.n_vocab, c.n_embd));
  STRATA_ASSIGN_OR_RETURN(w.output_norm, load.vector("output_norm.weight", c.n_embd));
  if (file.find_tensor("output.weight")) {
    STRATA_ASSIGN_OR_RETURN(w.output, load.matrix("output.weight", c.n_vocab, c.n_embd));
  } else {
    w.output = w.token_embd;  // tied embeddings
  }
  STRATA_ASSIGN_OR_RETURN(w.rope_freqs, load.optional_vector("rope_freqs.weight", c.rope_dims / 2));
  // RoPE divides each frequency by its rope_freqs entry: a zero, negative or non-finite one
  // makes every angle, and so every logit, NaN.
  for (size_t i = 0; i < w.rope_freqs.size(); ++i) {
    if (!std::isfinite(w.rope_freqs[i]) || !(w.rope_freqs[i] > 0)) {
      return make_error(ErrorCode::kInvalidFile,
                        "tensor 'rope_freqs.weight': element " + std::to_string(i) + " is " +
                            std::to_string(w.rope_freqs[i]) + ", must be a finite number above 0");
    }
  }

  w.layers.resize(c.n_layers);
  for (size_t i = 0; i < c.n_layers; ++i) {
    LayerWeights& l = w.layers[i];
    const std::string p = "blk." + std::to_string(i) + ".";
    STRATA_ASSIGN_OR_RETURN(l.attn_norm, load.vector(p + "attn_norm.weight", c.n_embd));
    STRATA_ASSIGN_OR_RETURN(l.wq, load.matrix(p + "attn_q.weight", c.q_dim(), c.n_embd));
    STRATA_ASSIGN_OR_RETURN(l.wk, load.matrix(p + "attn_k.weight", c.kv_dim(), c.n_embd));
    STRATA_ASSIGN_OR_RETURN(l.wv, load.matrix(p + "attn_v.weight", c.kv_dim(), c.n_embd));
    STRATA_ASSIGN_OR_RETURN(l.wo, load.matrix(p + "attn_output.weight", c.n_embd, c.q_dim()));
    if (c.arch == Architecture::kQwen2) {
      STRATA_ASSIGN_OR_RETURN(l.bq, load.vector(p + "attn_q.bias", c.q_dim()));
      STRATA_ASSIGN_OR_RETURN(l.bk, load.vector(p + "attn_k.bias", c.kv_dim()));
      STRATA_ASSIGN_OR_RETURN(l.bv, load.vector(p + "attn_v.bias", c.kv_dim()));
    }
    if (c.arch == Architecture::kQwen3) {
      STRATA_ASSIGN_OR_RETURN(l.q_norm, load.vector(p + "attn_q_norm.weight", c.head_dim));
      STRATA_ASSIGN_OR_RETURN(l.k_norm, load.vector(p + "attn_k_norm.weight", c.head_dim));
    }
    STRATA_ASSIGN_OR_RETURN(l.ffn_norm, load.vector(p + "ffn_norm.weight", c.n_embd));
    STRATA_ASSIGN_OR_RETURN(l.w_gate, load.matrix(p + "ffn_gate.weight", c.n_ff, c.n_embd));
    STRATA_ASSIGN_OR_RETURN(l.w_up, load.matrix(p + "ffn_up.weight", c.n_ff, c.n_embd));
    STRATA_ASSIGN_OR_RETURN(l.w_down, load.matrix(p + "ffn_down.weight", c.n_embd, c.n_ff));
  }
  // A generated token reads every layer matrix and the output projection once; the embedding
  // table only one row.
  auto bytes = [](const Matrix& m) { return m.rows * row_bytes(m.type, m.cols); };
  w.bytes = bytes(w.output);
  for (const LayerWeights& l : w.layers) {
    for (const Matrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      w.bytes += bytes(*m);
    }
  }
  return w;
}

size_t interleave_weights(gguf::File& file, ModelWeights& w, ThreadPool& pool) {
  uint8_t* writable = file.mutable_image_data();
  if (writable == nullptr) return 0;
  const uint8_t* image = file.image().data();
  // The embedding table is only read a row at a time, unless it is also the output projection.
  std::vector<Matrix*> matrices = {&w.output};
  for (LayerWeights& l : w.layers) {
    for (Matrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      matrices.push_back(m);
    }
  }
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
    if (w.token_embd.data == m->data) w.token_embd.layout = m->layout;  // tied embeddings
    ++count;
  }
  return count;
}

}  // namespace strata::model
