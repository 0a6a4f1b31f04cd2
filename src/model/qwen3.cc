// Qwen3: the Llama block with a per-head RMSNorm of Q and K before RoPE (no QKV biases) and
// NeoX-style RoPE (set from the architecture in config.cc).
#include "model/blocks.h"
#include "model/forward.h"

namespace strata::model {

void forward_qwen3(const ForwardContext& ctx) {
  const ModelConfig& c = ctx.c;
  size_t T = ctx.batch.size();  // rows in flight; the last layer keeps only logit rows
  Activations& a = ctx.a;

  embed_tokens(ctx.w.token_embd, ctx.batch, a.x.data());  // x: [T][n_embd]
  for (size_t l = 0; l < c.n_layers; ++l) {
    const LayerWeights& lw = ctx.w.layers[l];
    // Attention: x += W_o · attention(RoPE(norm_q(W_q · norm(x))), RoPE(norm_k(W_k · norm(x))), W_v
    // · norm(x))
    rms_norm_rows(a.x.data(), lw.attn_norm, T, c.n_embd, c.rms_eps, a.xb.data());
    linear_shared_input({{lw.wq, a.q.data()},   // q: [T][n_heads * head_dim]
                         {lw.wk, a.k.data()},   // k: [T][n_kv_heads * head_dim]
                         {lw.wv, a.v.data()}},  // v: [T][n_kv_heads * head_dim]
                        a.xb.data(), T, ctx.pool);
    rms_norm_heads(a.q.data(), lw.q_norm, T, c.n_heads, c.head_dim, c.rms_eps);
    rms_norm_heads(a.k.data(), lw.k_norm, T, c.n_kv_heads, c.head_dim, c.rms_eps);
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
