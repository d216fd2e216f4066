#!/usr/bin/python3
"""The tiny random-weight test model: 2+2 layers, d_model 32, 4 heads, FFN 64,
our 8k tokenizer, F16 weights (so the loader's F16 path is exercised), fixed seed.
Weights are drawn wider than a trained model's so that logits have clear
margins and greedy parity is not decided by rounding."""
import argparse, os, sys
import torch
sys.path.insert(0, os.path.dirname(__file__))
from model import Marian, default_config
from export import export
from marian_tok import MarianTok


def random_marian(cfg, tok, seed=20261122, eos_bias=2.0):
    """A Marian model with wide random weights (clear logit margins) and an
    eos bias so that some outputs end before max_length."""
    torch.manual_seed(seed)
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
        m.final_logits_bias[0, tok.eos] += eos_bias
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tok", required=True); ap.add_argument("--out", required=True)
    a = ap.parse_args()
    tok = MarianTok(a.tok)
    V = len(tok.vocab)
    cfg = default_config(vocab_size=V, decoder_vocab_size=V, pad_token_id=tok.pad, decoder_start_token_id=tok.pad,
                         bad_words_ids=[[tok.pad]], eos_token_id=tok.eos, forced_eos_token_id=tok.eos,
                         d_model=32, encoder_layers=2, decoder_layers=2, num_hidden_layers=2,
                         encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                         decoder_ffn_dim=64, max_position_embeddings=256, max_length=64, dropout=0.0)
    m = random_marian(cfg, tok)
    export(m.state_dict(), cfg, a.tok, a.out, "F16")
    print(f"tiny model written to {a.out}")


if __name__ == "__main__":
    main()
