#!/usr/bin/python3
"""tools/train: builds the corpus and tokenizer, trains, evaluates and exports the testbed models.

Run with Debian's interpreter (/usr/bin/python3), where python3-torch lives. Everything large
goes under --work (default /work/train-data): corpus/, data/ (tokenizer and token streams),
runs/NAME/ (checkpoint, metrics). See README.md for the whole sequence.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def paths(work: str) -> dict[str, str]:
    return {"corpus": os.path.join(work, "corpus"), "data": os.path.join(work, "data"),
            "runs": os.path.join(work, "runs")}


def cmd_corpus(a) -> None:
    import corpus
    stats = corpus.build(paths(a.work)["corpus"], a.val_frac, a.test_frac)
    print(corpus.format_stats(stats))


def cmd_tokenizer(a) -> None:
    import tokenizer as tok
    p = paths(a.work)
    os.makedirs(p["data"], exist_ok=True)
    model = tok.train(p["corpus"], os.path.join(p["data"], "tokenizer"), a.vocab, a.threads)
    sp = tok.load(model)
    sizes = {s: tok.encode_split(sp, p["corpus"], s, os.path.join(p["data"], f"{s}.npy"))
             for s in ("train", "val", "test")}
    with open(os.path.join(p["data"], "tokens.json"), "w") as f:
        json.dump(sizes, f, indent=1)
    print("tokens (with BOS/EOS per document):", sizes)


def cmd_train(a) -> None:
    import train
    p = paths(a.work)
    name = a.name or os.path.splitext(os.path.basename(a.config))[0]
    train.run(a.config, os.path.join(p["runs"], name), p["data"], p["corpus"], a.max_seconds,
              a.threads)


def cmd_export(a) -> None:
    import export
    p = paths(a.work)
    info = export.export(os.path.join(p["runs"], a.name, "ckpt.pt"),
                         os.path.join(p["data"], "tokenizer.model"), a.out, a.gguf_name or a.name)
    print(f"wrote {a.out}: {info}")


def cmd_verify(a) -> None:
    import verify
    p = paths(a.work)
    ok = verify.run(os.path.join(p["runs"], a.name, "ckpt.pt"), a.gguf, a.strata,
                    os.path.join(p["data"], "tokenizer.model"), p["corpus"], a.tolerance)
    sys.exit(0 if ok else 1)


def cmd_plot(a) -> None:
    import plot
    p = paths(a.work)
    plot.plot({n: os.path.join(p["runs"], n, "metrics.jsonl") for n in a.names}, a.out)
    print(f"wrote {a.out}")


def cmd_tasks(a) -> None:
    import evaluate
    p = paths(a.work)
    evaluate.run(os.path.join(p["runs"], a.name, "ckpt.pt"), os.path.join(p["data"], "tokenizer.model"),
                 p["corpus"], [int(x) for x in a.lengths.split(",")], a.depths, a.cases, a.threads,
                 a.out)


def cmd_evalset(a) -> None:
    import evaluate
    p = paths(a.work)
    n = evaluate.write_cases(os.path.join(p["data"], "tokenizer.model"), p["corpus"], a.out,
                             [int(x) for x in a.lengths.split(",")], a.depths, a.cases)
    print(f"wrote {n} cases to {a.out}")


def cmd_manifest(a) -> None:
    import manifest
    manifest.write(a.work, a.repo, a.target, a.draft, a.val_chars)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/work/train-data", help="where corpus, data and runs go")
    sub = ap.add_subparsers(dest="cmd", required=True)

    s = sub.add_parser("corpus", help="build the corpus from Debian text packages")
    s.add_argument("--val-frac", type=float, default=0.05)
    s.add_argument("--test-frac", type=float, default=0.05)
    s.set_defaults(fn=cmd_corpus)

    s = sub.add_parser("tokenizer", help="train the SentencePiece tokenizer and encode the splits")
    s.add_argument("--vocab", type=int, default=4096)
    s.add_argument("--threads", type=int, default=1)
    s.set_defaults(fn=cmd_tokenizer)

    s = sub.add_parser("train", help="train (or resume) a model from a config")
    s.add_argument("config")
    s.add_argument("--name", help="run name (default: the config's file name)")
    s.add_argument("--max-seconds", type=float, default=0.0,
                   help="checkpoint and stop after this long (0: run to the end)")
    s.add_argument("--threads", type=int, default=0, help="torch threads (default: the config's)")
    s.set_defaults(fn=cmd_train)

    s = sub.add_parser("export", help="write a run's checkpoint as a GGUF F16 model")
    s.add_argument("name")
    s.add_argument("out")
    s.add_argument("--gguf-name", help="general.name (default: the run name)")
    s.set_defaults(fn=cmd_export)

    s = sub.add_parser("verify", help="compare strata's tokens, logits and greedy output with torch")
    s.add_argument("name")
    s.add_argument("gguf")
    s.add_argument("--strata", default="build/strata")
    s.add_argument("--tolerance", type=float, default=1e-2, help="max abs logit difference")
    s.set_defaults(fn=cmd_verify)

    s = sub.add_parser("plot", help="loss curves of runs as a PNG")
    s.add_argument("out")
    s.add_argument("names", nargs="+")
    s.set_defaults(fn=cmd_plot)

    s = sub.add_parser("tasks", help="task accuracy by length and depth (torch, greedy)")
    s.add_argument("name")
    s.add_argument("--lengths", default="1024,2048,4096,8192")
    s.add_argument("--depths", type=int, default=5)
    s.add_argument("--cases", type=int, default=4, help="per task, length and depth")
    s.add_argument("--threads", type=int, default=1)
    s.add_argument("--out", help="also write the results as JSON here")
    s.set_defaults(fn=cmd_tasks)

    s = sub.add_parser("evalset", help="write task cases (prompt, answer) as JSON lines")
    s.add_argument("out")
    s.add_argument("--lengths", default="1024,2048,4096,8192")
    s.add_argument("--depths", type=int, default=5)
    s.add_argument("--cases", type=int, default=4)
    s.set_defaults(fn=cmd_evalset)

    s = sub.add_parser("manifest", help="copy the exported models into models/testbed with a manifest")
    s.add_argument("--repo", default=os.path.normpath(os.path.join(HERE, "..", "..")))
    s.add_argument("--target", default="target", help="run name of the target model")
    s.add_argument("--draft", default="draft", help="run name of the draft model")
    s.add_argument("--val-chars", type=int, default=300_000,
                   help="characters of the validation split copied into the repository")
    s.set_defaults(fn=cmd_manifest)

    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
