// One decoder layer for every architecture, read top to bottom: what differs between
// architectures is data (the layer's LayerSpec and which weights are present), not code.
#include <algorithm>

#include "model/blocks.h"
#include "model/forward.h"

namespace strata::model {
namespace {

// x += post_norm(W_o · attention(RoPE(qk_norm(W_q · norm(x) + b_q)),
//                                RoPE(qk_norm(W_k · norm(x) + b_k)), W_v · norm(x) + b_v) + b_o)
// over T rows (BERT: x = norm(x + ...) instead); the last layer then keeps only the output rows.
// Returns the rows in flight.
size_t attention_block(const ForwardContext& ctx, size_t l, size_t T) {
  const ModelConfig& c = ctx.c;
  const LayerSpec& s = c.layers[l];
  const LayerWeights& lw = ctx.w.layers[l];
  Activations& a = ctx.a;
  const float* in = a.x.data();  // post-norm-only placement multiplies x itself
  if (s.pre_norm()) {
    norm_rows(s.norm, s.norm_eps, a.x.data(), lw.attn_norm, T, c.n_embd, a.xb.data());
    in = a.xb.data();  // xb: [T][n_embd]
  }
  linear_shared_input({{lw.wq, a.q.data()},   // q: [T][n_heads * head_dim]
                       {lw.wk, a.k.data()},   // k: [T][n_kv_heads * head_dim]
                       {lw.wv, a.v.data()}},  // v: [T][n_kv_heads * head_dim]
                      in, T, ctx.pool);
  add_bias_rows(a.q.data(), lw.bq, T);  // q += b_q, when the model has it
  add_bias_rows(a.k.data(), lw.bk, T);  // k += b_k
  add_bias_rows(a.v.data(), lw.bv, T);  // v += b_v
  if (s.qk_norm) {                      // per head, or over the whole row as one "head"
    const size_t q_heads = s.qk_norm_full_width ? 1 : c.n_heads;
    const size_t kv_heads = s.qk_norm_full_width ? 1 : c.n_kv_heads;
    rms_norm_heads(a.q.data(), lw.q_norm, T, q_heads, c.q_dim() / q_heads, s.norm_eps);
    rms_norm_heads(a.k.data(), lw.k_norm, T, kv_heads, c.kv_dim() / kv_heads, s.norm_eps);
  }
  if (s.rope) apply_rope(s, c, ctx.w.rope_factors(), ctx.batch, a.q.data(), a.k.data());
  scale_queries_by_position(s, c, ctx.batch, a.q.data());  // q *= temperature(pos) (Mistral 3)
  attention(c, l, s, ctx.batch, a.q.data(), a.k.data(), a.v.data(), ctx.cache, a.att.data(),
            ctx.pool);                                     // att: [T][n_heads * head_dim]
  linear(lw.wo, a.att.data(), T, a.out.data(), ctx.pool);  // out: [T][n_embd]
  add_bias_rows(a.out.data(), lw.bo, T);                   // out += b_o
  if (l + 1 == c.n_layers) T = keep_output_rows(ctx);      // x, out: [n_out][n_embd]
  if (s.post_norm()) {
    norm_rows(s.norm, s.norm_eps, a.out.data(), lw.attn_post_norm, T, c.n_embd, a.out.data());
  }
  scale_rows(a.out.data(), s.residual_scale, T * c.n_embd);  // out *= residual_scale (Granite)
  residual_add(a.x.data(), a.out.data(), T, c.n_embd);       // x: [T][n_embd]
  if (s.norm_after_residual()) {  // x = norm(x) (BERT's attn_output_norm)
    norm_rows(s.norm, s.norm_eps, a.x.data(), lw.attn_post_norm, T, c.n_embd, a.x.data());
  }
  return T;
}

// x += post_norm(W_down · (act(W_gate · norm(x)) * (W_up · norm(x) + b_up)) + b_down) over T
// rows; act is SiLU (SwiGLU) or tanh GELU (GeGLU). Plain GELU (BERT): W_down · gelu(W_up · x +
// b_up) + b_down, and x = norm(x + ...).
void feed_forward(const ForwardContext& ctx, size_t l, size_t T) {
  const ModelConfig& c = ctx.c;
  const LayerSpec& s = c.layers[l];
  const LayerWeights& lw = ctx.w.layers[l];
  Activations& a = ctx.a;
  if (T == 0) return;
  const float* in = a.x.data();  // post-norm-only placement multiplies x itself
  if (s.pre_norm()) {
    norm_rows(s.norm, s.norm_eps, a.x.data(), lw.ffn_norm, T, c.n_embd, a.xb.data());
    in = a.xb.data();  // xb: [T][n_embd]
  }
  if (s.activation == Activation::kGelu) {
    linear(lw.w_up, in, T, a.hb.data(), ctx.pool);  // hb: [T][n_ff]
    add_bias_rows(a.hb.data(), lw.b_up, T);         // hb += b_up
  } else {
    linear_shared_input({{lw.w_gate, a.hb.data()},  // hb: [T][n_ff]
                         {lw.w_up, a.hb2.data()}},  // hb2: [T][n_ff]
                        in, T, ctx.pool);
    add_bias_rows(a.hb2.data(), lw.b_up, T);  // hb2 += b_up
  }
  activation_rows(s.activation, a.hb.data(), a.hb2.data(), T, c.n_ff);  // hb = act(hb) [* hb2]
  linear(lw.w_down, a.hb.data(), T, a.out.data(), ctx.pool);            // out: [T][n_embd]
  add_bias_rows(a.out.data(), lw.b_down, T);                            // out += b_down
  if (s.post_norm()) {
    norm_rows(s.norm, s.norm_eps, a.out.data(), lw.ffn_post_norm, T, c.n_embd, a.out.data());
  }
  scale_rows(a.out.data(), s.residual_scale, T * c.n_embd);  // out *= residual_scale (Granite)
  residual_add(a.x.data(), a.out.data(), T, c.n_embd);       // x: [T][n_embd]
  if (s.norm_after_residual()) {  // x = norm(x) (BERT's layer_output_norm)
    norm_rows(s.norm, s.norm_eps, a.x.data(), lw.ffn_post_norm, T, c.n_embd, a.x.data());
  }
}

// The final norm of the n_out kept rows (none in encoders: their last block ends in one), then the
// hidden states of the rows that want them and (for logits) the output projection of the rows that
// want logits, and the final multipliers.
void output(const ForwardContext& ctx, size_t n_out) {
  const ModelConfig& c = ctx.c;
  Activations& a = ctx.a;
  if (n_out == 0) return;
  if (ctx.w.output_norm.weight.size() != 0) {
    rms_norm_rows(a.x.data(), ctx.w.output_norm.weight, n_out, c.n_embd, c.rms_eps, a.xb.data());
  } else {
    std::copy_n(a.x.data(), n_out * c.n_embd, a.xb.data());
  }
  // Kept row i is the i-th entry that wants output. Hidden rows are copied out; logit rows move
  // to the front of xb (row n_logits <= i: in place, in order).
  size_t i = 0, n_hidden = 0, n_logits = 0;
  for (const BatchEntry& e : ctx.batch) {
    if (!e.want_logits && !e.want_hidden) continue;
    const float* row = a.xb.data() + i++ * c.n_embd;
    if (e.want_hidden) std::copy_n(row, c.n_embd, ctx.hidden + n_hidden++ * c.n_embd);
    if (!e.want_logits) continue;
    float* dst = ctx.kind == OutputKind::kHidden ? ctx.out : a.xb.data();
    std::copy_n(row, c.n_embd, dst + n_logits++ * c.n_embd);
  }
  if (ctx.kind == OutputKind::kHidden || n_logits == 0) return;     // out: [n_logits][n_embd]
  linear(ctx.w.output, a.xb.data(), n_logits, ctx.out, ctx.pool);   // out: [n_logits][n_vocab]
  scale_rows(ctx.out, 1.0f / c.logit_scale, n_logits * c.n_vocab);  // out /= logit_scale (Granite)
  soft_cap(ctx.out, n_logits * c.n_vocab, c.final_logit_softcap);
}

}  // namespace

void forward(const ForwardContext& ctx) {
  const ModelWeights& w = ctx.w;
  size_t T = ctx.batch.size();  // rows in flight; the last layer keeps only output rows
  float* x = ctx.a.x.data();
  embed_tokens(w.token_embd, ctx.batch, ctx.c.embedding_scale, x);  // x: [T][n_embd]
  if (ctx.c.encoder) {  // x = norm(x + token_types[0] + position_embd[pos])
    add_input_embeddings(w, ctx.batch, x);
    norm_rows(NormKind::kLayer, ctx.c.layers[0].norm_eps, x, w.input_norm, T, ctx.c.n_embd, x);
  }
  for (size_t l = 0; l < ctx.c.n_layers; ++l) T = decoder_layer(ctx, l, T);
  output(ctx, T);  // out: [n_logits][n_vocab] (or [n_embd]); hidden: [n_hidden][n_embd]
}

size_t decoder_layer(const ForwardContext& ctx, size_t l, size_t T) {
  T = attention_block(ctx, l, T);  // x += attention(norm(x))
  feed_forward(ctx, l, T);         // x += ffn(norm(x))
  return T;
}

size_t keep_output_rows(const ForwardContext& ctx) {
  const size_t n = ctx.c.n_embd;
  Activations& a = ctx.a;
  size_t n_out = 0;
  for (size_t t = 0; t < ctx.batch.size(); ++t) {
    if (!ctx.batch[t].want_logits && !ctx.batch[t].want_hidden) continue;
    if (t != n_out) {
      std::copy_n(a.x.data() + t * n, n, a.x.data() + n_out * n);
      std::copy_n(a.out.data() + t * n, n, a.out.data() + n_out * n);
    }
    ++n_out;
  }
  return n_out;
}

}  // namespace strata::model
