"""A Llama decoder in plain torch 1.13, laid out as GGUF's llama tensors so export is a copy.

RoPE uses the interleaved-pair convention of GGML's normal mode (what llama.cpp and strata apply
to architecture "llama"): dimensions (2i, 2i+1) of a head rotate together by pos * base^(-2i/d).
Trained this way, Q and K go to GGUF as they are; weights trained with the rotate-half (NeoX)
convention would need llama.cpp's row permutation instead.

Query head h reads KV head h // (n_heads / n_kv_heads), as GGML's broadcast does.
Position ids are an input, so training can shift them (PoSE) without changing the tokens.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint


@dataclass
class ModelConfig:
    vocab_size: int = 4096
    dim: int = 384
    n_layers: int = 6
    n_heads: int = 6
    n_kv_heads: int = 2
    head_dim: int = 64
    ffn_dim: int = 1024
    norm_eps: float = 1e-5
    rope_base: float = 500000.0
    context_length: int = 8192

    def to_dict(self) -> dict:
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(pos: torch.Tensor, head_dim: int, base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of pos * base^(-2i/d), shape (B, T, 1, d/2), angles formed in float64."""
    inv_freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    angles = pos.to(torch.float64)[..., None] * inv_freq
    return angles.cos().float()[:, :, None, :], angles.sin().float()[:, :, None, :]


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x: (B, T, H, d); rotates the pairs (2i, 2i+1)."""
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)


class Attention(nn.Module):
    def __init__(self, c: ModelConfig):
        super().__init__()
        self.c = c
        self.wq = nn.Linear(c.dim, c.n_heads * c.head_dim, bias=False)
        self.wk = nn.Linear(c.dim, c.n_kv_heads * c.head_dim, bias=False)
        self.wv = nn.Linear(c.dim, c.n_kv_heads * c.head_dim, bias=False)
        self.wo = nn.Linear(c.n_heads * c.head_dim, c.dim, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                query_chunk: int = 0) -> torch.Tensor:
        c = self.c
        B, T, _ = x.shape
        q = apply_rope(self.wq(x).view(B, T, c.n_heads, c.head_dim), cos, sin)
        k = apply_rope(self.wk(x).view(B, T, c.n_kv_heads, c.head_dim), cos, sin)
        v = self.wv(x).view(B, T, c.n_kv_heads, c.head_dim)
        group = c.n_heads // c.n_kv_heads
        q = q.transpose(1, 2)  # (B, H, T, d)
        k = k.transpose(1, 2).repeat_interleave(group, dim=1)
        v = v.transpose(1, 2).repeat_interleave(group, dim=1)
        scale = 1.0 / math.sqrt(c.head_dim)
        step = query_chunk or T
        outs = []
        for s in range(0, T, step):  # chunks of queries bound the score matrix at long contexts
            e = min(T, s + step)
            scores = torch.matmul(q[:, :, s:e], k[:, :, :e].transpose(-1, -2)) * scale
            mask = torch.ones(e - s, e, dtype=torch.bool).triu(s + 1)
            scores = scores.masked_fill(mask, float("-inf"))
            outs.append(torch.matmul(F.softmax(scores, dim=-1), v[:, :, :e]))
        out = torch.cat(outs, dim=2) if len(outs) > 1 else outs[0]
        return self.wo(out.transpose(1, 2).reshape(B, T, c.n_heads * c.head_dim))


class FeedForward(nn.Module):
    def __init__(self, c: ModelConfig):
        super().__init__()
        self.w_gate = nn.Linear(c.dim, c.ffn_dim, bias=False)
        self.w_up = nn.Linear(c.dim, c.ffn_dim, bias=False)
        self.w_down = nn.Linear(c.ffn_dim, c.dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))


class Block(nn.Module):
    def __init__(self, c: ModelConfig):
        super().__init__()
        self.attn_norm = RMSNorm(c.dim, c.norm_eps)
        self.attn = Attention(c)
        self.ffn_norm = RMSNorm(c.dim, c.norm_eps)
        self.ffn = FeedForward(c)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                query_chunk: int = 0) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x), cos, sin, query_chunk)
        return x + self.ffn(self.ffn_norm(x))


class Llama(nn.Module):
    def __init__(self, c: ModelConfig):
        super().__init__()
        self.c = c
        self.tok_embeddings = nn.Embedding(c.vocab_size, c.dim)
        self.layers = nn.ModuleList(Block(c) for _ in range(c.n_layers))
        self.norm = RMSNorm(c.dim, c.norm_eps)
        self.output = nn.Linear(c.dim, c.vocab_size, bias=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """GPT-2 style: N(0, 0.02), the projections into the residual stream scaled by 1/sqrt(2L)."""
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02
                if name.endswith("wo.weight") or name.endswith("w_down.weight"):
                    std /= math.sqrt(2 * self.c.n_layers)
                nn.init.normal_(p, mean=0.0, std=std)

    def forward(self, tokens: torch.Tensor, pos: torch.Tensor | None = None,
                grad_checkpoint: bool = False, query_chunk: int = 0,
                last_only: bool = False) -> torch.Tensor:
        """tokens, pos: (B, T) int64; returns logits (B, T, V) (or (B, 1, V) with last_only)."""
        x, cos, sin = self.residual_before(len(self.layers), tokens, pos, grad_checkpoint,
                                           query_chunk)
        if last_only:
            x = x[:, -1:]
        return self.output(self.norm(x))

    def residual_before(self, layer: int, tokens: torch.Tensor, pos: torch.Tensor | None = None,
                        grad_checkpoint: bool = False, query_chunk: int = 0):
        """The residual stream entering `layer` (B, T, dim), and the RoPE tables of pos."""
        if pos is None:
            pos = torch.arange(tokens.shape[1])[None].expand_as(tokens)
        cos, sin = rope_tables(pos, self.c.head_dim, self.c.rope_base)
        x = self.tok_embeddings(tokens)
        for blk in self.layers[:layer]:
            if grad_checkpoint and self.training:
                x = checkpoint(blk, x, cos, sin, query_chunk)
            else:
                x = blk(x, cos, sin, query_chunk)
        return x, cos, sin

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


# --- Hand-wired induction circuit (an initialization; the architecture is unchanged) ----------
#
# Trained from random weights, the testbed models never found the induction circuit retrieval
# rests on (a previous-token head in an early layer and a head in a later one that matches the
# current token against it and copies what followed): thousands of steps of task rows left
# answer digits at chance. Set at initialization instead, the circuit is there from step 0 and
# training adapts it (tools/train/README.md, "Induction at initialization").

def prev_token_weights(base: float, head_dim: int, pairs: int, max_dist: int = 8192,
                       iters: int = 1500) -> tuple[list[float], float]:
    """Weights w_p >= 0 (sum 1) of RoPE pairs 0..pairs-1 so that S(m) = sum_p w_p cos((1-m) th_p)
    peaks at m = 1 with the largest margin over every other distance 0..max_dist; and the margin.
    Deterministic (float64, fixed start)."""
    th = torch.tensor([base ** (-2 * p / head_dim) for p in range(pairs)], dtype=torch.float64)
    m = torch.arange(0, max_dist + 1, dtype=torch.float64)
    m = m[m != 1]
    C = torch.cos((1 - m)[:, None] * th[None, :])
    z = torch.zeros(pairs, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([z], lr=0.05)
    with torch.enable_grad():
        for _ in range(iters):
            loss = torch.logsumexp(200 * (C @ torch.softmax(z, 0)), 0) / 200
            opt.zero_grad()
            loss.backward()
            opt.step()
    w = torch.softmax(z.detach(), 0)
    return w.tolist(), float(1 - (C @ w).max())


def positional_pairs(w: list[float], base: float, head_dim: int, scale: float,
                     x0: float) -> list[tuple[int, float, float]]:
    """(p, th_p, amp_p) for the RoPE pairs of a positional head reading the constant dimension
    (x0 after the norm), with pair weights w: x0^2 * amp_p^2 / sqrt(d) = scale * w_p."""
    return [(p, base ** (-2 * p / head_dim), math.sqrt(8 * scale * w_p) / x0)
            for p, w_p in enumerate(w)]


def set_positional_keys(wk: torch.Tensor, row: int, pairs) -> None:
    """Key rows from `row`: pair p is (amp cos th, amp sin th) times the constant, the phase of
    one position."""
    for p, th, amp in pairs:
        wk[row + 2 * p, 0] = amp * math.cos(th)
        wk[row + 2 * p + 1, 0] = amp * math.sin(th)


def set_positional_query(wq: torch.Tensor, row: int, pairs, dist: int) -> None:
    """Query rows from `row` that, against set_positional_keys' keys, score
    sum_p amp_p^2 cos((t - j - dist) th_p): a peak at distance dist."""
    for p, th, amp in pairs:
        wq[row + 2 * p, 0] = amp * math.cos((dist - 1) * th)
        wq[row + 2 * p + 1, 0] = -amp * math.sin((dist - 1) * th)


@torch.no_grad()
def wire_induction(model: Llama, prev_layer: int = 0, ind_layer: int = 1, const: float = 0.1,
                   prev_scale: float = 50.0, prev_pairs: int = 16, match_pair: int = 18,
                   alpha: float = 6.0, beta: float = 6.0, gamma: float = 8.0,
                   embed_scale: float = 1.0, bigram: bool = False, seed: int = 0) -> dict:
    """Sets an induction circuit into a freshly initialized model:
    - every token embedding gets `const` in dimension 0, a direction RMSNorm leaves nearly
      constant (about 4.6 after the norm), so a head can attend by position alone;
    - layer prev_layer, query head 0 (and dims 0..2*prev_pairs-1 of KV head 0): a previous-token
      head. Q and K read only dimension 0; the phases of RoPE pairs 0..prev_pairs-1 are set so the
      score peaks at distance 1, weighted (prev_token_weights) for the largest margin against every
      other distance up to 8,192 (0.26 of the peak; prev_scale = 50 makes it 13 logits). V = R,
      a 64-d orthonormal projection of the token; O writes it into another 64-d subspace S;
    - layer ind_layer, query head 0 / KV head 0: the induction head. On the RoPE pairs
      match_pair..31 (slow enough to be nearly position-invariant over the trained range), K reads
      S (the previous token) and Q reads the current token through R, so a query scores highest
      the position after an earlier occurrence of its token; V = R and O = gamma * R^T copy that
      position's token into the residual stream;
    - with bigram, a second pair for two-token matches (see below);
    - the output matrix starts as the embeddings (scaled), so the copied projection raises the
      copied token's logit (trained untied from there).
    embed_scale multiplies the embeddings first (10 for the target: at std 0.02 the other layers'
    outputs, moved by Adam about lr per entry per step, swamp the circuit within ~40 steps).
    R, S (and S2) lie in dimensions 1.. (not the constant one), from an orthonormal basis drawn
    with `seed`; nothing here uses torch's global generator. Returns a summary of the settings."""
    c = model.c
    D, d = c.dim, c.head_dim
    if D <= d:
        raise ValueError("wire_induction needs dim > head_dim")
    g = torch.Generator().manual_seed(seed)
    E = model.tok_embeddings.weight
    E.mul_(embed_scale)
    E[:, 0] = const * embed_scale
    rms_e = float(E.pow(2).mean(1).sqrt().mean())
    x0 = const * embed_scale / rms_e
    basis = torch.zeros(D, D - 1)
    basis[1:] = torch.linalg.qr(torch.randn(D - 1, D - 1, generator=g))[0]
    Rb, Sb = basis[:, :d], basis[:, D - 1 - d:D - 1]  # D x d each, disjoint if dim > 2 * d
    a0 = model.layers[prev_layer].attn
    w, margin = prev_token_weights(c.rope_base, d, prev_pairs)
    pairs = positional_pairs(w, c.rope_base, d, prev_scale, x0)
    a0.wq.weight[0:d] = 0
    a0.wk.weight[0:2 * prev_pairs] = 0
    set_positional_keys(a0.wk.weight, 0, pairs)
    set_positional_query(a0.wq.weight, 0, pairs, 1)
    a0.wv.weight[0:d] = Rb.T
    a0.wo.weight[:, 0:d] = Sb * rms_e
    a1 = model.layers[ind_layer].attn
    lo = 2 * match_pair
    U = torch.linalg.qr(torch.randn(d, d, generator=g))[0][: d - lo]
    a1.wq.weight[0:d] = 0
    a1.wq.weight[lo:d] = beta * (U @ Rb.T)
    a1.wk.weight[lo:d] = alpha * (U @ Sb.T)
    a1.wv.weight[0:d] = Rb.T
    a1.wo.weight[:, 0:d] = gamma * rms_e * Rb
    if bigram:
        # A second pair: layer prev_layer's query head 1 attends two back (same keys, the phase
        # of distance 2) and writes that token into a third subspace S2; in layer ind_layer, the
        # first query head of KV head 1 matches the previous token (S) against the token two
        # back (S2) and copies the same way. The two heads' votes add, so a continuation that
        # follows the last two tokens wins over one that follows only the last.
        group = c.n_heads // c.n_kv_heads
        if c.n_kv_heads < 2 or group < 2 or D - 1 < 3 * d:
            raise ValueError("bigram wiring needs 2 KV heads, 2 query heads per KV head and "
                             "dim >= 3 * head_dim + 1")
        S2b = basis[:, d:2 * d]
        q1 = slice(d, 2 * d)
        a0.wq.weight[q1] = 0
        set_positional_query(a0.wq.weight, d, pairs, 2)
        a0.wo.weight[:, q1] = S2b * rms_e
        qh = group * d  # first query head of KV head 1
        U2 = torch.linalg.qr(torch.randn(d, d, generator=g))[0][: d - lo]
        a1.wq.weight[qh:qh + d] = 0
        a1.wq.weight[qh + lo:qh + d] = beta * (U2 @ Sb.T)
        a1.wk.weight[d + lo:2 * d] = alpha * (U2 @ S2b.T)
        a1.wv.weight[d:2 * d] = Rb.T
        a1.wo.weight[:, qh:qh + d] = gamma * rms_e * Rb
    model.output.weight.copy_(E / rms_e / 8)
    return {"const_after_norm": round(x0, 2), "prev_margin_logits": round(margin * prev_scale, 1)}


def wired_masks(model: Llama, prev_layer: int = 0, ind_layer: int = 1, prev_pairs: int = 16,
                match_pair: int = 18, bigram: bool = False, **_) -> dict[str, torch.Tensor]:
    """Parameter name -> 0/1 mask of the entries wire_induction sets (the circuit's rows and
    columns and the constant embedding dimension). Training holds them for the first steps:
    early updates (loss near log V, gradients clipped, Adam moving every entry by about lr)
    otherwise scramble the circuit, whose output weights are ~1e-3, before anything uses it."""
    d = model.c.head_dim
    p0, p1 = f"layers.{prev_layer}.attn.", f"layers.{ind_layer}.attn."
    entries = [("tok_embeddings.weight", slice(None), 0),
               (p0 + "wq.weight", slice(0, d), slice(None)),
               (p0 + "wk.weight", slice(0, 2 * prev_pairs), slice(None)),
               (p0 + "wv.weight", slice(0, d), slice(None)),
               (p0 + "wo.weight", slice(None), slice(0, d)),
               (p1 + "wq.weight", slice(0, d), slice(None)),
               (p1 + "wk.weight", slice(2 * match_pair, d), slice(None)),
               (p1 + "wv.weight", slice(0, d), slice(None)),
               (p1 + "wo.weight", slice(None), slice(0, d))]
    if bigram:
        qh = model.c.n_heads // model.c.n_kv_heads * d
        entries += [(p0 + "wq.weight", slice(d, 2 * d), slice(None)),
                    (p0 + "wo.weight", slice(None), slice(d, 2 * d)),
                    (p1 + "wq.weight", slice(qh, qh + d), slice(None)),
                    (p1 + "wk.weight", slice(d + 2 * match_pair, 2 * d), slice(None)),
                    (p1 + "wv.weight", slice(d, 2 * d), slice(None)),
                    (p1 + "wo.weight", slice(None), slice(qh, qh + d))]
    return entry_masks(model, entries)


def entry_masks(model: Llama, entries) -> dict[str, torch.Tensor]:
    """Parameter name -> 0/1 mask, 1 on each (name, rows, cols) block of `entries`."""
    params = dict(model.named_parameters())
    masks: dict[str, torch.Tensor] = {}
    for name, rows, cols in entries:
        masks.setdefault(name, torch.zeros_like(params[name]))[rows, cols] = 1
    return masks


@torch.no_grad()
def copy_accuracy(model: Llama, length: int = 200, seed: int = 0) -> float:
    """A run of random ordinary pieces, then the run again: the share of the second run's pieces
    that are the argmax (what an induction circuit gets right without training)."""
    g = torch.Generator().manual_seed(seed)
    run = torch.randint(3 + 256, model.c.vocab_size, (length // 2,), generator=g)
    toks = torch.cat([torch.tensor([1]), run, run])[None]
    was = model.training
    model.eval()
    pred = model(toks[:, :-1])[0, length // 2 + 1:].argmax(-1)
    model.train(was)
    return float((pred == toks[0, length // 2 + 2:]).float().mean())


@torch.no_grad()
def quiet_directions(model: Llama, windows: torch.Tensor, layer: int, n: int) -> torch.Tensor:
    """(dim, n): the orthonormal directions in which the residual stream entering `layer` varies
    least over the given token windows (B, T): the room a wired circuit can write into while
    disturbing the trained features least."""
    x = model.residual_before(layer, windows)[0]
    x = x.reshape(-1, x.shape[-1]).double()
    _, vecs = torch.linalg.eigh(x.T @ x / len(x))  # ascending eigenvalues
    return vecs[:, :n].float()


def whitened_token_read(model: Llama, layer: int, d: int) -> torch.Tensor:
    """(d, dim): reads a token's identity from layer `layer`'s normed input as the top d principal
    components of the normed embeddings, centered (the mean through the constant dimension 0)
    and whitened, so that two different tokens' reads are nearly orthogonal."""
    E = model.tok_embeddings.weight
    X = E * torch.rsqrt(E.pow(2).mean(1, keepdim=True) + model.c.norm_eps)
    X = X * model.layers[layer].attn_norm.weight
    mu = X.mean(0)
    vals, vecs = torch.linalg.eigh(((X - mu).T @ (X - mu) / len(X)).double())
    top = vecs[:, -d:].float().T / vals[-d:].sqrt().float()[:, None]  # (d, dim)
    read = top.clone()
    read[:, 0] -= top @ mu / mu[0]  # x[0] is mu[0] for every token: subtracts top @ mu
    return read


def polar_factor(m: torch.Tensor) -> torch.Tensor:
    """The matrix with orthonormal columns nearest to m (Frobenius): U V^T of m's SVD."""
    u, _, vt = torch.linalg.svd(m, full_matrices=False)
    return u @ vt


@torch.no_grad()
def wire_key_lookup(model: Llama, windows: torch.Tensor, key_layer: int = 0, match_layer: int = 2,
                    needle_dist: int = 4, question_dist: int = 9, prev_pairs: int = 16,
                    prev_scale: float = 50.0, match_pair: int = 18, alpha: float = 6.0,
                    beta: float = 6.0, gamma: float = 1.0, write: float = 1.0,
                    digit_ids: list[int] | None = None, digit_before_ids: list[int] | None = None,
                    digit_bonus: float = 0.0, keep_values: bool = False) -> dict:
    """Sets a key-lookup circuit into a trained model whose layers 0-1 hold wire_induction's
    circuit, for multikey's needles ("... for KEY is: VALUE.") and questions ("... for KEY
    mentioned in the provided text is VALUE."):
    - layer key_layer, KV head 1 becomes positional (keys read the constant dimension 0, as the
      previous-token head's do; values the token, whitened: whitened_token_read); its query
      head 2 attends needle_dist back and writes that token into a subspace A, query head 3
      attends question_dist back and writes into a subspace B (`write` times an orthonormal
      basis of each), A and B being the quietest directions of the residual stream entering
      match_layer over `windows` (quiet_directions). At a value's first digit, A holds the
      key's last piece (4 back: "is", ":", " " between); at the question's final " ", B holds
      it (9 back: "mentioned" is 3 pieces, then "in the provided text is");
    - layer match_layer, query head 0 / KV head 0: on the slow RoPE pairs, its query reads B,
      its key reads A, so the final " " of a question scores highest the first digit of the
      needle with the same key; V and O are the trained induction head's (layer 1, head 0),
      which copy a position's token into the logits; query head 1, which shared the KV head,
      is silenced (O = 0) to be retrained;
    - with digit_bonus > 0, the match head's slowest RoPE pair adds digit_bonus logits where a
      query whose token is one of digit_before_ids ("▁") meets a key that is a digit (digit_ids)
      following one (digit_probes, fitted on `windows`): a question repeats the key, and "in" 4
      pieces after it matched as well as a value's first digit, which the bonus puts ahead. The
      slowest pair turns by under 0.03 rad over 8K positions, so the bonus holds at every
      distance; the match then uses pairs match_pair..30;
    - with keep_values, for a model that already holds this circuit (a fine-tune of one), layer
      key_layer's V and O and the match head's V and O stay as trained, so the subspaces the
      trained layers read do not move: A and B are read through the polar factor of each O
      block, and only the positional queries and keys and the match head's query and key are
      set again (query head 1 is not silenced).
    Returns a summary."""
    c = model.c
    d = c.head_dim
    g = torch.Generator().manual_seed(0)
    E = model.tok_embeddings.weight
    a0, am = model.layers[key_layer].attn, model.layers[match_layer].attn
    # The constant dimension after layer key_layer's norm, as the previous-token head sees it.
    rms_e = float(E.pow(2).mean(1).sqrt().mean())
    x0 = float(E[:, 0].mean()) / rms_e * float(model.layers[key_layer].attn_norm.weight[0])
    w, margin = prev_token_weights(c.rope_base, d, prev_pairs)
    pairs = positional_pairs(w, c.rope_base, d, prev_scale, x0)
    a0.wk.weight[d:2 * d] = 0
    if keep_values:
        # A and B as the trained O writes them: the nearest orthonormal basis of each block (its
        # polar factor), which keeps the coordinates that wire time gave A and B alike.
        A_read, B_read = (polar_factor(a0.wo.weight[:, h * d:(h + 1) * d]).T for h in (2, 3))
    else:
        # KV head 1 of key_layer: values the token, whitened (keys positional, below). The quiet
        # directions are measured with that head's keys zero and its values set (the order the
        # committed target was wired in; its queries are still the trained ones).
        a0.wv.weight[d:2 * d] = whitened_token_read(model, key_layer, d)
        quiet = quiet_directions(model, windows, match_layer, 2 * d)
        A_read, B_read = quiet[:, :d].T, quiet[:, d:].T
    set_positional_keys(a0.wk.weight, d, pairs)
    for head, dist, read in ((2, needle_dist, A_read), (3, question_dist, B_read)):
        rows = slice(head * d, (head + 1) * d)
        a0.wq.weight[rows] = 0
        set_positional_query(a0.wq.weight, head * d, pairs, dist)
        if not keep_values:
            a0.wo.weight[:, rows] = read.T * write
    # The match head.
    lo = 2 * match_pair
    hi = d - 2 if digit_bonus > 0 else d
    U = torch.linalg.qr(torch.randn(d, d, generator=g))[0][: hi - lo]
    am.wq.weight[0:d] = 0
    am.wq.weight[lo:hi] = beta * (U @ B_read)
    am.wk.weight[0:d] = 0
    am.wk.weight[lo:hi] = alpha * (U @ A_read)
    if not keep_values:
        ind = model.layers[1].attn
        am.wv.weight[0:d] = ind.wv.weight[0:d]
        am.wo.weight[:, 0:d] = gamma * ind.wo.weight[:, 0:d]
        am.wo.weight[:, d:2 * d] = 0
    summary = {}
    if digit_bonus > 0:
        w_query, w_key, summary["digit_probes"] = digit_probes(model, windows, match_layer,
                                                                digit_ids, digit_before_ids)
        s = math.sqrt(digit_bonus * math.sqrt(d))
        am.wq.weight[d - 2] = s * w_query
        am.wk.weight[d - 2] = s * w_key
    return {"const_after_norm": round(x0, 2), "offset_margin_logits": round(margin * prev_scale, 1),
            **summary}


def key_lookup_masks(model: Llama, key_layer: int = 0, match_layer: int = 2,
                     **_) -> dict[str, torch.Tensor]:
    """Parameter name -> 0/1 mask of the entries of wire_key_lookup's circuit that decide where
    it reads: layer key_layer's positional heads (queries 2 and 3, KV head 1, their output) and
    the match head's query and key. A fine-tune that trained them moved the match onto what
    every value's first digit shares, and the wrong needles scored within 1-4 logits of the
    right one; held, they keep the margin the wiring set. The match head's V and O (the copy)
    still train."""
    d, every = model.c.head_dim, slice(None)
    k0, km = f"layers.{key_layer}.attn.", f"layers.{match_layer}.attn."
    return entry_masks(model, [(k0 + "wq.weight", slice(2 * d, 4 * d), every),
                               (k0 + "wk.weight", slice(d, 2 * d), every),
                               (k0 + "wv.weight", slice(d, 2 * d), every),
                               (k0 + "wo.weight", every, slice(2 * d, 4 * d)),
                               (km + "wq.weight", slice(0, d), every),
                               (km + "wk.weight", slice(0, d), every)])


def ridge_fit(h: torch.Tensor, y: torch.Tensor, weight: torch.Tensor,
              ridge: float) -> torch.Tensor:
    """The weighted ridge least-squares read of h (N, dim) onto y (N,) or (N, k): w minimizing
    sum_n weight_n |h_n w - y_n|^2 + ridge |w|^2, in float64; (dim,) or (dim, k)."""
    h, y, weight = h.double(), y.double(), weight.double()
    wy = weight * y if y.dim() == 1 else weight[:, None] * y
    return torch.linalg.solve(h.T @ (weight[:, None] * h)
                              + ridge * torch.eye(h.shape[1], dtype=h.dtype), h.T @ wy)


@torch.no_grad()
def linear_probe(h: torch.Tensor, target: torch.Tensor, ridge: float = 1e-5, rounds: int = 1,
                 hard: float = 0.2, boost: float = 10.0) -> tuple[torch.Tensor, dict]:
    """(dim,): the ridge least-squares read of h (N, dim) that is 1 where target (N,) is true and
    0 elsewhere, each class weighing half (the true class is rare: unweighted, the read would
    sit near its share of the positions); and its mean on each class, its smallest on the class
    and its largest off it. With rounds > 1 it is refitted with the off-class rows that read
    above `hard` weighing `boost` times more each round: an attention bonus must not fire on
    the few positions that look like the class ("▁in" where "▁for" is meant), however rare."""
    t = target.double()
    weight = torch.where(t > 0, 0.5 / t.sum(), 0.5 / (1 - t).sum())
    for _ in range(rounds):
        w = ridge_fit(h, t, weight, ridge)
        r = h.double() @ w
        weight = torch.where((t == 0) & (r > hard), weight * boost, weight)
    fit = {"on": round(float(r[t > 0].mean()), 2), "on_min": round(float(r[t > 0].min()), 2),
           "off": round(float(r[t == 0].mean()), 2), "off_max": round(float(r[t == 0].max()), 2)}
    return w.float(), fit


@torch.no_grad()
def digit_probes(model: Llama, windows: torch.Tensor, layer: int, digit_ids: list[int],
                 before_ids: list[int]) -> tuple[torch.Tensor, torch.Tensor, dict]:
    """Two reads of layer `layer`'s normed input, fitted over `windows`: one that is 1 where the
    token is one of before_ids (a query about to be answered with a number, such as "▁" after
    "is"), one that is 1 where the token is a digit that follows one of them (a number's first
    digit); with their fits."""
    x = model.residual_before(layer, windows)[0]
    h = model.layers[layer].attn_norm(x).reshape(-1, x.shape[-1])
    toks = windows[:, :x.shape[1]]
    prev = torch.cat([torch.full_like(toks[:, :1], -1), toks[:, :-1]], 1)
    is_before = torch.isin(toks, torch.tensor(before_ids))
    is_first = torch.isin(toks, torch.tensor(digit_ids)) & torch.isin(prev, torch.tensor(before_ids))
    w_query, fit_q = linear_probe(h, is_before.reshape(-1))
    w_key, fit_k = linear_probe(h, is_first.reshape(-1))
    return w_query, w_key, {"query": fit_q, "key": fit_k}


@torch.no_grad()
def attention_probs(model: Llama, tokens: torch.Tensor, layer: int, head: int) -> torch.Tensor:
    """(T, T): the attention weights of query head `head` in `layer` on tokens (1, T), for
    checking what a wired head attends to."""
    c = model.c
    x, cos, sin = model.residual_before(layer, tokens)
    a, h = model.layers[layer].attn, model.layers[layer].attn_norm(x)
    kv = head // (c.n_heads // c.n_kv_heads)
    q = apply_rope(a.wq(h).view(1, -1, c.n_heads, c.head_dim), cos, sin)[0, :, head]
    k = apply_rope(a.wk(h).view(1, -1, c.n_kv_heads, c.head_dim), cos, sin)[0, :, kv]
    scores = q @ k.T / math.sqrt(c.head_dim)
    T = scores.shape[0]
    return F.softmax(scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), -math.inf), -1)
