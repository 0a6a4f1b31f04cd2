"""Puts the trained models into the repository: models/testbed/{target,draft}.gguf (F16), the
held-out validation text, the task cases (tasks.jsonl) and manifest.json describing them."""

from __future__ import annotations

import hashlib
import json
import math
import os

import torch
import torch.nn.functional as F

import corpus
import export
import tokenizer as tok

TESTBED = os.path.join("models", "testbed")
MAX_BYTES = 64 * 1024 * 1024


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def validation_text(corpus_dir: str, max_chars: int) -> str:
    """Whole validation documents, in split order, up to max_chars."""
    out, n = [], 0
    for d in corpus.read_split(corpus_dir, "val"):
        if n + len(d.text) > max_chars and out:
            continue
        out.append(d.text)
        n += len(d.text)
    return "\n".join(out)


@torch.no_grad()
def perplexity_llama_style(model, ids: list[int], n_ctx: int = 512) -> float:
    """llama-perplexity's measure: chunks of n_ctx tokens, BOS as each chunk's first token, the
    second half of each chunk scored."""
    first = n_ctx // 2
    nll, count = 0.0, 0
    for c in range(len(ids) // n_ctx):
        chunk = torch.tensor(ids[c * n_ctx:(c + 1) * n_ctx])
        chunk[0] = tok.BOS
        logits = model(chunk[None])[0]
        lp = F.log_softmax(logits[first:n_ctx - 1].double(), -1)
        nll -= float(lp.gather(1, chunk[first + 1:, None]).sum())
        count += n_ctx - 1 - first
    return math.exp(nll / count)


def last_eval(metrics_path: str) -> dict:
    with open(metrics_path) as f:
        evals = [json.loads(ln) for ln in f if "val_loss" in ln]
    return evals[-1] if evals else {}


def _fine_tuned_from(ckpt: str, work: str, previous: dict) -> dict:
    """For a run started from an exported model (init.from_gguf): that file's sha256 and, when
    the manifest being replaced describes the same file, its entry (how that model was trained)."""
    init = torch.load(ckpt, map_location="cpu")["config"].get("init", {})
    if "from_gguf" not in init:
        return {}
    path = os.path.join(work, init["from_gguf"])
    base = {"file": init["from_gguf"], "sha256": sha256(path) if os.path.exists(path) else None}
    for entry in previous.values():
        if entry.get("sha256") == base["sha256"]:
            base.update({k: entry[k] for k in ("hyper_parameters", "training_steps",
                                               "training_tokens", "training_seconds",
                                               "validation_text_ppl_512") if k in entry})
            if "fine_tuned_from" in entry:
                base["fine_tuned_from"] = entry["fine_tuned_from"]
    return base


def write(work: str, repo: str, target: str, draft: str, val_chars: int) -> None:
    data, runs, corpus_dir = (os.path.join(work, x) for x in ("data", "runs", "corpus"))
    out_dir = os.path.join(repo, TESTBED)
    os.makedirs(out_dir, exist_ok=True)
    tokenizer_path = os.path.join(data, "tokenizer.model")
    sp = tok.load(tokenizer_path)

    val_rel = os.path.join(TESTBED, "validation.txt")
    text = validation_text(corpus_dir, val_chars)
    with open(os.path.join(repo, val_rel), "w", encoding="utf-8") as f:
        f.write(text)
    val_ids = [tok.BOS] + tok.encode(sp, text)

    with open(os.path.join(corpus_dir, "stats.json")) as f:
        stats = json.load(f)
    with open(os.path.join(data, "tokens.json")) as f:
        token_counts = json.load(f)
    corpus_info = {"sources": {k: v["package"] for k, v in stats["sources"].items()},
                   "split": "by document; see tools/train/README.md",
                   "tokens": token_counts, "tokenizer": f"SentencePiece BPE, {sp.get_piece_size()} pieces, byte fallback"}

    manifest: dict = {"validation_text": val_rel, "validation_tokens": len(val_ids),
                      "tokenizer": corpus_info["tokenizer"],
                      "tasks_note": ("long-context cases come from `strata eval --task "
                                     "passkey|multikey|vt` (multikey's haystack: --haystack "
                                     f"{val_rel}), deterministic in --seed; --write-prompts "
                                     "writes them for other engines")}
    manifest_path = os.path.join(out_dir, "manifest.json")
    previous: dict = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            previous = json.load(f).get("models", {})
    total = 0
    for role, name in (("target", target), ("draft", draft)):
        ckpt = os.path.join(runs, name, "ckpt.pt")
        file_rel = os.path.join(TESTBED, f"{role}.gguf")
        kept = previous.get(role)
        if not os.path.exists(ckpt) and kept and os.path.exists(os.path.join(repo, file_rel)) \
                and sha256(os.path.join(repo, file_rel)) == kept["sha256"]:
            # No run here for this model (trained on another machine): the committed file and
            # its entry stay as they are.
            manifest[role] = file_rel
            manifest.setdefault("models", {})[role] = kept
            total += kept["bytes"]
            print(f"{role}: kept {file_rel} as committed (no run {name} in {runs})")
            continue
        base = _fine_tuned_from(ckpt, os.path.dirname(runs), previous)
        info = export.export(ckpt, tokenizer_path, os.path.join(repo, file_rel), f"strata-testbed-{role}")
        model, ck = export.load_model(ckpt)
        export.round_to_export(model)
        torch.set_num_threads(int(ck["config"].get("train", {}).get("threads", 1)))
        ev = last_eval(os.path.join(runs, name, "metrics.jsonl"))
        size = os.path.getsize(os.path.join(repo, file_rel))
        total += size
        manifest[role] = file_rel
        manifest.setdefault("models", {})[role] = {
            "file": file_rel, "sha256": sha256(os.path.join(repo, file_rel)), "bytes": size,
            "parameters": info["params"], "corpus": corpus_info,
            "hyper_parameters": ck["config"], "training_steps": info["step"],
            "training_tokens": info["tokens"], "training_seconds": round(ck["elapsed_s"]),
            "validation_loss": ev.get("val_loss"),
            "validation_loss_note": "mean over held-out windows of the validation split during training",
            "validation_text_ppl_512": perplexity_llama_style(model, val_ids),
            "task_accuracy_at_training_end": {k: v for k, v in ev.items() if k.startswith("acc_")},
        }
        if base:
            manifest["models"][role]["fine_tuned_from"] = base
        manifest["context_length"] = int(ck["config"]["model"]["context_length"])
        print(f"{role}: {file_rel} {size / 1e6:.1f} MB, validation ppl (512-token chunks) "
              f"{manifest['models'][role]['validation_text_ppl_512']:.3f}")
    if total > MAX_BYTES:
        raise SystemExit(f"error: the models take {total / 1e6:.1f} MB, over the 64 MiB budget")
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print(f"wrote {os.path.join(out_dir, 'manifest.json')}")
