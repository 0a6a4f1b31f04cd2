"""The SentencePiece tokenizer: trained on the corpus, used to encode it, exported to GGUF.

BPE rather than unigram: llama.cpp's "llama" (SPM) tokenizer, which strata follows, merges the
pair whose merged piece has the highest score, which is exactly SentencePiece's BPE encoding; a
unigram model would be encoded by Viterbi in SentencePiece and only approximately by llama.cpp.
The options are Llama's: identity normalization, no whitespace folding, a dummy prefix space,
digits split one per piece (a pass key is copied digit by digit), byte fallback for anything else.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
import sentencepiece as spm

import corpus

UNK, BOS, EOS = 0, 1, 2

# SentencePiece piece kinds as GGUF tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
TYPE_NORMAL, TYPE_UNKNOWN, TYPE_CONTROL, TYPE_USER_DEFINED, TYPE_UNUSED, TYPE_BYTE = 1, 2, 3, 4, 5, 6


def train(corpus_dir: str, model_prefix: str, vocab_size: int = 4096, threads: int = 1,
          max_sentences: int = 2_000_000, seed: int = 1234) -> str:
    """Trains on the train split's lines; returns the path of the .model file."""
    if hasattr(spm, "set_random_generator_seed"):
        spm.set_random_generator_seed(seed)
    os.makedirs(os.path.dirname(model_prefix) or ".", exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8", delete=False,
                                     dir=os.path.dirname(model_prefix) or ".") as f:
        for doc in corpus.read_split(corpus_dir, "train"):
            for line in doc.text.split("\n"):
                if line.strip():
                    f.write(line + "\n")
        lines_path = f.name
    try:
        spm.SentencePieceTrainer.train(
            input=lines_path, model_prefix=model_prefix, model_type="bpe", vocab_size=vocab_size,
            character_coverage=0.9999, byte_fallback=True, split_digits=True,
            normalization_rule_name="identity", remove_extra_whitespaces=False,
            add_dummy_prefix=True, allow_whitespace_only_pieces=True,
            unk_id=UNK, bos_id=BOS, eos_id=EOS, pad_id=-1,
            input_sentence_size=max_sentences, shuffle_input_sentence=True,
            max_sentence_length=16384, num_threads=threads, minloglevel=1)
    finally:
        os.unlink(lines_path)
    return model_prefix + ".model"


def load(model_path: str) -> spm.SentencePieceProcessor:
    return spm.SentencePieceProcessor(model_file=model_path)


def encode(sp: spm.SentencePieceProcessor, text: str) -> list[int]:
    return sp.encode(text, out_type=int)


def encode_split(sp: spm.SentencePieceProcessor, corpus_dir: str, split: str, out_path: str) -> int:
    """Writes the split as one uint16 stream, each document as BOS text EOS; returns its length."""
    docs = corpus.read_split(corpus_dir, split)
    ids = sp.encode([d.text for d in docs], out_type=int)
    stream = np.fromiter((t for doc in ids for t in [BOS, *doc, EOS]), dtype=np.uint16)
    tmp = out_path + ".tmp.npy"
    np.save(tmp, stream)
    os.replace(tmp, out_path)
    return len(stream)


def gguf_vocab(sp: spm.SentencePieceProcessor) -> dict:
    """The tokenizer.ggml.* metadata of a llama (SPM) vocabulary, as llama.cpp's converter writes it."""
    tokens, scores, types = [], [], []
    for i in range(sp.get_piece_size()):
        tokens.append(sp.id_to_piece(i))
        scores.append(float(sp.get_score(i)))
        if sp.is_unknown(i):
            types.append(TYPE_UNKNOWN)
        elif sp.is_control(i):
            types.append(TYPE_CONTROL)
        elif sp.is_byte(i):
            types.append(TYPE_BYTE)
        elif sp.is_unused(i):
            types.append(TYPE_UNUSED)
        else:
            types.append(TYPE_NORMAL)
    return {"tokens": tokens, "scores": scores, "token_type": types,
            "bos": sp.bos_id(), "eos": sp.eos_id(), "unk": sp.unk_id()}
