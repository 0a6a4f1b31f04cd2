"""Training batches: corpus windows mixed with synthetic tasks, positions spread by PoSE.

Every step's batch is drawn from a generator seeded by (seed, step), so a run resumed from a
checkpoint sees exactly the batches it would have seen without the interruption.

PoSE (positional skip-wise training, Zhu et al., ICLR 2024): a row of T tokens keeps its tokens,
but its position ids jump forward at one or two cut points by skips drawn so that the last id is
below max_pos. Relative distances up to max_pos are trained with T-token attention. For task rows
the cuts fall between filler units, so a needle and its question drift apart in position as
they would in a haystack that many times longer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

import tasks
from tokenizer import BOS, EOS

# Control pieces and the 256 byte pieces come first in the vocabulary (tokenizer.py).
FIRST_ORDINARY = 3 + 256

IGNORE = -100


@dataclass
class DataConfig:
    seq_len: int = 512
    batch_size: int = 8
    task_frac: float = 0.35
    task_mix: dict | None = None  # task name -> weight
    pose_frac: float = 0.8
    max_pos: int = 8192
    seed: int = 1
    # Share of task rows packed with several short cases (lengths drawn from pack_len) instead
    # of one case of the row's length. Each case is a whole example with its own BOS and EOS;
    # a row then teaches the retrieval several times over at short range, where the copy
    # mechanism is learned, while the single-case rows with PoSE teach the long range.
    pack_frac: float = 0.0
    pack_len: tuple[int, int] = (160, 320)
    # Task "induct" (always packed): a run of random pieces, then the same run again, the
    # classic stimulus of induction heads (Olsson et al., 2022). Each piece of the second copy
    # is predictable only by finding its predecessor in the first copy and copying what followed,
    # the circuit every retrieval task needs, with no text prior to fall back on.
    induct_len: tuple[int, int] = (12, 48)

    def mix(self) -> tuple[list[str], np.ndarray]:
        mix = self.task_mix or {"passkey": 0.35, "multikey": 0.3, "multikey2": 0.1, "vt": 0.25}
        names = sorted(mix)
        w = np.array([mix[n] for n in names], dtype=np.float64)
        return names, w / w.sum()


@dataclass
class Batch:
    tokens: torch.Tensor  # (B, T) int64
    pos: torch.Tensor  # (B, T) int64
    targets: torch.Tensor  # (B, T) int64, IGNORE where no loss
    kinds: list[str]  # "text", "packed" or the task of each row
    # Per row, each answer in it: (first, end) target indices and the task; none for text.
    answer_spans: list[list[tuple[int, int, str]]]


def pose_positions(rng: np.random.Generator, n: int, cuts: list[int], max_pos: int) -> np.ndarray:
    """0..n-1 with one or two forward jumps, at cut points from `cuts`, ending below max_pos."""
    pos = np.arange(n, dtype=np.int64)
    slack = max_pos - n
    cuts = [c for c in cuts if 0 < c < n]
    if slack <= 0 or not cuts:
        return pos
    k = min(len(cuts), int(rng.integers(1, 3)))
    points = rng.choice(cuts, size=k, replace=False)
    total = int(rng.integers(0, slack + 1))
    shares = rng.dirichlet(np.ones(k)) * total
    for p, s in zip(points, shares.astype(np.int64)):
        pos[p:] += s
    return pos


class Sampler:
    def __init__(self, cfg: DataConfig, stream: np.ndarray, enc: tasks.SegmentEncoder,
                 hay: tasks.Haystack):
        self.cfg, self.stream, self.enc, self.hay = cfg, stream, enc, hay
        self.task_names, self.task_p = cfg.mix()
        self.vocab_size = enc.sp.get_piece_size()

    def row(self, rng: np.random.Generator, n: int, task_frac: float, pose_frac: float):
        """n + 1 tokens (inputs and shifted targets), their positions, kind, answer spans."""
        if rng.random() < task_frac:
            if rng.random() < self.cfg.pack_frac:
                return self.packed_row(rng, n)
            task = str(rng.choice(self.task_names, p=self.task_p))
            if task == "induct":
                return self.packed_row(rng, n)
            case = tasks.make_case(task, self.enc, rng, n, float(rng.random()), self.hay)
            tk = tasks.tokens_of(case, self.enc)
            ids = np.array(tk.ids[: n + 1], dtype=np.int64)
            valid = len(ids) - 1  # targets past it are padding
            ids = np.concatenate([ids, np.full(n + 1 - len(ids), EOS, dtype=np.int64)])
            cuts, kind = tk.gaps, task
            spans = [(a - 1, b - 1, task) for a, b in tk.answers]  # the answers' target indices
        else:
            start = int(rng.integers(0, len(self.stream) - n - 1))
            ids = self.stream[start:start + n + 1].astype(np.int64)
            valid, cuts, kind, spans = n, list(range(1, n)), "text", []
        targets = ids[1:].copy()
        targets[valid:] = IGNORE
        if rng.random() < pose_frac:
            pos = pose_positions(rng, n, cuts, self.cfg.max_pos)
        else:
            pos = np.arange(n, dtype=np.int64)
        return ids[:-1], pos, targets, kind, spans

    def packed_row(self, rng: np.random.Generator, n: int):
        """Whole short cases laid end to end up to n + 1 tokens, at plain positions (the last
        case is cut off; an answer cut off with it is not counted)."""
        ids: list[int] = []
        spans = []
        unscored = []  # target ranges of induct cases' first runs: random, nothing to learn
        lo, hi = self.cfg.pack_len
        while len(ids) < n + 1:
            task = str(rng.choice(self.task_names, p=self.task_p))
            if task == "induct":
                case_ids, answer_start = self.induct_case(rng)
                first, end = len(ids) + answer_start - 1, len(ids) + len(case_ids) - 2
                if end <= n:
                    spans.append((first, end, task))
                unscored.append((len(ids), first))
                ids.extend(case_ids)
                continue
            length = int(rng.integers(lo, hi + 1))
            try:
                case = tasks.make_case(task, self.enc, rng, length, float(rng.random()), self.hay)
            except ValueError:  # shorter than the task's fixed text: take the next draw
                continue
            tk = tasks.tokens_of(case, self.enc)
            spans += [(len(ids) + a - 1, len(ids) + b - 1, task) for a, b in tk.answers
                      if len(ids) + b - 1 <= n]
            ids.extend(tk.ids)
        row = np.array(ids[: n + 1], dtype=np.int64)
        targets = row[1:].copy()
        for a, b in unscored:
            targets[a:min(b, n)] = IGNORE
        return row[:-1], np.arange(n, dtype=np.int64), targets, "packed", spans

    def induct_case(self, rng: np.random.Generator) -> tuple[list[int], int]:
        """BOS, a run of random ordinary pieces, the run again, EOS; and where the copy starts."""
        lo, hi = self.cfg.induct_len
        run = rng.integers(FIRST_ORDINARY, self.vocab_size, int(rng.integers(lo, hi + 1)))
        ids = [BOS, *run.tolist()]
        return ids + run.tolist() + [EOS], len(ids)

    def batch(self, step: int, *, seq_len: int | None = None, batch_size: int | None = None,
              task_frac: float | None = None) -> Batch:
        c = self.cfg
        rng = np.random.default_rng([c.seed, step])
        n = seq_len or c.seq_len
        rows = [self.row(rng, n, c.task_frac if task_frac is None else task_frac, c.pose_frac)
                for _ in range(batch_size or c.batch_size)]
        return Batch(torch.from_numpy(np.stack([r[0] for r in rows])),
                     torch.from_numpy(np.stack([r[1] for r in rows])),
                     torch.from_numpy(np.stack([r[2] for r in rows])),
                     [r[3] for r in rows], [r[4] for r in rows])


def eval_windows(stream: np.ndarray, seq_len: int, count: int, seed: int = 0) -> torch.Tensor:
    """count fixed windows of seq_len + 1 tokens spread evenly over a held-out stream."""
    starts = np.linspace(0, len(stream) - seq_len - 2, count).astype(np.int64)
    return torch.from_numpy(np.stack([stream[s:s + seq_len + 1].astype(np.int64) for s in starts]))
