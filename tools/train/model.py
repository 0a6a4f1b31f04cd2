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
        if pos is None:
            pos = torch.arange(tokens.shape[1])[None].expand_as(tokens)
        cos, sin = rope_tables(pos, self.c.head_dim, self.c.rope_base)
        x = self.tok_embeddings(tokens)
        for layer in self.layers:
            if grad_checkpoint and self.training:
                x = checkpoint(layer, x, cos, sin, query_chunk)
            else:
                x = layer(x, cos, sin, query_chunk)
        if last_only:
            x = x[:, -1:]
        return self.output(self.norm(x))

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())
