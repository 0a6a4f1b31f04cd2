"""Task accuracy by length and depth, and the task cases as JSON lines for other engines.

Accuracy is greedy exact match computed teacher-forced: the answer's tokens are all the argmax
given the prompt and the answer's earlier tokens, which is exactly when greedy decoding writes
the answer. Haystack text comes from the test split, so the cases are held out from training.
"""

from __future__ import annotations

import json
import time

import numpy as np
import torch

import corpus
import tasks
import tokenizer as tok
from export import load_model, round_to_export

EVAL_TASKS = ("passkey", "multikey", "vt")


def depths(n: int) -> list[float]:
    return [i / (n - 1) for i in range(n)] if n > 1 else [0.5]


def cases(sp, corpus_dir: str, lengths: list[int], n_depths: int, per: int, seed: int = 2024):
    enc = tasks.SegmentEncoder(sp)
    hay = tasks.Haystack([d.text for d in corpus.read_split(corpus_dir, "test")])
    rng = np.random.default_rng(seed)
    for task in EVAL_TASKS:
        for length in lengths:
            for depth in depths(n_depths):
                for _ in range(per):
                    yield enc, tasks.make_case(task, enc, rng, length, depth, hay), length


def write_cases(tokenizer_path: str, corpus_dir: str, out: str, lengths: list[int], n_depths: int,
                per: int) -> int:
    sp = tok.load(tokenizer_path)
    n = 0
    with open(out, "w", encoding="utf-8") as f:
        for enc, case, length in cases(sp, corpus_dir, lengths, n_depths, per):
            tk = tasks.tokens_of(case, enc, with_eos=False)
            f.write(json.dumps({"task": case.task, "length": length, "depth": round(case.depth, 3),
                                "prompt_tokens": tk.answer_start, "prompt": case.prompt(),
                                "answer": case.answer}, ensure_ascii=False) + "\n")
            n += 1
    return n


@torch.no_grad()
def run(ckpt: str, tokenizer_path: str, corpus_dir: str, lengths: list[int], n_depths: int,
        per: int, threads: int, out: str | None) -> dict:
    torch.set_num_threads(threads)
    sp = tok.load(tokenizer_path)
    model, _ = load_model(ckpt)
    round_to_export(model)
    results: dict = {}
    t0 = time.time()
    for enc, case, length in cases(sp, corpus_dir, lengths, n_depths, per):
        tk = tasks.tokens_of(case, enc, with_eos=False)
        ids = torch.tensor(tk.ids)[None]
        logits = model(ids[:, :-1], query_chunk=1024)
        a = tk.answer_start - 1
        hit = bool((logits[0, a:].argmax(-1) == ids[0, a + 1:]).all())
        results.setdefault(case.task, {}).setdefault(str(length), {}).setdefault(
            f"{case.depth:.2f}", []).append(int(hit))
    table = {t: {L: {d: float(np.mean(v)) for d, v in ds.items()} for L, ds in ls.items()}
             for t, ls in results.items()}
    for t, ls in table.items():
        for L, ds in ls.items():
            print(f"{t:9s} {L:>5s}: " + " ".join(f"d{d}={v:.2f}" for d, v in ds.items())
                  + f"  mean {np.mean(list(ds.values())):.2f}")
    print(f"({time.time() - t0:.0f} s)")
    if out:
        with open(out, "w") as f:
            json.dump(table, f, indent=1)
    return table
