"""Export a trained checkpoint as a GGUF llama model: F16 matrices, F32 norms, the SPM vocabulary.

The model's RoPE is GGML's normal (interleaved-pair) convention, so Q and K are written as they
are, with no permutation (see model.py).
"""

from __future__ import annotations

import numpy as np
import torch

import gguf
import tokenizer as tok
from model import Llama, ModelConfig

# torch parameter name (per block after "layers.N.") -> GGUF tensor name.
BLOCK_NAMES = {
    "attn_norm.weight": "attn_norm.weight",
    "attn.wq.weight": "attn_q.weight",
    "attn.wk.weight": "attn_k.weight",
    "attn.wv.weight": "attn_v.weight",
    "attn.wo.weight": "attn_output.weight",
    "ffn_norm.weight": "ffn_norm.weight",
    "ffn.w_gate.weight": "ffn_gate.weight",
    "ffn.w_up.weight": "ffn_up.weight",
    "ffn.w_down.weight": "ffn_down.weight",
}
TOP_NAMES = {"tok_embeddings.weight": "token_embd.weight", "norm.weight": "output_norm.weight",
             "output.weight": "output.weight"}


def gguf_name(name: str) -> str:
    if name in TOP_NAMES:
        return TOP_NAMES[name]
    _, layer, rest = name.split(".", 2)
    return f"blk.{layer}.{BLOCK_NAMES[rest]}"


def load_model(ckpt_path: str) -> tuple[Llama, dict]:
    ck = torch.load(ckpt_path, map_location="cpu")
    mc = ModelConfig(**ck["config"]["model"])
    model = Llama(mc)
    model.load_state_dict(ck["model"])
    model.eval()
    return model, ck


def round_to_export(model: Llama) -> None:
    """Rounds the matrices to F16 in place, as export stores them (for comparing logits)."""
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.copy_(p.half().float())


def export(ckpt_path: str, tokenizer_path: str, out_path: str, name: str) -> dict:
    model, ck = load_model(ckpt_path)
    c: ModelConfig = model.c
    sp = tok.load(tokenizer_path)
    vocab = tok.gguf_vocab(sp)
    meta = {
        "general.architecture": gguf.string("llama"),
        "general.name": gguf.string(name),
        "general.file_type": gguf.u32(1),  # mostly F16
        "general.alignment": gguf.u32(gguf.ALIGNMENT),
        "llama.vocab_size": gguf.u32(c.vocab_size),
        "llama.context_length": gguf.u32(c.context_length),
        "llama.embedding_length": gguf.u32(c.dim),
        "llama.block_count": gguf.u32(c.n_layers),
        "llama.feed_forward_length": gguf.u32(c.ffn_dim),
        "llama.attention.head_count": gguf.u32(c.n_heads),
        "llama.attention.head_count_kv": gguf.u32(c.n_kv_heads),
        "llama.attention.key_length": gguf.u32(c.head_dim),
        "llama.attention.value_length": gguf.u32(c.head_dim),
        "llama.rope.dimension_count": gguf.u32(c.head_dim),
        "llama.rope.freq_base": gguf.f32(c.rope_base),
        "llama.attention.layer_norm_rms_epsilon": gguf.f32(c.norm_eps),
        "tokenizer.ggml.model": gguf.string("llama"),
        "tokenizer.ggml.tokens": gguf.array(gguf.STRING, vocab["tokens"]),
        "tokenizer.ggml.scores": gguf.array(gguf.FLOAT32, vocab["scores"]),
        "tokenizer.ggml.token_type": gguf.array(gguf.INT32, vocab["token_type"]),
        "tokenizer.ggml.bos_token_id": gguf.u32(vocab["bos"]),
        "tokenizer.ggml.eos_token_id": gguf.u32(vocab["eos"]),
        "tokenizer.ggml.unknown_token_id": gguf.u32(vocab["unk"]),
        "tokenizer.ggml.add_bos_token": gguf.boolean(True),
        "tokenizer.ggml.add_eos_token": gguf.boolean(False),
        "tokenizer.ggml.add_space_prefix": gguf.boolean(True),
    }
    tensors = []
    for pname, p in model.state_dict().items():
        a = p.detach().float().numpy()
        tensors.append((gguf_name(pname), a.astype(np.float16) if a.ndim >= 2 else a.astype(np.float32)))
    gguf.write(out_path, meta, tensors)
    return {"step": ck["step"], "tokens": ck["tokens"], "params": model.n_params()}


def load_gguf_weights(model: Llama, path: str) -> None:
    """Sets the model's parameters from an exported GGUF (the inverse of export's names), for a
    run that starts from an earlier model instead of a fresh initialization."""
    _, tensors = gguf.read(path)
    state = model.state_dict()
    missing = [n for n in state if gguf_name(n) not in tensors]
    if missing:
        raise SystemExit(f"error: {path} lacks {[gguf_name(n) for n in missing]}")
    with torch.no_grad():
        for pname, p in state.items():
            a = tensors[gguf_name(pname)]
            if tuple(a.shape) != tuple(p.shape):
                raise SystemExit(f"error: {path}: {gguf_name(pname)} is {a.shape}, the model "
                                 f"wants {tuple(p.shape)}")
            p.copy_(torch.from_numpy(a.astype(np.float32)))
