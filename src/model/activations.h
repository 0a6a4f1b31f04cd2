// Scratch tensors of one forward pass, sized for the largest batch seen so far and reused.
#pragma once

#include "base/aligned.h"
#include "model/config.h"

namespace strata::model {

struct Activations {
  size_t capacity = 0;       // tokens the buffers hold
  AlignedBuffer<float> x;    // [T][n_embd] residual stream
  AlignedBuffer<float> xb;   // [T][n_embd] normalized input of a block
  AlignedBuffer<float> q;    // [T][q_dim]
  AlignedBuffer<float> k;    // [T][kv_dim]
  AlignedBuffer<float> v;    // [T][kv_dim]
  AlignedBuffer<float> att;  // [T][q_dim] attention output before W_o
  AlignedBuffer<float> out;  // [T][n_embd] a block's output before the residual add
  AlignedBuffer<float> hb;   // [T][n_ff] FFN gate, then silu(gate) * up
  AlignedBuffer<float> hb2;  // [T][n_ff] FFN up

  void reserve(size_t n_tokens, const ModelConfig& c) {
    if (n_tokens <= capacity) return;
    capacity = n_tokens;
    x = AlignedBuffer<float>(n_tokens * c.n_embd);
    xb = AlignedBuffer<float>(n_tokens * c.n_embd);
    q = AlignedBuffer<float>(n_tokens * c.q_dim());
    k = AlignedBuffer<float>(n_tokens * c.kv_dim());
    v = AlignedBuffer<float>(n_tokens * c.kv_dim());
    att = AlignedBuffer<float>(n_tokens * c.q_dim());
    out = AlignedBuffer<float>(n_tokens * c.n_embd);
    hb = AlignedBuffer<float>(n_tokens * c.n_ff);
    hb2 = AlignedBuffer<float>(n_tokens * c.n_ff);
  }
};

}  // namespace strata::model
