#!/usr/bin/env python3
"""Writes passkey-retrieval prompts as JSON lines, {"prompt", "answer", "length", "depth"} each,
for scripts/compare-llamacpp-testbed.sh --prompts (prompts are raw text, without BOS).

  scripts/passkey-prompts.py [--lengths 256,1024,4096] [--depths 0.1,0.5,0.9] [--seed 1]
      [--chars-per-token 3] > prompts.jsonl

length is the wanted prompt length in tokens, reached only roughly: the filler is sized from
--chars-per-token (measure it with `strata tokenize` for a vocabulary far from the default).
depth is where the key sits in the filler, 0 (start) to 1 (end). Standard library only.
"""
import argparse
import json
import random

HEAD = ("There is an important info hidden inside a lot of irrelevant text. Find it and memorize "
        "it. I will quiz you about the important information there.\n")
FILLER = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
TAIL = "\nWhat is the pass key? The pass key is"


def prompt(length, depth, key, chars_per_token):
    needle = f"\nThe pass key is {key}. Remember it. {key} is the pass key.\n"
    room = length * chars_per_token - len(HEAD) - len(needle) - len(TAIL)
    n = max(1, round(room / len(FILLER)))
    before = round(n * depth)
    return HEAD + (FILLER * before).rstrip() + needle + (FILLER * (n - before)).rstrip() + TAIL


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lengths", default="256,1024,4096")
    p.add_argument("--depths", default="0.1,0.5,0.9")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--chars-per-token", type=float, default=3.0)
    a = p.parse_args()
    rng = random.Random(a.seed)
    for length in (int(x) for x in a.lengths.split(",")):
        for depth in (float(x) for x in a.depths.split(",")):
            key = str(rng.randint(10000, 99999))
            print(json.dumps({"prompt": prompt(length, depth, key, a.chars_per_token),
                              "answer": key, "length": length, "depth": depth}))


if __name__ == "__main__":
    main()
