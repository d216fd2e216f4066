#!/usr/bin/python3
"""A random-weight model of the default shape (d_model 256, 3+3 layers, 4 heads,
FFN 1024, 8k vocab, F32) for benchmarking before the trained model exists.
Weights are drawn as in models/recipe/tiny.py (wide, so logits have margins)
with an end-of-sentence bias so outputs end before max_length.
Usage: bench/random_model.py OUT_DIR   (never commit the output)"""
import os, sys
import torch
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models", "recipe"))
from model import default_config
from tiny import random_marian
from export import export
from marian_tok import MarianTok


def main():
    out = sys.argv[1]
    tok_dir = os.path.join(HERE, "..", "models", "tiny")
    tok = MarianTok(tok_dir)
    V = len(tok.vocab)
    cfg = default_config(vocab_size=V, decoder_vocab_size=V, pad_token_id=tok.pad, decoder_start_token_id=tok.pad,
                         bad_words_ids=[[tok.pad]], eos_token_id=tok.eos, forced_eos_token_id=tok.eos, dropout=0.0)
    m = random_marian(cfg, tok, eos_bias=float(os.environ.get("EOS_BIAS", "2.0")))
    export(m.state_dict(), cfg, tok_dir, out, "F32")
    print(f"random default-shape model written to {out}")


if __name__ == "__main__":
    main()
