"""The text corpus: English plain text from Debian packages, split by document.

Each source yields documents (id, text). A document is the unit of the train / validation / test
split, so no chapter, manual page or fortune file is in two splits. Within a source, documents are
ordered by a hash of their id (stable across machines and package versions that keep the ids) and
taken into validation until it holds `val_frac` of the source's characters, then into test until
that holds `test_frac`, the rest into train.
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import json
import os
import re
import subprocess
from dataclasses import dataclass
from typing import Callable, Iterator


@dataclass
class Document:
    id: str
    source: str
    text: str


def _read(path: str) -> str:
    raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def clean(text: str) -> str:
    """Unix newlines, no trailing blanks, tabs as spaces, at most one empty line in a row."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", "    ").replace("\xa0", " ")
    # Backspace overstriking (old fortunes: "_\bw" underlines) keeps the overstruck letter.
    text = re.sub(r".\x08", "", text)
    text = "".join(ch for ch in text if ch == "\n" or ch >= " " or ch == "\t")
    lines = [line.rstrip() for line in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n") + "\n"


def kjv() -> Iterator[Document]:
    """The King James Bible (bible-kjv-text, read through bible-kjv's `bible`), one chapter each."""
    out = subprocess.run(["bible", "-l100000", "gen1:1-rev22:21"], check=True,
                         capture_output=True, text=True).stdout
    header = re.compile(r"^(\S.*) (\d+)$")
    name, lines = None, []
    for line in out.split("\n") + ["END 0"]:
        m = header.match(line)
        if m:
            if name is not None:
                yield Document(f"kjv/{name}", "kjv", clean(name + "\n\n" + "\n".join(lines)))
            name, lines = line, []
        elif line.strip():
            lines.append(line.strip())


def fortunes() -> Iterator[Document]:
    """Fortune cookie files (fortunes, fortunes-min), one file each, cookies as paragraphs."""
    for path in sorted(glob.glob("/usr/share/games/fortunes/*")):
        name = os.path.basename(path)
        if "." in name or os.path.islink(path) or name == "ascii-art":  # art drawn in characters
            continue
        cookies = [c.strip("\n") for c in re.split(r"^%$", _read(path), flags=re.M)]
        yield Document(f"fortunes/{name}", "fortunes",
                       clean("\n\n".join(c for c in cookies if c.strip())))


def _sphinx_sources(source: str, root: str) -> Iterator[Document]:
    for path in sorted(glob.glob(os.path.join(root, "**", "*.rst.txt"), recursive=True)):
        rel = os.path.relpath(path, root)
        yield Document(f"{source}/{rel}", source, clean(_read(path)))


def python_docs() -> Iterator[Document]:
    """The Python 3 documentation (python3-doc) as its reStructuredText sources, one page each."""
    roots = sorted(glob.glob("/usr/share/doc/python3.*/html/_sources"))
    if roots:
        yield from _sphinx_sources("python-doc", roots[-1])


def debian_reference() -> Iterator[Document]:
    """The Debian Reference (debian-reference-en) plain text, one section (N.M.) each."""
    text = _read("/usr/share/debian-reference/debian-reference.en.txt.gz").replace("\xa0", " ")
    parts: list[str] = []
    for part in re.split(r"(?m)^(?=Chapter \d+\. |Appendix [A-Z]\. |\d+\.\d+\. \S)", text):
        if parts and len(part) < 500:  # a heading alone, or the lines of the list of tables
            parts[-1] += part
        else:
            parts.append(part)
    for i, part in enumerate(parts):
        if part.strip():
            title = part.split("\n", 1)[0].strip()
            yield Document(f"debian-reference/{i:03d} {title}", "debian-reference", clean(part))


def debian_policy() -> Iterator[Document]:
    """The Debian Policy Manual (sources), its side documents and the FHS (debian-policy)."""
    yield from _sphinx_sources("debian-policy", "/usr/share/doc/debian-policy/policy.html/_sources")
    for path in sorted(glob.glob("/usr/share/doc/debian-policy/**/*.txt.gz", recursive=True)):
        name = os.path.basename(path)
        if name not in ("policy.txt.gz", "README.txt.gz"):  # the manual again; a pointer
            yield Document(f"debian-policy/{name}", "debian-policy", clean(_read(path)))


def developers_reference() -> Iterator[Document]:
    """The Debian Developer's Reference (developers-reference), one chapter each."""
    yield from _sphinx_sources("developers-reference", "/usr/share/developers-reference/_sources")


def doc_debian() -> Iterator[Document]:
    """Debian project documents (doc-debian): constitution, social contract, bug system guides."""
    for path in sorted(glob.glob("/usr/share/doc/debian/*")):
        name = os.path.basename(path)
        if re.search(r"\.\d+\.\d+\.txt", name):  # superseded versions of the constitution etc.
            continue
        if os.path.isfile(path):
            yield Document(f"doc-debian/{name}", "doc-debian", clean(_read(path)))


SOURCES: dict[str, tuple[str, Callable[[], Iterator[Document]]]] = {
    "kjv": ("bible-kjv-text", kjv),
    "fortunes": ("fortunes, fortunes-min", fortunes),
    "python-doc": ("python3-doc", python_docs),
    "debian-reference": ("debian-reference-en", debian_reference),
    "debian-policy": ("debian-policy", debian_policy),
    "developers-reference": ("developers-reference", developers_reference),
    "doc-debian": ("doc-debian", doc_debian),
}

SPLITS = ("train", "val", "test")


def split_documents(docs: list[Document], val_frac: float, test_frac: float) -> dict[str, list[Document]]:
    order = sorted(docs, key=lambda d: hashlib.sha256(d.id.encode()).hexdigest())
    total = sum(len(d.text) for d in docs)
    out: dict[str, list[Document]] = {s: [] for s in SPLITS}
    held = {"val": 0, "test": 0}
    for d in order:
        if held["val"] < val_frac * total:
            split = "val"
        elif held["test"] < test_frac * total:
            split = "test"
        else:
            split = "train"
        if split != "train":
            held[split] += len(d.text)
        out[split].append(d)
    return out


def build(out_dir: str, val_frac: float = 0.05, test_frac: float = 0.05,
          sources: list[str] | None = None) -> dict:
    """Writes out_dir/{train,val,test}.jsonl and out_dir/stats.json; returns the stats."""
    os.makedirs(out_dir, exist_ok=True)
    files = {s: open(os.path.join(out_dir, f"{s}.jsonl.tmp"), "w", encoding="utf-8") for s in SPLITS}
    stats: dict = {"sources": {}, "totals": {s: {"docs": 0, "chars": 0, "bytes": 0} for s in SPLITS}}
    for name in sources or list(SOURCES):
        package, make = SOURCES[name]
        docs = [d for d in make() if d.text.strip()]
        if not docs:
            raise SystemExit(f"error: source {name} ({package}) gave no text; run tools/train/setup.sh")
        entry: dict = {"package": package}
        for split, part in split_documents(docs, val_frac, test_frac).items():
            chars = sum(len(d.text) for d in part)
            nbytes = sum(len(d.text.encode()) for d in part)
            entry[split] = {"docs": len(part), "chars": chars, "bytes": nbytes}
            tot = stats["totals"][split]
            tot["docs"] += len(part)
            tot["chars"] += chars
            tot["bytes"] += nbytes
            for d in part:
                files[split].write(json.dumps(d.__dict__, ensure_ascii=False) + "\n")
        stats["sources"][name] = entry
    for split, f in files.items():
        f.close()
        os.replace(f.name, os.path.join(out_dir, f"{split}.jsonl"))
    with open(os.path.join(out_dir, "stats.json"), "w") as f:
        json.dump(stats, f, indent=1)
    return stats


def read_split(corpus_dir: str, split: str) -> list[Document]:
    with open(os.path.join(corpus_dir, f"{split}.jsonl"), encoding="utf-8") as f:
        return [Document(**json.loads(line)) for line in f]


def format_stats(stats: dict) -> str:
    rows = ["| source | package | train docs / MB | val docs / MB | test docs / MB |",
            "| --- | --- | --- | --- | --- |"]
    def cell(e: dict) -> str:
        return f"{e['docs']} / {e['bytes'] / 1e6:.2f}"
    for name, e in stats["sources"].items():
        rows.append(f"| {name} | {e['package']} | " + " | ".join(cell(e[s]) for s in SPLITS) + " |")
    rows.append("| total | | " + " | ".join(cell(stats["totals"][s]) for s in SPLITS) + " |")
    return "\n".join(rows)
