#!/usr/bin/python3
"""Quick checks of the tool's invariants (seconds; needs the setup packages, a built corpus and
tokenizer): python3 tools/train/selftest.py [--work DIR]."""

from __future__ import annotations

import argparse
import os
import struct
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import corpus  # noqa: E402
import gguf  # noqa: E402
import key_carry  # noqa: E402
import tasks  # noqa: E402
import tokenizer as tok  # noqa: E402
from data import IGNORE, DataConfig, Sampler  # noqa: E402
from train import TrainConfig, lr_at, load_stages  # noqa: E402
from model import (Llama, ModelConfig, attention_probs, copy_accuracy,  # noqa: E402
                   wire_induction, wire_key_lookup)


def check_tasks(sp, hay) -> None:
    enc = tasks.SegmentEncoder(sp)
    rng = np.random.default_rng(0)
    for task in ("passkey", "multikey", "multikey2", "vt", "repeat", "multiquery"):
        for _ in range(50):
            n = int(rng.integers(250, 3000))
            case = tasks.make_case(task, enc, rng, n, float(rng.random()), hay)
            tk = tasks.tokens_of(case, enc, with_eos=False)
            assert tasks.check_tokens(case, enc), (task, case.prompt()[:200])
            assert len(tk.ids) <= n, (task, len(tk.ids), n)
            assert sp.decode(tk.ids[tk.answer_start:]) == case.answer.strip()
            assert tk.answers[-1] == (tk.answer_start, len(tk.ids))
            if task == "multiquery":  # each answer is the value of the key its question names
                text = case.prompt() + case.answer
                for (a, b), key in zip(tk.answers, case.meta["keys"]):
                    value = sp.decode(tk.ids[a:b])[:-1]
                    assert f"for {key} is: {value}." in text, (key, value)
    print("tasks: segment tokens equal whole-text tokens; lengths within budget; answers decode")


def check_model() -> None:
    torch.manual_seed(0)
    m = Llama(ModelConfig(dim=128, n_layers=2, n_heads=2, n_kv_heads=1, ffn_dim=256))
    m.eval()
    t = torch.randint(0, 4096, (2, 200))
    with torch.no_grad():
        a = m(t)
        shifted = m(t, torch.arange(200)[None].expand(2, 200) + 5000)
        chunked = m(t, query_chunk=64)
        t2 = t.clone()
        t2[:, 150:] = 7
        causal = m(t2)[:, :150]
    assert (a - shifted).abs().max() < 1e-4, "RoPE must depend on relative positions only"
    assert (a - chunked).abs().max() < 1e-4, "query chunks must not change attention"
    assert (a[:, :150] - causal).abs().max() == 0, "attention must be causal"
    print("model: relative positions, causal, chunked attention equal")


def check_wiring() -> None:
    """The induction circuit set at initialization copies a repeated random run before any
    training (random weights copy nothing), and leaves the model's RoPE relative and causal."""
    torch.manual_seed(0)
    m = Llama(ModelConfig(dim=128, n_layers=2, n_heads=2, n_kv_heads=1, ffn_dim=256))
    before = copy_accuracy(m)
    wire_induction(m)
    after, long = copy_accuracy(m), copy_accuracy(m, 1000)
    assert before < 0.05 and after > 0.4 and long > 0.3, (before, after, long)
    m.eval()
    t = torch.randint(0, 4096, (1, 300))
    with torch.no_grad():
        a, b = m(t), m(t, torch.arange(300)[None] + 4000)
    assert (a - b).abs().max() < 1e-3, "RoPE must depend on relative positions only"
    # The target's settings: 2 KV heads, the distance-2 pair of heads as well, embeddings x10.
    torch.manual_seed(0)
    t6 = Llama(ModelConfig(dim=256, n_layers=6, n_heads=4, n_kv_heads=2, ffn_dim=768))
    wire_induction(t6, embed_scale=10.0, bigram=True)
    target = copy_accuracy(t6)
    assert target > 0.5, target
    print(f"wiring: repeated-run copy accuracy {before:.2f} -> {after:.2f} at init "
          f"({long:.2f} over 1,000 tokens; target shape with bigram heads {target:.2f})")
    # The key lookup on top: layer 0's positional heads read 4 and 9 back, and layer 2's match
    # head takes a question's end (its piece 9 back) to the value whose piece 4 back is the same.
    g = torch.Generator().manual_seed(1)
    wire_key_lookup(t6, torch.randint(259, 4096, (8, 257), generator=g), alpha=2.0, beta=2.0)
    seq = torch.randint(259, 4096, (1, 300), generator=g)
    for p in (40, 100, 160):
        seq[0, p + 4] = 260 + p
    seq[0, 250 - 9] = seq[0, 100]
    later = torch.arange(50, 300)
    assert bool((attention_probs(t6, seq, 0, 2)[50:].argmax(-1) == later - 4).all())
    assert bool((attention_probs(t6, seq, 0, 3)[50:].argmax(-1) == later - 9).all())
    match = attention_probs(t6, seq, 2, 0)[250]
    assert int(match.argmax()) == 104 and float(match[104]) > 100 * float(match[44] + match[164])
    print(f"wiring: key lookup reads 4 and 9 back; the match head's weight on the right value "
          f"{float(match[104]):.2f}")
    # With the digit bonus: a question's end ("▁", here 299) prefers, of two positions 4 after
    # the key, the one that is a number's first digit (300-309 after a "▁") over the question's
    # own echo of the key; the probes are fitted on windows that hold such numbers.
    torch.manual_seed(0)
    t6 = Llama(ModelConfig(dim=256, n_layers=6, n_heads=4, n_kv_heads=2, ffn_dim=768))
    wire_induction(t6, embed_scale=10.0, bigram=True)
    windows = torch.randint(310, 4096, (32, 257), generator=g)
    for w in range(32):
        for at in torch.randint(0, 255, (8,), generator=g).tolist():
            windows[w, at], windows[w, at + 1] = 299, 300 + at % 10
    wire_key_lookup(t6, windows, alpha=2.0, beta=2.0, match_pair=21, digit_bonus=8.0,
                    digit_ids=list(range(300, 310)), digit_before_ids=[299])
    seq = torch.randint(310, 4096, (1, 300), generator=g)
    seq[0, 100], seq[0, 180] = 500, 500  # the key's last piece, in a needle and in an echo
    seq[0, 103], seq[0, 104] = 299, 307  # the needle's "▁" and first digit
    seq[0, 250 - 9], seq[0, 250] = 500, 299
    match = attention_probs(t6, seq, 2, 0)[250]
    assert int(match.argmax()) == 104 and float(match[104]) > 20 * float(match[184]), (
        float(match[104]), float(match[184]))
    print(f"wiring: digit bonus; weight on the value {float(match[104]):.2f}, on the echo "
          f"{float(match[184]):.4f}")


def check_data(stream, sp, hay) -> None:
    s = Sampler(DataConfig(), stream, tasks.SegmentEncoder(sp), hay)
    a, b = s.batch(17), s.batch(17)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.pos, b.pos), "batches must be reproducible"
    assert int(a.pos.max()) < 8192 and bool((a.pos[:, 1:] > a.pos[:, :-1]).all())
    print("data: batch(step) reproducible; positions increasing, below max_pos")
    packed = Sampler(DataConfig(task_frac=1.0, pack_frac=1.0), stream, tasks.SegmentEncoder(sp), hay)
    p = packed.batch(3)
    assert all(k == "packed" for k in p.kinds) and all(len(sp_) >= 1 for sp_ in p.answer_spans)
    for r, spans in enumerate(p.answer_spans):
        for a, e, task in spans:  # the answer's tokens, then the case's EOS
            assert 0 <= a < e <= p.targets.shape[1]
            assert e == p.targets.shape[1] or int(p.targets[r, e]) == tok.EOS
            answer = sp.decode([int(t) for t in p.targets[r, a:e]])
            assert task in ("vt", "repeat") or (answer.endswith(".") and answer[:-1].isdigit()), answer
    print("data: packed rows are whole cases with their answers located")
    mq = Sampler(DataConfig(task_frac=1.0, pack_frac=0.5, task_mix={"multiquery": 1.0}), stream,
                 tasks.SegmentEncoder(sp), hay)
    m = mq.batch(5)
    newline = sp.piece_to_id("<0x0A>")
    for r, spans in enumerate(m.answer_spans):
        assert len(spans) >= 2, spans  # 512 tokens hold several questions
        for a, e, _ in spans:  # each answer, then the next question's newline or the EOS
            assert e == m.targets.shape[1] or int(m.targets[r, e]) in (tok.EOS, newline)
            answer = sp.decode([int(t) for t in m.targets[r, a:e]])
            assert answer.endswith(".") and answer[:-1].isdigit() and len(answer) == 8, answer
    print("data: multiquery rows score every answer")
    induct = Sampler(DataConfig(task_frac=1.0, pack_frac=1.0, task_mix={"induct": 1.0}), stream,
                     tasks.SegmentEncoder(sp), hay)
    q = induct.batch(5, seq_len=256)
    for r, spans in enumerate(q.answer_spans):
        for a, e, _ in spans:  # the copy, predicted from position a, repeats the run before it
            run = q.tokens[r, a + 1 - (e - a):a + 1]
            assert torch.equal(q.targets[r, a:e], run) and int(q.tokens[r, a - (e - a)]) == tok.BOS
            assert bool((q.targets[r, a - (e - a):a] == IGNORE).all()), "the first run has no loss"
    print("data: induct rows repeat their run of random pieces")


def check_schedule() -> None:
    raw = {"stages": [{"from_step": 300, "train": {"steps": 1200}}]}
    t = TrainConfig(steps=1000, lr=1e-3, min_lr=1e-4, warmup=50)
    stages = load_stages(raw, DataConfig(), t)
    assert abs(lr_at(299, stages) - lr_at(300, stages)) < 1e-5, "a stage starts from the lr it had"
    assert abs(lr_at(1199, stages) - 1e-4) < 1e-6 and lr_at(49, stages) == 1e-3
    raw["stages"].append({"from_step": 600, "train": {"lr": 2e-3, "warmup": 10, "steps": 1300}})
    stages = load_stages(raw, DataConfig(), t)
    assert lr_at(600, stages) == 2e-4 and lr_at(609, stages) == 2e-3
    assert abs(lr_at(1299, stages) - 1e-4) < 1e-6
    print("schedule: a later stage continues the lr and ends at min_lr, or re-warms to its own")


def check_gguf() -> None:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.gguf")
        w = np.arange(6, dtype=np.float32).reshape(2, 3)
        gguf.write(path, {"a": gguf.u32(7), "s": gguf.string("x"),
                          "arr": gguf.array(gguf.STRING, ["p", "q"])},
                   [("w", w.astype(np.float16)), ("n", np.ones(3, np.float32))])
        raw = open(path, "rb").read()
        meta, tensors = gguf.read(path)
    assert meta == {"a": 7, "s": "x", "arr": ["p", "q"]}, meta
    assert tensors["w"].dtype == np.float16 and np.array_equal(tensors["w"], w)
    assert np.array_equal(tensors["n"], np.ones(3, np.float32))
    assert raw[:4] == b"GGUF" and struct.unpack("<IQQ", raw[4:24]) == (3, 2, 3)
    # The data section starts aligned; the first tensor is w as F16 in row-major order.
    data = np.frombuffer(raw[len(raw) - 32 - 32:len(raw) - 32][:12], dtype="<f2")
    assert np.array_equal(data, w.astype(np.float16).ravel()), data
    print("gguf: header and tensor data laid out as written, and read back")


def check_carry() -> None:
    """The key carry (key_carry.py) on a fresh model holding the induction circuit: synthetic
    rows of filler with needles "numbers for K1 K2 is : ▁ d1..d7 ." and a question "number for
    K1 K2 m e n ▁ d1..d7" whose key is one needle's. The carry head must rest on the key's first
    piece at every digit, and the continuation head must take each answer digit to the next
    digit of the needle with the same key, though the other needles share its first digits."""
    torch.manual_seed(0)
    t6 = Llama(ModelConfig(dim=256, n_layers=6, n_heads=4, n_kv_heads=2, ffn_dim=768))
    wire_induction(t6, embed_scale=10.0, bigram=True)
    pc = key_carry.Pieces(for_=400, numbers=[401, 402], space=299,
                          digit_of={300 + i: i for i in range(10)})
    g = torch.Generator().manual_seed(2)

    def row(length=320):
        ids = torch.randint(600, 4096, (length,), generator=g).tolist()
        keys = torch.randint(500, 600, (3, 2), generator=g).tolist()
        value = torch.randint(0, 10, (7,), generator=g).tolist()
        values = [value, value[:3] + torch.randint(0, 10, (4,), generator=g).tolist(),
                  torch.randint(0, 10, (7,), generator=g).tolist()]
        for i, at in enumerate((40, 120, 200)):
            ids[at:at + 15] = [402, 400, *keys[i], 410, 411, 299,
                               *[300 + v for v in values[i]], 412]
        answer = length - 10  # in the row with BOS: the question's "▁"; its digits follow
        ids[answer - 13:answer + 7] = [401, 400, *keys[0], 413, 414, 415, 416, 417, 418, 419,
                                       410, 299, *[300 + v for v in value]]
        return torch.tensor([[1] + ids]), answer, 48  # 48: the first needle's first digit

    windows = torch.randint(600, 4096, (16, 257), generator=g)
    fit = [row()[0] for _ in range(64)]
    info = key_carry.wire_key_carry(t6, windows, fit, pc)
    carried = right = total = 0
    for _ in range(8):
        seq, answer, needle = row()
        carry = attention_probs(t6, seq, 1, 3)
        cont = attention_probs(t6, seq, 2, 2)
        for k in range(1, 7):
            t = answer + k
            carried += int(seq[0, int(carry[t].argmax()) - 1]) == 400
            right += int(cont[t].argmax()) == needle + k
            total += 1
    assert carried == total and right >= 0.8 * total, (carried, right, total, info)
    print(f"wiring: key carry on the key at {carried}/{total} answer digits; the continuation "
          f"takes {right}/{total} to the right needle's next digit")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default="/work/train-data")
    a = ap.parse_args()
    sp = tok.load(os.path.join(a.work, "data", "tokenizer.model"))
    hay = tasks.Haystack([d.text for d in corpus.read_split(os.path.join(a.work, "corpus"), "test")])
    stream = np.load(os.path.join(a.work, "data", "train.npy"), mmap_mode="r")
    check_tasks(sp, hay)
    check_model()
    check_wiring()
    check_carry()
    check_data(stream, sp, hay)
    check_schedule()
    check_gguf()
    print("all checks passed")


if __name__ == "__main__":
    main()
