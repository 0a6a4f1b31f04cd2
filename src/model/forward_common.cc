#include <vector>

#include "model/blocks.h"
#include "model/forward.h"

namespace strata::model {

void feed_forward(const ForwardContext& ctx, const LayerWeights& lw) {
  const ModelConfig& c = ctx.c;
  const size_t T = ctx.batch.size();
  Activations& a = ctx.a;
  rms_norm_rows(a.x.data(), lw.ffn_norm, T, c.n_embd, c.rms_eps, a.xb.data());
  linear(lw.w_gate, a.xb.data(), T, a.hb.data(), ctx.pool);  // hb: [T][n_ff]
  linear(lw.w_up, a.xb.data(), T, a.hb2.data(), ctx.pool);   // hb2: [T][n_ff]
  swiglu_rows(a.hb.data(), a.hb2.data(), T, c.n_ff);
  linear(lw.w_down, a.hb.data(), T, a.out.data(), ctx.pool);  // out: [T][n_embd]
  residual_add(a.x.data(), a.out.data(), T, c.n_embd);
}

void output_logits(const ForwardContext& ctx) {
  const ModelConfig& c = ctx.c;
  Activations& a = ctx.a;
  // Gather the rows that want logits into xb: [n_out][n_embd], normalized.
  size_t n_out = 0;
  for (size_t t = 0; t < ctx.batch.size(); ++t) {
    if (!ctx.batch[t].want_logits) continue;
    rms_norm_rows(a.x.data() + t * c.n_embd, ctx.w.output_norm, 1, c.n_embd, c.rms_eps,
                  a.xb.data() + n_out * c.n_embd);
    ++n_out;
  }
  if (n_out > 0)
    linear(ctx.w.output, a.xb.data(), n_out, ctx.logits, ctx.pool);  // [n_out][n_vocab]
}

}  // namespace strata::model
