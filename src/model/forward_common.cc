#include <algorithm>
#include <vector>

#include "model/blocks.h"
#include "model/forward.h"

namespace strata::model {

void feed_forward(const ForwardContext& ctx, const LayerWeights& lw, size_t n_rows) {
  const ModelConfig& c = ctx.c;
  const size_t T = n_rows;
  Activations& a = ctx.a;
  if (T == 0) return;
  rms_norm_rows(a.x.data(), lw.ffn_norm, T, c.n_embd, c.rms_eps, a.xb.data());
  linear_shared_input({{lw.w_gate, a.hb.data()},  // hb: [T][n_ff]
                       {lw.w_up, a.hb2.data()}},  // hb2: [T][n_ff]
                      a.xb.data(), T, ctx.pool);
  swiglu_rows(a.hb.data(), a.hb2.data(), T, c.n_ff);
  linear(lw.w_down, a.hb.data(), T, a.out.data(), ctx.pool);  // out: [T][n_embd]
  residual_add(a.x.data(), a.out.data(), T, c.n_embd);
}

size_t keep_logit_rows(const ForwardContext& ctx) {
  const size_t n = ctx.c.n_embd;
  Activations& a = ctx.a;
  size_t n_out = 0;
  for (size_t t = 0; t < ctx.batch.size(); ++t) {
    if (!ctx.batch[t].want_logits) continue;
    if (t != n_out) {
      std::copy_n(a.x.data() + t * n, n, a.x.data() + n_out * n);
      std::copy_n(a.out.data() + t * n, n, a.out.data() + n_out * n);
    }
    ++n_out;
  }
  return n_out;
}

void output_logits(const ForwardContext& ctx, size_t n_out) {
  const ModelConfig& c = ctx.c;
  Activations& a = ctx.a;
  if (n_out == 0) return;
  rms_norm_rows(a.x.data(), ctx.w.output_norm, n_out, c.n_embd, c.rms_eps, a.xb.data());
  linear(ctx.w.output, a.xb.data(), n_out, ctx.logits, ctx.pool);  // [n_out][n_vocab]
}

}  // namespace strata::model
