"""The training loop: AdamW, warmup + cosine schedule, periodic evaluation, resumable checkpoints.

A run lives in one directory: config.json (as given), ckpt.pt (model, optimizer, step; written
atomically every checkpoint_every_s seconds, at the end, and on SIGINT/SIGTERM), metrics.jsonl
(one line per logged step or evaluation). Starting the same command again resumes from ckpt.pt;
batches depend only on (seed, step), so the resumed run continues exactly as an uninterrupted one.
"""

from __future__ import annotations

import json
import math
import os
import signal
import time
from dataclasses import dataclass, fields

import numpy as np
import torch
import torch.nn.functional as F

import corpus
import tasks
import tokenizer as tok
from data import IGNORE, DataConfig, Sampler, eval_windows
from export import load_gguf_weights
from key_carry import Pieces, carry_masks, input_masks, wire_key_carry
from model import (Llama, ModelConfig, copy_accuracy, key_lookup_masks, wire_induction,
                   wire_key_lookup, wired_masks)


@dataclass
class TrainConfig:
    steps: int = 1000
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup: int = 100
    weight_decay: float = 0.1
    beta2: float = 0.95
    grad_clip: float = 1.0
    threads: int = 1
    log_every: int = 10
    eval_every: int = 200
    eval_windows: int = 32  # held-out windows of seq_len for the validation loss
    eval_task_len: int = 1024  # real length (tokens) of the task cases evaluated during training
    eval_task_cases: int = 8  # per task
    checkpoint_every_s: float = 300.0
    long_every: int = 0  # every Nth step is one task row of long_len real tokens (0: never)
    long_len: int = 2048
    # Loss weight of task answers (a few tokens in a row of filler and text) against the rest.
    answer_weight: float = 1.0
    # Extra factor on each answer's first two tokens (" " and the first digit of a value): where
    # the needle is chosen; the tokens after it are copied from the chosen needle by induction.
    answer_first_weight: float = 1.0
    # Steps during which the entries set by init.induction get no gradient (model.wired_masks).
    hold_wired_steps: int = 0


def _from_dict(cls, d: dict):
    names = {f.name for f in fields(cls)}
    unknown = set(d) - names
    if unknown:
        raise SystemExit(f"error: unknown {cls.__name__} keys {sorted(unknown)}")
    return cls(**d)


def load_config(path: str) -> tuple[dict, ModelConfig, DataConfig, TrainConfig]:
    with open(path) as f:
        raw = json.load(f)
    return (raw, _from_dict(ModelConfig, raw.get("model", {})),
            _from_dict(DataConfig, raw.get("data", {})), _from_dict(TrainConfig, raw.get("train", {})))


@dataclass
class Stage:
    """The recipe from `first_step` on. A config's optional "stages" list changes the data mix
    and the length of a run part-way, reproducibly: each entry has "from_step" and "data" /
    "train" overrides of the base config (e.g. a larger "steps", a new peak "lr")."""
    first_step: int
    data: DataConfig
    train: TrainConfig
    # Whether the stage names its own "lr": then it warms up to it again and runs its cosine
    # from there (to leave a plateau); otherwise it goes on from the lr its first step had.
    restart_lr: bool = False


def load_stages(raw: dict, dc: DataConfig, tc: TrainConfig) -> list[Stage]:
    stages = [Stage(0, dc, tc)]
    for entry in raw.get("stages", []):
        prev = stages[-1]
        unknown = set(entry) - {"from_step", "data", "train", "comment"}
        if unknown or entry.get("from_step", 0) <= prev.first_step:
            raise SystemExit(f"error: a stage needs a from_step past the last one and only "
                             f"data/train overrides: {entry}")
        stages.append(Stage(entry["from_step"],
                            _from_dict(DataConfig, {**vars(prev.data), **entry.get("data", {})}),
                            _from_dict(TrainConfig, {**vars(prev.train), **entry.get("train", {})}),
                            "lr" in entry.get("train", {})))
    return stages


def stage_at(step: int, stages: list[Stage]) -> Stage:
    return [s for s in stages if s.first_step <= step][-1]


def lr_at(step: int, stages: list[Stage]) -> float:
    """Linear warmup, then a cosine to min_lr over the run. A later stage goes on from the lr
    its first step had and runs its own cosine to its min_lr over its steps."""
    s = stage_at(step, stages)
    t = s.train
    if s.first_step == 0 or s.restart_lr:
        if step - s.first_step < t.warmup:
            return t.lr * (step - s.first_step + 1) / t.warmup
        start_lr, begin = t.lr, s.first_step + t.warmup
    else:
        start_lr, begin = lr_at(s.first_step - 1, stages), s.first_step
    progress = min(1.0, (step - begin) / max(1, t.steps - begin))
    return t.min_lr + 0.5 * (start_lr - t.min_lr) * (1 + math.cos(math.pi * progress))


def answer_hits(logits: torch.Tensor, targets: torch.Tensor, spans, kinds) -> dict[str, list[float]]:
    """Per task, whether each answer's tokens are all the argmax (= greedy decoding's output),
    under the task's name, and the share of its tokens that are, under "tok_" + the name (the
    first shows a skill once it is there; the second shows it coming)."""
    hits: dict[str, list[float]] = {}
    pred = logits.argmax(-1)
    for r, row_spans in enumerate(spans):
        for a, b, task in row_spans:
            b = min(b, targets.shape[1])
            if a >= b:
                continue
            right = pred[r, a:b] == targets[r, a:b]
            hits.setdefault(task, []).append(float(right.all()))
            hits.setdefault("tok_" + task, []).append(float(right.float().mean()))
    return hits


@torch.no_grad()
def evaluate(model: Llama, windows: torch.Tensor, enc: tasks.SegmentEncoder, hay: tasks.Haystack,
             t: TrainConfig, seed: int = 12345) -> dict:
    model.eval()
    losses = []
    for i in range(0, len(windows), 8):
        w = windows[i:i + 8]
        logits = model(w[:, :-1])
        losses.append(F.cross_entropy(logits.flatten(0, 1), w[:, 1:].flatten(), reduction="sum"))
    val_loss = float(sum(losses) / windows[:, 1:].numel())
    out = {"val_loss": val_loss, "val_ppl": math.exp(val_loss)}
    rng = np.random.default_rng(seed)
    for task in ("passkey", "multikey", "vt"):
        hits = 0
        for i in range(t.eval_task_cases):
            depth = i / max(1, t.eval_task_cases - 1)
            case = tasks.make_case(task, enc, rng, t.eval_task_len, depth, hay)
            tk = tasks.tokens_of(case, enc, with_eos=False)
            ids = torch.tensor(tk.ids)[None]
            logits = model(ids[:, :-1], query_chunk=1024)
            a = tk.answer_start - 1
            hits += int((logits[0, a:].argmax(-1) == ids[0, a + 1:]).all())
        out[f"acc_{task}_{t.eval_task_len}"] = hits / t.eval_task_cases
    model.train()
    return out


def save_checkpoint(path: str, model, opt, step: int, elapsed: float, cpu: float, tokens: int,
                    raw_config: dict) -> None:
    tmp = path + ".tmp"
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step,
                "elapsed_s": elapsed, "cpu_s": cpu, "tokens": tokens, "config": raw_config}, tmp)
    os.replace(tmp, path)


def _trim_metrics(path: str, step: int) -> None:
    """Drops lines logged after the checkpoint being resumed (they will be logged again)."""
    if not os.path.exists(path):
        return
    with open(path) as f:
        keep = [ln for ln in f if json.loads(ln).get("step", 0) <= step]
    with open(path, "w") as f:
        f.writelines(keep)


def run(config_path: str, run_dir: str, data_dir: str, corpus_dir: str,
        max_seconds: float = 0.0, threads: int = 0) -> None:
    """threads overrides the config's (it changes the speed, not what is computed, up to the
    order of floating-point sums)."""
    raw, mc, dc, tc = load_config(config_path)
    torch.set_num_threads(threads or tc.threads)
    os.makedirs(run_dir, exist_ok=True)
    with open(os.path.join(run_dir, "config.json"), "w") as f:
        json.dump(raw, f, indent=1)

    sp = tok.load(os.path.join(data_dir, "tokenizer.model"))
    if sp.get_piece_size() != mc.vocab_size:
        raise SystemExit(f"error: tokenizer has {sp.get_piece_size()} pieces, model.vocab_size is "
                         f"{mc.vocab_size}")
    train_stream = np.load(os.path.join(data_dir, "train.npy"), mmap_mode="r")
    val_stream = np.load(os.path.join(data_dir, "val.npy"), mmap_mode="r")
    enc = tasks.SegmentEncoder(sp)
    hay_train = tasks.Haystack([d.text for d in corpus.read_split(corpus_dir, "train")])
    hay_test = tasks.Haystack([d.text for d in corpus.read_split(corpus_dir, "test")])
    stages = load_stages(raw, dc, tc)
    samplers = [Sampler(st.data, train_stream, enc, hay_train) for st in stages]
    tc = stages[-1].train  # the run's length and logging come from its last stage
    windows = eval_windows(val_stream, dc.seq_len, tc.eval_windows)

    torch.manual_seed(dc.seed)
    model = Llama(mc)
    # The config's optional "init": {"induction": {...}} sets an induction circuit into the fresh
    # weights (model.wire_induction's keyword arguments); a resumed run loads its weights instead.
    init = raw.get("init", {})
    # Or "init": {"from_gguf": PATH} starts from an exported model (a fine-tuning run; a relative
    # PATH is under the work directory), and "key_lookup": {...} beside it sets multikey's
    # lookup circuit into that model (model.wire_key_lookup's keyword arguments); with
    # "rewire": false it only holds the circuit a previous fine-tune set (continuing that run).
    # "key_carry": {...} beside from_gguf sets key_carry.wire_key_carry's circuit (its "carry"
    # and "continuation" settings; "fit_cases" multikey rows of 512 tokens to fit it on).
    unknown = set(init) - {"induction", "from_gguf", "key_lookup", "key_carry", "comment"}
    if (unknown or ("induction" in init and "from_gguf" in init)
            or (("key_lookup" in init or "key_carry" in init) and "from_gguf" not in init)):
        raise SystemExit("error: init takes induction, or from_gguf [+ key_lookup] "
                         f"[+ key_carry]: {sorted(init)}")
    wired = None
    fresh = not os.path.exists(os.path.join(run_dir, "ckpt.pt"))
    if "induction" in init and fresh:
        wired = wire_induction(model, **init["induction"])
    if "from_gguf" in init and fresh:
        # A relative path is under the work directory (runs/NAME's grandparent).
        load_gguf_weights(model, os.path.join(os.path.dirname(os.path.dirname(run_dir)),
                                              init["from_gguf"]))
        if "key_lookup" in init and init["key_lookup"].get("rewire", True):
            settings = {k: v for k, v in init["key_lookup"].items()
                        if k not in ("comment", "windows", "rewire")}
            if settings.get("digit_bonus"):
                settings["digit_ids"] = [i for i in range(sp.get_piece_size())
                                         if len(sp.id_to_piece(i)) == 1
                                         and sp.id_to_piece(i).isdigit()]
                settings["digit_before_ids"] = [sp.piece_to_id("\u2581")]
            n_windows = init["key_lookup"].get("windows", 16)
            wired = wire_key_lookup(model, eval_windows(train_stream, 256, n_windows), **settings)
        if "key_carry" in init:
            kc = init["key_carry"]
            rng = np.random.default_rng(kc.get("seed", 0))
            seqs = [torch.tensor([tasks.tokens_of(tasks.make_case(
                "multikey", enc, rng, 512, float(rng.random()), hay_train), enc, False).ids])
                for _ in range(kc.get("fit_cases", 96))]
            wired_carry = wire_key_carry(model, eval_windows(train_stream, 256, 32), seqs,
                                         Pieces.of(sp), kc.get("carry"), kc.get("continuation"))
            print(f"key-carry circuit set: {wired_carry}", flush=True)
    held = {}
    if "induction" in init:
        held = wired_masks(model, **init["induction"])
    elif "key_lookup" in init:
        held = key_lookup_masks(model, **init["key_lookup"])
    if "key_carry" in init:
        masks = carry_masks(model)
        if init["key_carry"].get("hold_inputs", False):
            masks.update(input_masks(model))
        for name, mask in masks.items():
            held[name] = torch.maximum(held[name], mask) if name in held else mask
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": tc.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=tc.lr, betas=(0.9, tc.beta2))
    ckpt_path = os.path.join(run_dir, "ckpt.pt")
    metrics_path = os.path.join(run_dir, "metrics.jsonl")
    step, elapsed0, cpu0, tokens = 0, 0.0, 0.0, 0
    if os.path.exists(ckpt_path):
        ck = torch.load(ckpt_path)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        step, elapsed0, cpu0, tokens = ck["step"], ck["elapsed_s"], ck["cpu_s"], ck["tokens"]
        _trim_metrics(metrics_path, step)
        print(f"resumed from {ckpt_path} at step {step}", flush=True)
    else:
        if os.path.exists(metrics_path):
            os.remove(metrics_path)
        print(f"model: {model.n_params() / 1e6:.2f}M parameters", flush=True)
        if wired is not None and "key_lookup" in init:
            print(f"key-lookup circuit set: {wired}", flush=True)
        elif wired is not None:
            print(f"induction circuit set at initialization: {wired}; copy accuracy on a repeated "
                  f"random run: {copy_accuracy(model):.2f}", flush=True)

    stop = {"flag": False}

    def on_signal(signum, frame):
        stop["flag"] = True
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    metrics = open(metrics_path, "a")

    def log(entry: dict) -> None:
        metrics.write(json.dumps(entry) + "\n")
        metrics.flush()

    wall_start, cpu_start = time.time(), time.process_time()
    last_ckpt = wall_start
    window_t, window_cpu, window_tokens = time.time(), time.process_time(), 0
    loss_acc, text_acc, hits_acc = [], [], {}
    model.train()
    while step < tc.steps and not stop["flag"]:
        stage = stage_at(step, stages)
        sampler, st = samplers[stages.index(stage)], stage.train
        long = st.long_every > 0 and step % st.long_every == st.long_every - 1
        if long:
            b = sampler.batch(step, seq_len=st.long_len, batch_size=1, task_frac=1.0)
        else:
            b = sampler.batch(step)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, stages)
        logits = model(b.tokens, b.pos, grad_checkpoint=long, query_chunk=1024 if long else 0)
        per_tok = F.cross_entropy(logits.flatten(0, 1), b.targets.flatten(), ignore_index=IGNORE,
                                  reduction="none").view(b.targets.shape)
        mask = (b.targets != IGNORE).float()
        weight = mask.clone()
        if st.answer_weight != 1.0 or st.answer_first_weight != 1.0:
            for r, row_spans in enumerate(b.answer_spans):
                for a, e, _ in row_spans:
                    weight[r, a:e] *= st.answer_weight
                    weight[r, a:min(e, a + 2)] *= st.answer_first_weight
        loss = (per_tok * weight).sum() / weight.sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if held and step < st.hold_wired_steps:
            for name, p in model.named_parameters():
                if name in held:
                    p.grad.mul_(1 - held[name])
        gnorm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), tc.grad_clip))
        opt.step()
        step += 1
        n_tok = int(b.tokens.numel())
        tokens += n_tok
        window_tokens += n_tok
        loss_acc.append(float(loss))
        text_rows = [i for i, k in enumerate(b.kinds) if k == "text"]
        if text_rows:
            text_acc.append(float((per_tok[text_rows] * mask[text_rows]).sum() / mask[text_rows].sum()))
        for k, v in answer_hits(logits.detach(), b.targets, b.answer_spans, b.kinds).items():
            hits_acc.setdefault(k, []).extend(v)

        if step % tc.log_every == 0 or step == tc.steps:
            now, cpu_now = time.time(), time.process_time()
            entry = {"step": step, "tokens": tokens, "lr": lr_at(step - 1, stages),
                     "loss": float(np.mean(loss_acc)), "grad_norm": gnorm,
                     "tok_per_s": window_tokens / max(1e-9, now - window_t),
                     "tok_per_cpu_s": window_tokens / max(1e-9, cpu_now - window_cpu),
                     "elapsed_s": elapsed0 + now - wall_start}
            if text_acc:
                entry["text_loss"] = float(np.mean(text_acc))
            for k, v in hits_acc.items():
                entry[f"train_acc_{k}"] = float(np.mean(v))
            log(entry)
            text = f"{entry['text_loss']:.3f}" if "text_loss" in entry else "-"
            print(f"step {step}/{tc.steps} loss {entry['loss']:.3f} text {text} "
                  f"lr {entry['lr']:.2e} {entry['tok_per_s']:.0f} tok/s "
                  f"({entry['tok_per_cpu_s']:.0f} per cpu-s) "
                  f"eta {(tc.steps - step) * (now - window_t) / max(1, tc.log_every) / 60:.0f} min "
                  + " ".join(f"{k}={np.mean(v):.2f}" for k, v in sorted(hits_acc.items())), flush=True)
            window_t, window_cpu, window_tokens = now, cpu_now, 0
            loss_acc, text_acc, hits_acc = [], [], {}

        if step % tc.eval_every == 0 or step == tc.steps:
            ev = evaluate(model, windows, enc, hay_test, tc)
            log({"step": step, "tokens": tokens, **ev})
            print(f"eval step {step}: " + " ".join(f"{k} {v:.3f}" for k, v in ev.items()), flush=True)

        out_of_time = max_seconds > 0 and time.time() - wall_start > max_seconds
        if (time.time() - last_ckpt > tc.checkpoint_every_s or step == tc.steps or stop["flag"]
                or out_of_time):
            save_checkpoint(ckpt_path, model, opt, step, elapsed0 + time.time() - wall_start,
                            cpu0 + time.process_time() - cpu_start, tokens, raw)
            last_ckpt = time.time()
            print(f"checkpoint at step {step}", flush=True)
        if out_of_time:
            print(f"stopping after {max_seconds:.0f} s (resume with the same command)", flush=True)
            break
    metrics.close()
