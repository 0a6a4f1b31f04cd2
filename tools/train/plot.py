"""Loss curves: training loss (text rows), validation loss and task accuracy against tokens seen."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path: str) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def smooth(values: list[float], k: int = 10) -> list[float]:
    out, acc = [], 0.0
    for i, v in enumerate(values):
        acc = v if i == 0 else acc + (v - acc) / min(i + 1, k)
        out.append(acc)
    return out


def plot(runs: dict[str, str], out_path: str) -> None:
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(12, 4.5))
    for name, path in runs.items():
        rows = read(path)
        train = [r for r in rows if "loss" in r]
        evals = [r for r in rows if "val_loss" in r]
        x = [r["tokens"] / 1e6 for r in train]
        line, = ax_loss.plot(x, smooth([r.get("text_loss", r["loss"]) for r in train]), lw=1,
                             alpha=0.7, label=f"{name} train (text rows)")
        ax_loss.plot([r["tokens"] / 1e6 for r in evals], [r["val_loss"] for r in evals], "o-",
                     color=line.get_color(), label=f"{name} validation")
        for key in sorted({k for r in evals for k in r if k.startswith("acc_")}):
            ax_acc.plot([r["tokens"] / 1e6 for r in evals], [r.get(key, float("nan")) for r in evals],
                        "o-", label=f"{name} {key[4:]}")
    ax_loss.set_xlabel("training tokens (M)")
    ax_loss.set_ylabel("cross-entropy (nats/token)")
    ax_loss.set_title("loss")
    ax_loss.grid(alpha=0.3)
    ax_loss.legend(fontsize=8)
    ax_acc.set_xlabel("training tokens (M)")
    ax_acc.set_ylabel("greedy exact match")
    ax_acc.set_ylim(-0.05, 1.05)
    ax_acc.set_title("tasks (held-out cases)")
    ax_acc.grid(alpha=0.3)
    ax_acc.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)
