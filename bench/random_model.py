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
from model import Marian, default_config
from export import export
from marian_tok import MarianTok


def main():
    out = sys.argv[1]
    tok_dir = os.path.join(HERE, "..", "models", "tiny")
    tok = MarianTok(tok_dir)
    V = len(tok.vocab)
    cfg = default_config(vocab_size=V, decoder_vocab_size=V, pad_token_id=tok.pad, decoder_start_token_id=tok.pad,
                         bad_words_ids=[[tok.pad]], eos_token_id=tok.eos, forced_eos_token_id=tok.eos, dropout=0.0)
    torch.manual_seed(20261122)
    m = Marian(cfg)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "layer_norm" in name:
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.2 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn_like(p))
            elif name == "model.shared.weight":
                p.copy_(0.5 * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) / p.shape[1] ** 0.5)
        m.model.shared.weight[tok.pad].zero_()
        m.final_logits_bias.copy_(0.5 * torch.randn_like(m.final_logits_bias))
        m.final_logits_bias[0, tok.eos] += float(os.environ.get("EOS_BIAS", "2.0"))
    export(m.state_dict(), cfg, tok_dir, out, "F32")
    print(f"random default-shape model written to {out}")


if __name__ == "__main__":
    main()
