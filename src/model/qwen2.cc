// Qwen2 / Qwen2.5: the Llama block with biases on the Q, K and V projections and NeoX-style RoPE
// (the rope style is set from the architecture in config.cc).
#include "model/blocks.h"
#include "model/forward.h"

namespace strata::model {

void forward_qwen2(const ForwardContext& ctx) {
  const ModelConfig& c = ctx.c;
  size_t T = ctx.batch.size();  // rows in flight; the last layer keeps only logit rows
  Activations& a = ctx.a;

  embed_tokens(ctx.w.token_embd, ctx.batch, a.x.data());  // x: [T][n_embd]
  for (size_t l = 0; l < c.n_layers; ++l) {
    const LayerWeights& lw = ctx.w.layers[l];
    // Attention: x += W_o · attention(RoPE(W_q · norm(x) + b_q), RoPE(W_k · norm(x) + b_k), W_v ·
    // norm(x) + b_v)
    rms_norm_rows(a.x.data(), lw.attn_norm, T, c.n_embd, c.rms_eps, a.xb.data());
    linear_shared_input({{lw.wq, a.q.data()},   // q: [T][n_heads * head_dim]
                         {lw.wk, a.k.data()},   // k: [T][n_kv_heads * head_dim]
                         {lw.wv, a.v.data()}},  // v: [T][n_kv_heads * head_dim]
                        a.xb.data(), T, ctx.pool);
    add_bias_rows(a.q.data(), lw.bq, T);
    add_bias_rows(a.k.data(), lw.bk, T);
    add_bias_rows(a.v.data(), lw.bv, T);
    apply_rope(c, ctx.w.rope_freqs, ctx.batch, a.q.data(), a.k.data());
    attention(c, l, ctx.batch, a.q.data(), a.k.data(), a.v.data(), ctx.cache, a.att.data(),
              ctx.pool);                                     // att: [T][n_heads * head_dim]
    linear(lw.wo, a.att.data(), T, a.out.data(), ctx.pool);  // out: [T][n_embd]
    if (l + 1 == c.n_layers) T = keep_logit_rows(ctx);       // x, out: [n_out][n_embd]
    residual_add(a.x.data(), a.out.data(), T, c.n_embd);

    feed_forward(ctx, lw, T);  // x += W_down · (silu(W_gate · norm(x)) * (W_up · norm(x)))
  }
  output_logits(ctx, T);
}

}  // namespace strata::model
