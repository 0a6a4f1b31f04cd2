"""A key-carrying continuation circuit for multikey's later digits (hand-wired, as model.py's
induction and key-lookup circuits; the architecture is unchanged).

wire_key_lookup's match head picks a needle's first digit by its key. The digits after it came
from the induction heads, which match the last one or two digits anywhere: where another needle
(or a verse number) holds the same digits, the answer drifted onto it (4800241 answered as
4483772, 6311347 as 6311362). This circuit conditions every later digit on the key:

- **carry** (layer 1, query head 3 on KV head 1): attends to the key's first piece (a probe of
  "follows 'number(s) for'", the same in a needle "... numbers for KEY is: VALUE" and in the
  question "... number for KEY mentioned ... is VALUE") if one lies within the last 32
  positions (window_weights shuts out those beyond), else to the first position (a sink that
  carries nothing). Its value is a code of that piece (spread_codes, regressed from the normed
  input into value rows the bigram head beside it no longer reads), written into quiet
  directions: every digit of a value, and of the answer, then holds its key's code.
- **continuation** (layer 2, query head 2 on KV head 1): on the slow RoPE pairs, the query reads
  the carried code, its digit and the digit before; the key reads the carried code, the digit
  before it and the one before that (ridge reads of digit codes). An answer digit so scores
  highest the position that follows the same two digits in the needle with the same key. The
  value is that position's digit (one-hot) and O raises its logit. A gate on the slowest pair
  sends every non-digit query to the first position, whose value is 0: the head adds nothing
  there (the first digit stays the match head's).

Scales are in logits and set where the pieces are measured (probes, codes, digit reads) on the
model being wired; the returned summaries give the fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from model import Llama, entry_masks, linear_probe, ridge_fit


def window_weights(base: float, head_dim: int, pairs: list[int], inside: int = 32,
                   outside: int = 44, max_dist: int = 8192,
                   iters: int = 2000) -> tuple[list[float], float, float]:
    """Signed weights w_p (sum |w_p| = 1) of the given RoPE pairs (the last one slow enough to be
    a constant) so that r(m) = sum_p w_p cos(m th_p) is near 0 over a window, m <= inside, and
    as far below it as can be beyond, m >= outside: a head that reads positions only to shut
    out those beyond the window. Near 0 inside because the read of the constant the phases
    multiply varies from position to position (its noise scales r). Returns the weights, the
    depth below the window (-max_{m >= outside} r) and the largest |r| inside. A negative
    weight is a query phase of pi. Deterministic (float64, fixed start)."""
    th = torch.tensor([base ** (-2 * p / head_dim) for p in pairs], dtype=torch.float64)
    m = torch.arange(0, max_dist + 1, dtype=torch.float64)
    C = torch.cos(m[:, None] * th[None, :])
    z = torch.full((len(pairs),), 1.0 / len(pairs), dtype=torch.float64)
    z[-1] = -1.0
    z.requires_grad_(True)
    opt = torch.optim.Adam([z], lr=0.01)

    def parts(w):
        r = C @ (w / w.abs().sum())
        below = -torch.logsumexp(200 * r[outside:], 0) / 200
        spread = torch.logsumexp(200 * r[:inside + 1].abs(), 0) / 200
        return below, spread

    with torch.enable_grad():
        for _ in range(iters):
            below, spread = parts(z)
            loss = -(below - 2 * spread)
            opt.zero_grad()
            loss.backward()
            opt.step()
    w = (z / z.abs().sum()).detach()
    r = C @ w
    return w.tolist(), float(-r[outside:].max()), float(r[:inside + 1].abs().max())


def const_read(h: torch.Tensor, ridge: float = 1e-3) -> tuple[torch.Tensor, float]:
    """(dim,): the ridge least-squares read of normed inputs h (N, dim) that is 1 everywhere (what
    a positional head multiplies its RoPE phases by), and the spread of that read (std)."""
    w = ridge_fit(h, torch.ones(len(h)), torch.full((len(h),), 1.0 / len(h)), ridge)
    return w.float(), float((h.double() @ w).std())


def digit_reads(h: torch.Tensor, labels: torch.Tensor, codes: torch.Tensor,
                ridge: float = 1e-4) -> torch.Tensor:
    """(code_dim, dim): the ridge least-squares read of h (N, dim) that gives codes[label] for
    labels (N,: a digit 0-9) and 0 where the label is -1; digit rows weigh as much as the rest."""
    is_digit = labels >= 0
    weight = torch.where(is_digit, 0.5 / is_digit.sum(), 0.5 / (~is_digit).sum())
    Y = torch.zeros(len(h), codes.shape[1])
    Y[is_digit] = codes[labels[is_digit]]
    return ridge_fit(h, Y, weight, ridge).T.float()


def spread_codes(n: int, dim: int, iters: int = 800, seed: int = 0) -> torch.Tensor:
    """(n, dim): unit vectors whose largest |cosine| between two of them is as small as a few
    hundred steps of gradient descent make it (near the Welch bound for n > dim): codes that a
    dot product tells apart. Deterministic in seed."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(n, dim, generator=g, dtype=torch.float64).requires_grad_(True)
    opt = torch.optim.Adam([z], lr=0.02)
    off = ~torch.eye(n, dtype=torch.bool)
    with torch.enable_grad():
        for _ in range(iters):
            u = z / z.norm(dim=1, keepdim=True)
            loss = torch.logsumexp(30 * (u @ u.T)[off].abs(), 0) / 30
            opt.zero_grad()
            loss.backward()
            opt.step()
    return (z / z.norm(dim=1, keepdim=True)).detach().float()


def carry_masks(model: Llama, carry_layer: int = 1, carry_kv: int = 1, cont_layer: int = 2,
                cont_head: int = 2, **_) -> dict[str, torch.Tensor]:
    """Parameter name -> 0/1 mask of the entries wire_key_carry sets: in carry_layer the whole
    group of KV head carry_kv (the carry head and the bigram head beside it, whose value rows
    and keys it shares), in cont_layer the continuation head's query, its KV head and its O.
    The other query head of that KV head still trains (it reads the held keys and values)."""
    d, every = model.c.head_dim, slice(None)
    group = model.c.n_heads // model.c.n_kv_heads
    p1, p2 = f"layers.{carry_layer}.attn.", f"layers.{cont_layer}.attn."
    q1 = slice(carry_kv * group * d, (carry_kv + 1) * group * d)
    kv1 = slice(carry_kv * d, (carry_kv + 1) * d)
    kv2 = slice(cont_head // group * d, (cont_head // group + 1) * d)
    q2 = slice(cont_head * d, (cont_head + 1) * d)
    return entry_masks(model, [(p1 + "wq.weight", q1, every), (p1 + "wk.weight", kv1, every),
                               (p1 + "wv.weight", kv1, every), (p1 + "wo.weight", every, q1),
                               (p2 + "wq.weight", q2, every), (p2 + "wk.weight", kv2, every),
                               (p2 + "wv.weight", kv2, every), (p2 + "wo.weight", every, q2)])


def input_masks(model: Llama, cont_layer: int = 2) -> dict[str, torch.Tensor]:
    """Parameter name -> all-ones masks of everything the circuit's reads are fitted on: the
    embeddings, the layers before cont_layer and cont_layer's attention norm. Trained, they
    move the probes' inputs (a fine-tune that held only the circuit's own entries lost the
    carry at the answer: its key piece fell below the sink)."""
    keep = ("tok_embeddings.",) + tuple(f"layers.{i}." for i in range(cont_layer)) + (
        f"layers.{cont_layer}.attn_norm.",)
    return {n: torch.ones_like(p) for n, p in model.named_parameters() if n.startswith(keep)}


@dataclass
class Pieces:
    """The token ids the circuit is fitted around."""
    for_: int  # "▁for"
    numbers: list[int]  # "▁number" (a question's), "▁numbers" (a needle's): before "for"
    space: int  # "▁", before a number's first digit
    digit_of: dict[int, int]  # token -> digit, for the single-digit pieces

    @classmethod
    def of(cls, sp) -> "Pieces":
        return cls(sp.piece_to_id("\u2581for"),
                   [sp.piece_to_id("\u2581number"), sp.piece_to_id("\u2581numbers")],
                   sp.piece_to_id("\u2581"), {sp.piece_to_id(str(i)): i for i in range(10)})


def key_starts(ids: list[int], pc: Pieces) -> torch.Tensor:
    """(T,) bool: the first piece of each key ("... numbers for KEY is:", "... number for KEY
    mentioned")."""
    out = torch.zeros(len(ids), dtype=torch.bool)
    for j in range(2, len(ids)):
        out[j] = ids[j - 1] == pc.for_ and ids[j - 2] in pc.numbers
    return out


def key_flags(ids: list[int], pc: Pieces) -> torch.Tensor:
    """(T,): +1 at a needle's key start ("numbers for"), -1 at a question's ("number for")."""
    out = torch.zeros(len(ids))
    for j in key_starts(ids, pc).nonzero()[:, 0].tolist():
        out[j] = 1.0 if ids[j - 2] == pc.numbers[1] else -1.0
    return out


def carried_keys(ids: list[int], pc: Pieces, reach: int = 40) -> torch.Tensor:
    """(T,) bool: the digits of a number that follows "▁" with a key started within `reach`
    before them (where the carry head carries a key)."""
    starts = key_starts(ids, pc).nonzero()[:, 0].tolist()
    out = torch.zeros(len(ids), dtype=torch.bool)
    in_number = False
    for j, t in enumerate(ids):
        in_number = t in pc.digit_of and j > 0 and (ids[j - 1] == pc.space or in_number)
        out[j] = in_number and any(s < j <= s + reach for s in starts)
    return out


@torch.no_grad()
def wire_key_carry(model: Llama, windows: torch.Tensor, seqs: list[torch.Tensor], pc: Pieces,
                   carry: dict | None = None, continuation: dict | None = None) -> dict:
    """Sets both halves (wire_carry_head, then wire_continuation_head with its keyword arguments
    in `carry` and `continuation`), fitted on text windows and on seqs, (1, T) rows holding
    multikey needles and questions; returns their summaries."""
    starts = [key_starts(t[0].tolist(), pc) for t in seqs]
    flags = [key_flags(t[0].tolist(), pc) for t in seqs]
    info_c, carried = wire_carry_head(model, windows, seqs, starts, flags, **(carry or {}))
    carrying = [carried_keys(t[0].tolist(), pc) for t in seqs]
    info_n = wire_continuation_head(model, seqs, carried, carrying, pc.digit_of,
                                    **(continuation or {}))
    return {"carry": info_c, "continuation": info_n}


@torch.no_grad()
def wire_carry_head(model: Llama, windows: torch.Tensor, seqs: list[torch.Tensor],
                    starts: list[torch.Tensor], flags: list[torch.Tensor],
                    layer: int = 1, head: int = 3,
                    window_pairs: int = 15, window: float = 50.0, bonus: float = 30.0,
                    sink: float = 8.0, n_code: int = 8, off_weight: float = 0.1,
                    write: float = 3.0) -> tuple[dict, torch.Tensor]:
    """The carry half (see the module docstring). seqs: (1, T) token rows holding needles and
    questions; starts: per row, (T,) bool at each key's first piece; flags: per row, (T,) +1 at
    a needle's key piece, -1 at a question's. The piece gets a probe of layer `layer`'s normed
    input (fitted with text windows as negatives) and `bonus` logits on the RoPE pair after the
    window's. Returns its settings and fits, and the (dim, n_code + 1) subspace it writes (the
    code, then the flag)."""
    c, d = model.c, model.c.head_dim
    kv = head // (c.n_heads // c.n_kv_heads)
    a = model.layers[layer].attn
    x = model.residual_before(layer, windows)[0]
    h = model.layers[layer].attn_norm(x).reshape(-1, x.shape[-1])
    u, u_std = const_read(h)
    hs = torch.cat([h] + [model.layers[layer].attn_norm(model.residual_before(layer, t)[0])[0]
                          for t in seqs])
    on = torch.cat([torch.zeros(len(h), dtype=torch.bool)] + list(starts))
    w_key, fit_key = linear_probe(hs, on, rounds=4)
    # Pairs 0..window_pairs-1 and 30 (a constant) shut out positions beyond the window; the
    # probe takes pair window_pairs; pair 31 (position-invariant over 8K) is the sink. The
    # bigram head keeps its match on pairs 18-29.
    pairs = list(range(window_pairs)) + [30]
    w, below, spread = window_weights(c.rope_base, d, pairs)
    scale = window / below  # logits a position beyond the window loses, at least
    used = pairs + [window_pairs, 31]
    other = (head ^ 1) * d  # the KV head's other query head (the bigram head)
    a.wq.weight[head * d:(head + 1) * d] = 0
    for p in used:
        a.wk.weight[kv * d + 2 * p:kv * d + 2 * p + 2] = 0
        a.wq.weight[other + 2 * p:other + 2 * p + 2] = 0
    first = torch.cat([torch.zeros(len(h), dtype=torch.bool)]
                      + [torch.arange(t.shape[1]) == 0 for t in seqs])
    w_first, fit_first = linear_probe(hs, first)
    for p, w_p in zip(pairs, w):
        amp = math.sqrt(math.sqrt(d) * scale * abs(w_p))
        # Rotated by t and j, they score amp^2 cos((t - j) th_p), negated for a negative
        # weight. The first position reads no window (the sink stands apart from it).
        a.wk.weight[kv * d + 2 * p] = amp * (u - w_first)
        a.wq.weight[head * d + 2 * p] = math.copysign(amp, w_p) * u
    s = math.sqrt(math.sqrt(d) * bonus)
    a.wk.weight[kv * d + 2 * window_pairs] = s * w_key
    a.wq.weight[head * d + 2 * window_pairs] = s * u
    # The sink: with no key piece in the window the head rests on the first position, which
    # carries nothing (its direction is projected out of the code's value rows below).
    a.wk.weight[kv * d + 62] = math.sqrt(math.sqrt(d) * sink) * w_first
    a.wq.weight[head * d + 62] = math.sqrt(math.sqrt(d) * sink) * u
    # What it carries: a code of the piece (spread_codes, one per distinct first piece)
    # and a flag (flags: +1 for a needle's key, -1 for a question's), regressed from the normed
    # input (ridge; text positions regressed to 0, so that a piece of ordinary text carries next
    # to nothing) into the KV head's last n_code + 1 value rows, which the bigram head stops
    # reading; written into as many quiet directions of the next layer (quiet over text and
    # over the rows with needles alike: digits are rare in text).
    n = n_code + 1
    xs = [model.residual_before(layer + 1, t)[0][0] for t in seqs]
    xs.append(model.residual_before(layer + 1, windows)[0].reshape(-1, c.dim))
    X = torch.cat(xs).double()
    quiet = torch.linalg.eigh(X.T @ X / len(X))[1][:, :n].float()
    toks = torch.cat([torch.full((len(h),), -1)] + [t[0] for t in seqs])
    pieces = toks[on].unique()
    codes = spread_codes(len(pieces), n_code)
    Y = torch.zeros(len(hs), n, dtype=torch.float64)
    Y[on, :n_code] = codes[torch.searchsorted(pieces, toks[on])].double()
    Y[:, n_code] = torch.cat([torch.zeros(len(h))] + list(flags)).double()
    weight = torch.where(on, (1 - off_weight) / on.sum(), off_weight / (~on).sum())
    P = ridge_fit(hs, Y, weight, 1e-4).T.float()  # n x dim
    b = hs[first].mean(0)
    b = b / b.norm()
    P = P - (P @ b)[:, None] * b[None, :]
    got = hs @ P.T
    flag = Y[on, n_code].float()
    fit = {"on": round(float((got[on, :n_code] * Y[on, :n_code].float()).sum(1).mean()), 2),
           "off_norm": round(float(got[~on, :n_code].norm(dim=1).mean()), 2),
           "cross_max": round(float((codes @ codes.T - torch.eye(len(codes))).max()), 2),
           "flag_needle": round(float(got[on, n_code][flag > 0].mean()), 2),
           "flag_question": round(float(got[on, n_code][flag < 0].mean()), 2)}
    vr = slice(kv * d + d - n, (kv + 1) * d)
    a.wv.weight[vr] = P
    a.wo.weight[:, (head ^ 1) * d + d - n:((head ^ 1) + 1) * d] = 0
    a.wo.weight[:, head * d:(head + 1) * d] = 0
    a.wo.weight[:, head * d + d - n:(head + 1) * d] = write * quiet
    return {"probe": fit_key, "first": fit_first, "const_std": round(u_std, 3),
            "window": {"below": round(below, 3), "spread_logits": round(spread * scale, 2)},
            "code": fit, "pieces": len(pieces)}, quiet


@torch.no_grad()
def wire_continuation_head(model: Llama, seqs: list[torch.Tensor], carried: torch.Tensor,
                           carrying: list[torch.Tensor], digit_of: dict[int, int],
                           layer: int = 2, head: int = 2, match_head: int = 0, n_digit: int = 6,
                           key_match: float = 12.0, digit_match: float = 10.0,
                           gate: float = 20.0, needle: float = 6.0, copy: float = 4.0) -> dict:
    """The continuation half (see the module docstring). seqs: (1, T) token rows that start with
    BOS and hold needles and answers; carried: (dim, n_code + 1), the subspace the carry head
    writes (the key's code, then the needle/question flag); carrying: per row, (T,) bool at the
    digits that carry a key (carried_keys); digit_of: token id -> digit. Returns its settings
    and fits."""
    c, d = model.c, model.c.head_dim
    kv = head // (c.n_heads // c.n_kv_heads)
    a = model.layers[layer].attn
    hs, cur, prev, prev2, first = [], [], [], [], []
    for toks in seqs:
        x = model.residual_before(layer, toks)[0]
        hs.append(model.layers[layer].attn_norm(x)[0])
        t = [digit_of.get(i, -1) for i in toks[0].tolist()]
        cur.append(torch.tensor(t))
        prev.append(torch.tensor([-1] + t[:-1]))
        prev2.append(torch.tensor([-1, -1] + t[:-2]))
        first.append(torch.arange(len(t)) == 0)
    h, cur, prev, prev2 = torch.cat(hs), torch.cat(cur), torch.cat(prev), torch.cat(prev2)
    keyed, first = torch.cat(carrying), torch.cat(first)
    u, u_std = const_read(h)
    w_first, fit_first = linear_probe(h, first)
    w_digit, fit_digit = linear_probe(h, cur >= 0)
    # Digits as codes in n_digit dimensions (spread_codes): a query's current and previous
    # digit against a key's previous and second previous, so the pair must match.
    codes = spread_codes(10, n_digit, seed=1)
    d_cur, d_prev, d_prev2 = (digit_reads(h, lab, codes) for lab in (cur, prev, prev2))

    def unit(read, at):  # scaled to read about unit length where the label is a digit
        return read / float((h[at] @ read.T).norm(dim=1).mean())

    d_cur, d_prev, d_prev2 = unit(d_cur, cur >= 0), unit(d_prev, prev >= 0), unit(d_prev2, prev2 >= 0)
    # The carried key's code and flag (the last column), read back through the norm's gain.
    reads = (carried / model.layers[layer].attn_norm.weight[:, None]).T  # (n_code + 1) x dim
    key_read, flag_read = unit(reads[:-1], keyed), reads[-1]
    flag_read = flag_read / float((h[keyed] @ flag_read).abs().mean())
    rows_k, rows_q = slice(kv * d, (kv + 1) * d), slice(head * d, (head + 1) * d)
    a.wk.weight[rows_k] = 0
    a.wq.weight[rows_q] = 0
    s_key, s_dig, s_gate = (math.sqrt(math.sqrt(d) * v) for v in (key_match, digit_match, gate))
    # Rows 42.. (pairs 21-31, slow enough for 8K): the digit pair, the carried key, the gate.
    q0, k0, n = head * d + 42, kv * d + 42, n_digit
    a.wq.weight[q0:q0 + n] = s_dig * d_cur
    a.wk.weight[k0:k0 + n] = s_dig * d_prev
    a.wq.weight[q0 + n:q0 + 2 * n] = s_dig * d_prev
    a.wk.weight[k0 + n:k0 + 2 * n] = s_dig * d_prev2
    nk = key_read.shape[0]
    a.wq.weight[q0 + 2 * n:q0 + 2 * n + nk] = s_key * key_read
    a.wk.weight[k0 + 2 * n:k0 + 2 * n + nk] = s_key * key_read
    # The gate reads 1 - "is a digit": every other query meets the first position at `gate`
    # logits, a digit meets it at about 0 and goes where key and digits match.
    a.wq.weight[head * d + 62] = s_gate * (u - w_digit)
    a.wk.weight[kv * d + 62] = s_gate * w_first
    # The flag, beside it: a needle's digit gains `needle` logits, an answer's own digit (its
    # key is the question's) loses as many, so the answer never continues itself.
    s_flag = math.sqrt(math.sqrt(d) * needle)
    a.wq.weight[head * d + 63] = s_flag * u
    a.wk.weight[kv * d + 63] = s_flag * flag_read
    # The copy: the value is the position's digit, one-hot (ridge reads, 0 elsewhere); O writes
    # for digit i the residual direction r_i that, through the final norm (at the residual's
    # size there) and the output matrix, raises digit i's logit over the digits' mean by `copy`.
    onehot = digit_reads(h, cur, torch.eye(10))
    a.wv.weight[rows_k] = 0
    a.wv.weight[kv * d:kv * d + 10] = onehot
    digit_tok = torch.tensor(sorted(digit_of, key=digit_of.get))  # token of digit 0..9
    out = model.output.weight[digit_tok] * model.norm.weight  # 10 x dim
    r = out - out.mean(0)
    r = r / r.norm(dim=1, keepdim=True).pow(2)  # r_i . (out_i - mean) = 1
    final_rms = float(torch.cat([model.residual_before(len(model.layers), t)[0][0]
                                 for t in seqs[:8]]).pow(2).mean().sqrt())
    a.wo.weight[:, rows_q] = 0
    a.wo.weight[:, head * d:head * d + 10] = copy * final_rms * r.T
    a.wo.weight[:, (head ^ 1) * d:((head ^ 1) + 1) * d] = 0
    return {"const_std": round(u_std, 3), "first_probe": fit_first, "digit_probe": fit_digit}
