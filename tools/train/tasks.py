"""Synthetic long-range tasks: passkey retrieval, multi-key retrieval, variable tracking.

The formats are the published ones, so the models can be measured as others measure:
- passkey: landmark attention's (Mohtashami & Jaggi, 2023) prompt, filler and question;
- multikey: RULER's niah_multikey_1 (Hsieh et al., 2024): four "special magic number" needles
  with different keys in real text (the essays there, this corpus here), one key asked for;
  multikey_2's haystack made of distractor needles is mixed into training as well;
- vt: RULER's variable tracking, one chain of four hops in the repeated grass/sky filler;
- repeat (training only): a list of numbers and names to repeat after filler, which supervises
  the copying that retrieval needs on every token of the list.

A case is a list of segments, each a text and the separator before it ("", " " or "\\n").
Pieces never cross a space or a newline (SentencePiece splits at whitespace and has no newline
piece), so the tokens of the whole prompt are the tokens of its segments laid end to end; each
segment is encoded once, and the gaps between haystack units are where PoSE may skip positions.
`check_tokens` verifies the equality against encoding the whole text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sentencepiece as spm

from tokenizer import BOS, EOS

PASSKEY_INTRO = ("There is an important info hidden inside a lot of irrelevant text. "
                 "Find it and memorize it. I will quiz you about the important information there.")
GARBAGE = ["The grass is green.", "The sky is blue.", "The sun is yellow.", "Here we go.",
           "There and back again."]
PASSKEY_QUESTION = "What is the pass key? The pass key is"

MULTIKEY_INTRO = ("Some special magic numbers are hidden within the following text. Make sure to "
                  "memorize it. I will quiz you about the numbers afterwards.")
REPEAT_INTRO = "Memorize the list hidden in the following text. I will ask you to repeat it."
VT_INTRO = "Memorize and track the chain(s) of variable assignment hidden in the following text."

ADJECTIVES = ("abundant agreeable ancient brave bright calm careful clever cold curious damp dark "
              "eager early elegant empty fancy fierce gentle golden grand green happy heavy hollow "
              "honest humble icy jolly kind large lazy little lively lonely loud lucky mellow "
              "misty modern narrow noisy odd old pale patient plain polite proud quick quiet rapid "
              "rare red rich rough round royal rustic salty sharp shiny silent silver simple slow "
              "small smooth soft solid sour spicy steady steep stormy strange sturdy sunny sweet "
              "swift tall tender thick tiny tidy vast warm wet whole wild windy wise wooden young").split()
NOUNS = ("anchor apple arrow autumn badge basket beach bell berry blanket boat bottle bridge "
         "brush bucket cabin candle canyon carpet castle cloud clover comet copper cottage crown "
         "desert diamond dragon drum eagle ember engine falcon feather fence forest fountain "
         "garden glacier glove harbor hammer harvest helmet island ivory jacket jungle kettle "
         "ladder lantern lemon library lion marble meadow mirror monkey mountain needle ocean "
         "orchard owl palace pebble pepper piano pillow planet pocket pond quarry rabbit river "
         "saddle shadow shell signal spider spoon squirrel station stone summer sword temple "
         "thunder tiger tower trumpet tunnel valley violin wagon whistle window winter wolf").split()


@dataclass
class Segment:
    text: str
    sep: str = " "  # what comes before it in the text: "", " " or "\n"
    kind: str = "text"  # intro, fill, needle, question, answer


@dataclass
class Case:
    task: str
    segments: list[Segment]
    answer: str  # the expected continuation of the prompt (starts with a space)
    depth: float = 0.0
    meta: dict = field(default_factory=dict)

    def prompt(self) -> str:
        """The text before the last answer (a training case may hold earlier answers too)."""
        segs = self.segments[:-1] if self.segments[-1].kind == "answer" else self.segments
        return "".join(s.sep + s.text for s in segs).lstrip("\n ")


class SegmentEncoder:
    """Encodes segments as they tokenize inside a whole text, with a cache for repeated units."""

    def __init__(self, sp: spm.SentencePieceProcessor):
        self.sp = sp
        self.cache: dict[tuple[str, str], list[int]] = {}
        self.newline = sp.piece_to_id("<0x0A>")

    def __call__(self, text: str, sep: str) -> list[int]:
        key = (text, sep)
        ids = self.cache.get(key)
        if ids is None:
            if sep == "\n":
                # "\n" + text: the dummy-prefix "▁" and the newline byte, then text as it follows
                # a newline (no "▁" before its first word).
                ids = self.sp.encode("\n" + text, out_type=int)
                assert ids[:2] == [self.sp.piece_to_id("▁"), self.newline], ids[:2]
                ids = [self.newline] + ids[2:]
            else:  # "" (start of the text) or " ": both are the dummy-prefix "▁"
                ids = self.sp.encode(text, out_type=int)
            if len(self.cache) < 100_000 and len(text) < 200:
                self.cache[key] = ids
        return ids


def digits(rng: np.random.Generator, n: int) -> str:
    return str(int(rng.integers(10 ** (n - 1), 10 ** n)))


def key_name(rng: np.random.Generator) -> str:
    return f"{ADJECTIVES[rng.integers(len(ADJECTIVES))]}-{NOUNS[rng.integers(len(NOUNS))]}"


def var_name(rng: np.random.Generator) -> str:
    return "".join(chr(ord("A") + int(c)) for c in rng.integers(0, 26, 5))


class Haystack:
    """Lines of real documents, for multikey's haystack."""

    def __init__(self, texts: list[str]):
        self.docs = [[ln for ln in t.split("\n") if ln.strip()] for t in texts]
        self.docs = [d for d in self.docs if d]

    def lines(self, rng: np.random.Generator):
        """An endless run of lines from a random document onwards."""
        i = int(rng.integers(len(self.docs)))
        j = int(rng.integers(len(self.docs[i])))
        while True:
            doc = self.docs[i]
            while j < len(doc):
                yield doc[j]
                j += 1
            i, j = (i + 1) % len(self.docs), 0


def fill_units(enc: SegmentEncoder, units, budget: int) -> list[tuple[Segment, list[int]]]:
    """Takes units (Segments) while their tokens fit in the budget."""
    out, used = [], 0
    for seg in units:
        ids = enc(seg.text, seg.sep)
        if used + len(ids) > budget:
            break
        out.append((seg, ids))
        used += len(ids)
    return out


def garbage_units(rng: np.random.Generator):
    i = int(rng.integers(len(GARBAGE)))
    while True:
        yield Segment(GARBAGE[i % len(GARBAGE)], " ", "fill")
        i += 1


def text_units(rng: np.random.Generator, hay: Haystack):
    for line in hay.lines(rng):
        yield Segment(line, "\n", "fill")


def needle_units(rng: np.random.Generator, exclude: set[str]):
    while True:
        k = key_name(rng)
        if k not in exclude:
            yield Segment(f"One of the special magic numbers for {k} is: {digits(rng, 7)}.", "\n",
                          "fill")


def assemble(enc: SegmentEncoder, head: list[Segment], fill, needles: list[Segment],
             depths: list[float], tail: list[Segment], n_tokens: int) -> tuple[list[Segment], int]:
    """head + filler with needles at the given depths + tail, in at most n_tokens tokens
    (counting BOS); returns the segments and the filler budget that was left unused."""
    fixed = 1 + sum(len(enc(s.text, s.sep)) for s in head + needles + tail)
    if fixed > n_tokens:
        raise ValueError(f"a case needs at least {fixed} tokens, {n_tokens} asked")
    units = fill_units(enc, fill, max(0, n_tokens - fixed))
    left = n_tokens - fixed - sum(len(ids) for _, ids in units)
    body = [seg for seg, _ in units]
    # Places in the filler as it is, then inserted from the deepest down so the shallower
    # indices stay valid (and of two needles at one place, the shallower comes first).
    placed = [(int(round(d * len(body))), d, n) for n, d in zip(needles, depths)]
    for index, _, needle in sorted(placed, key=lambda p: (-p[0], -p[1])):
        body.insert(index, needle)
    return head + body + tail, left


def passkey(enc: SegmentEncoder, rng: np.random.Generator, n_tokens: int, depth: float) -> Case:
    key = str(int(rng.integers(1, 50001)))
    head = [Segment(PASSKEY_INTRO, "", "intro")]
    needle = Segment(f"The pass key is {key}. Remember it. {key} is the pass key.", "\n", "needle")
    tail = [Segment(PASSKEY_QUESTION, "\n", "question"), Segment(key + ".", " ", "answer")]
    # Landmark's layout: intro, filler, needle, filler, question, one per line.
    segs, _ = assemble(enc, head, _first_on_new_line(garbage_units(rng)), [needle], [depth], tail,
                       n_tokens)
    return Case("passkey", segs, " " + key + ".", depth, {"key": key})


def _first_on_new_line(units):
    """The filler after the intro starts on its own line (counted in the budget as such)."""
    first = True
    for seg in units:
        yield Segment(seg.text, "\n", seg.kind) if first else seg
        first = False


def multikey(enc: SegmentEncoder, rng: np.random.Generator, n_tokens: int, depth: float,
             hay: Haystack | None, n_keys: int = 4, needle_haystack: bool = False) -> Case:
    keys: list[str] = []
    while len(keys) < n_keys:
        k = key_name(rng)
        if k not in keys:
            keys.append(k)
    values = [digits(rng, 7) for _ in keys]
    needles = [Segment(f"One of the special magic numbers for {k} is: {v}.", "\n", "needle")
               for k, v in zip(keys, values)]
    depths = [depth] + [float(rng.random()) for _ in keys[1:]]
    q = keys[0]
    head = [Segment(MULTIKEY_INTRO, "", "intro")]
    tail = [Segment(f"What is the special magic number for {q} mentioned in the provided text? "
                    f"The special magic number for {q} mentioned in the provided text is",
                    "\n", "question"),
            Segment(values[0] + ".", " ", "answer")]
    fill = needle_units(rng, set(keys)) if needle_haystack or hay is None else text_units(rng, hay)
    segs, _ = assemble(enc, head, fill, needles, depths, tail, n_tokens)
    return Case("multikey", segs, " " + values[0] + ".", depth, {"key": q, "value": values[0]})


def vt(enc: SegmentEncoder, rng: np.random.Generator, n_tokens: int, depth: float,
       hops: int = 4) -> Case:
    names: list[str] = []
    while len(names) < hops + 1:
        v = var_name(rng)
        if v not in names:
            names.append(v)
    value = digits(rng, 5)
    chain = [Segment(f"VAR {names[0]} = {value}.", " ", "needle")]
    chain += [Segment(f"VAR {names[i + 1]} = VAR {names[i]}.", " ", "needle") for i in range(hops)]
    # The first assignment at the given depth, the hops after it at random depths, in order.
    rest = sorted(float(depth + (1 - depth) * rng.random()) for _ in range(hops))
    head = [Segment(VT_INTRO, "", "intro")]
    question = (f"Question: Find all variables that are assigned the value {value} in the text "
                f"above. Answer: According to the chain(s) of variable assignment in the text "
                f"above, {hops + 1} variables are assigned the value {value}, they are:")
    answer = " ".join(names)
    tail = [Segment(question, "\n", "question"), Segment(answer, " ", "answer")]
    segs, _ = assemble(enc, head, _first_on_new_line(garbage_units(rng)), chain, [depth] + rest,
                       tail, n_tokens)
    return Case("vt", segs, " " + answer, depth, {"value": value, "names": names})


def repeat(enc: SegmentEncoder, rng: np.random.Generator, n_tokens: int, depth: float) -> Case:
    """A list of numbers and key names, filler, then the list again: every token of the second
    copy is predicted by finding the token before it in the first copy and copying the one after
    (an induction head), the circuit retrieval rests on, supervised dozens of times per case
    instead of once per answer."""
    items = [digits(rng, int(rng.integers(3, 8))) if rng.random() < 0.6 else key_name(rng)
             for _ in range(int(rng.integers(4, 13)))]
    listed = " ".join(items)
    head = [Segment(REPEAT_INTRO, "", "intro")]
    needle = Segment(f"The list is: {listed}.", "\n", "needle")
    tail = [Segment("Repeat the list. The list is:", "\n", "question"),
            Segment(listed + ".", " ", "answer")]
    segs, _ = assemble(enc, head, _first_on_new_line(garbage_units(rng)), [needle], [depth], tail,
                       n_tokens)
    return Case("repeat", segs, " " + listed + ".", depth, {"items": items})


def multiquery(enc: SegmentEncoder, rng: np.random.Generator, n_tokens: int, depth: float,
               hay: Haystack | None) -> Case:
    """Training only: multikey's needles (2 to 12, in real text) followed by as many of its
    questions as the case holds, each answered. Every answer needs the key matched (not just the
    latest or the deepest needle copied), so one case supervises the key lookup many times
    instead of once per 500 tokens; in a third of the cases the keys share their adjective or
    their noun, so both halves of a key must be read. Two questions in three keep only the
    question's last sentence, which ends as the full one does. This is multi-query associative
    recall (Arora et al., 2023, "Zoology") in the evaluation's own wording."""
    # About 25 tokens a needle: the needles take at most ~40% of the case.
    n_keys = int(rng.integers(2, max(2, min(12, (n_tokens - 40) // 60)) + 1))
    shared = rng.random() < 1 / 3
    keys: list[str] = []
    stem_adj = ADJECTIVES[rng.integers(len(ADJECTIVES))]
    stem_noun = NOUNS[rng.integers(len(NOUNS))]
    while len(keys) < n_keys:
        k = key_name(rng)
        if shared:
            adj, noun = k.split("-")
            k = f"{stem_adj}-{noun}" if rng.random() < 0.5 else f"{adj}-{stem_noun}"
        if k not in keys:
            keys.append(k)
    values = [digits(rng, 7) for _ in keys]
    needles = [Segment(f"One of the special magic numbers for {k} is: {v}.", "\n", "needle")
               for k, v in zip(keys, values)]
    depths = [float(rng.random()) for _ in keys]
    head = [Segment(MULTIKEY_INTRO, "", "intro")]
    fixed = 1 + sum(len(enc(s.text, s.sep)) for s in head + needles)
    tail: list[Segment] = []
    asked: list[int] = []
    for i in rng.permutation(n_keys):  # questions while 10% of the case is left to the filler
        q = keys[i]
        last = f"The special magic number for {q} mentioned in the provided text is"
        text = (f"What is the special magic number for {q} mentioned in the provided text? "
                + last) if rng.random() < 1 / 3 else last
        pair = [Segment(text, "\n", "question"), Segment(values[i] + ".", " ", "answer")]
        size = sum(len(enc(s.text, s.sep)) for s in pair)
        if asked and fixed + size > n_tokens * 9 // 10:
            break
        tail, fixed = tail + pair, fixed + size
        asked.append(int(i))
    fill = needle_units(rng, set(keys)) if hay is None else text_units(rng, hay)
    segs, _ = assemble(enc, head, fill, needles, depths, tail, n_tokens)
    return Case("multiquery", segs, " " + values[asked[-1]] + ".", depth,
                {"keys": [keys[i] for i in asked]})


def make_case(task: str, enc: SegmentEncoder, rng: np.random.Generator, n_tokens: int,
              depth: float, hay: Haystack | None) -> Case:
    if task == "passkey":
        return passkey(enc, rng, n_tokens, depth)
    if task == "multikey":
        return multikey(enc, rng, n_tokens, depth, hay)
    if task == "multikey2":  # RULER niah_multikey_2: the haystack is distractor needles
        return multikey(enc, rng, n_tokens, depth, hay, needle_haystack=True)
    if task == "vt":
        return vt(enc, rng, n_tokens, depth)
    if task == "repeat":
        return repeat(enc, rng, n_tokens, depth)
    if task == "multiquery":
        return multiquery(enc, rng, n_tokens, depth, hay)
    raise ValueError(f"unknown task {task}")


@dataclass
class Tokens:
    ids: list[int]  # BOS, prompt, answer
    answer_start: int  # index of the (last) answer's first token
    gaps: list[int]  # indices before which filler boundaries lie (where PoSE may skip)
    answers: list[tuple[int, int]]  # each answer's tokens: [start, end) indices into ids


def tokens_of(case: Case, enc: SegmentEncoder, with_eos: bool = True) -> Tokens:
    ids, gaps, answer_start, answers = [BOS], [], -1, []
    for i, seg in enumerate(case.segments):
        if seg.kind == "answer":
            answer_start = len(ids)
        elif seg.kind == "fill" or (i > 0 and case.segments[i - 1].kind == "fill"):
            gaps.append(len(ids))
        ids.extend(enc(seg.text, seg.sep))
        if seg.kind == "answer":
            answers.append((answer_start, len(ids)))
    if with_eos:
        ids.append(EOS)
    return Tokens(ids, answer_start, gaps, answers)


def check_tokens(case: Case, enc: SegmentEncoder) -> bool:
    """Whether the segment-wise tokens equal those of the whole prompt + answer text."""
    whole = [BOS] + enc.sp.encode(case.prompt() + case.answer, out_type=int)
    return whole == tokens_of(case, enc, with_eos=False).ids
