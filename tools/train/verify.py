"""Checks an exported GGUF against the torch model it came from, through strata's command line:
the same token ids for texts (tokenizer), last-position logits within a tolerance (weights and
RoPE convention), and the same greedy continuation.
"""

from __future__ import annotations

import os
import subprocess
import tempfile

import numpy as np
import torch

import corpus
import tasks
import tokenizer as tok
from export import load_model, round_to_export


def strata(binary: str, *args: str) -> str:
    threads = ["-t", "1"] if args[0] in ("run", "logits") else []
    r = subprocess.run(["nice", "-n", "19", binary, *args, *threads], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"strata {' '.join(args[:3])}...: {r.stderr.strip()}")
    return r.stdout


def prompts(sp, corpus_dir: str) -> list[tuple[str, str]]:
    enc = tasks.SegmentEncoder(sp)
    rng = np.random.default_rng(7)
    val = corpus.read_split(corpus_dir, "val")
    out = [("short", "Once upon a time"),
           ("verse", "In the beginning God created the heaven and the earth."),
           ("val-text", val[0].text[:1500]),
           ("code", val[len(val) // 2].text[:1200]),
           ("passkey-300", tasks.make_case("passkey", enc, rng, 300, 0.5, None).prompt())]
    return out


def run(ckpt: str, gguf_path: str, binary: str, tokenizer_path: str, corpus_dir: str,
        tolerance: float) -> bool:
    sp = tok.load(tokenizer_path)
    model, _ = load_model(ckpt)
    round_to_export(model)
    ok = True
    info = strata(binary, "info", "-m", gguf_path)
    print(info.split("\n", 1)[0])
    for name, text in prompts(sp, corpus_dir):
        ids = [tok.BOS] + tok.encode(sp, text)
        with tempfile.TemporaryDirectory() as d:
            tf = os.path.join(d, "p.txt")
            with open(tf, "w", encoding="utf-8") as f:
                f.write(text)
            s_ids = [int(x) for x in strata(binary, "tokenize", "-m", gguf_path, "-f", tf, "--ids").split()]
            same_tokens = s_ids == ids
            with torch.no_grad():
                t_logits = model(torch.tensor(ids)[None], last_only=True)[0, -1].numpy()
            diffs = {}
            for kv in ("f32", "f16"):
                lf = os.path.join(d, "l.bin")
                strata(binary, "logits", "-m", gguf_path, "-p", text, "--out", lf, "--kv-type", kv)
                s_logits = np.fromfile(lf, dtype="<f4")
                diffs[kv] = float(np.abs(s_logits - t_logits).max()) if s_logits.shape == t_logits.shape else float("inf")
            # Greedy continuation: 24 tokens from strata and from torch.
            s_gen = [int(x) for x in strata(binary, "run", "-m", gguf_path, "-p", text, "-n", "24",
                                            "--temp", "0", "--ids", "--ignore-eos",
                                            "--kv-type", "f32").split()]
            seq = list(ids)
            with torch.no_grad():
                for _ in range(len(s_gen)):
                    seq.append(int(model(torch.tensor(seq)[None], last_only=True)[0, -1].argmax()))
            t_gen = seq[len(ids):]
        good = same_tokens and diffs["f32"] <= tolerance and s_gen == t_gen
        ok &= good
        print(f"{'ok ' if good else 'BAD'} {name:12s} tokens {len(ids):4d} same={same_tokens} "
              f"max|dlogit| kv f32 {diffs['f32']:.2e} kv f16 {diffs['f16']:.2e} "
              f"logit range {t_logits.min():.1f}..{t_logits.max():.1f} "
              f"greedy same={s_gen == t_gen} ({len(s_gen)} tokens)")
        if s_gen != t_gen:
            print(f"    strata {s_gen}\n    torch  {t_gen}")
    return ok
