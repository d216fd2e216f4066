#!/usr/bin/python3
"""The PyTorch reference's speed on the same weights and inputs as bench_engine.

Prints one JSON line per configuration: sentences/s, target tokens/s and the
output ids (so bench/run.py can check the C outputs are equal).
Greedy runs batched (batch 1 and 32); beam search in the reference decodes one
sentence at a time, so "beam 4 batch 32" is 32 sentences decoded one after
another (the reference has no batched beam search).  A configuration
batch:beam:m decodes only the first m sentences (as bench_engine does).

--weights names how the weights are held, as the C engine's --weights: one
entry of WEIGHTS below per mode (f32: as loaded; f16 and int8 below).

--weights f16 reproduces the C engine's F16 mode (engine/model/model.c,
prepare_weights): every weight MATRIX is rounded to half precision (round to
nearest even) once, before decoding -- the weight of every nn.Linear (attention
q/k/v/out, fc1, fc2, encoder and decoder) and the embedding table
(model.shared.weight, which is also the tied lm_head).  Biases, LayerNorm
weights/biases, final_logits_bias and the sinusoidal position table stay F32;
activations stay F32.

--weights int8 is models/recipe/model.py's quantize_int8 (the C engine's INT8:
every Linear and the vocabulary projection quantized per output row, inputs
per row as each product runs)."""
import argparse, json, os, sys, time
import torch
import torch.nn as nn
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "models", "recipe"))
from load import load_dir
from marian_tok import MarianTok
import model as recipe_model


@torch.no_grad()
def run(m, tok, srcs, batch, beam, max_len):
    outs = []
    t0 = time.perf_counter()
    for s in range(0, len(srcs), batch):
        chunk = srcs[s:s + batch]
        if beam == 1:
            L = max(map(len, chunk))
            st = torch.full((len(chunk), L), tok.pad)
            for r, x in enumerate(chunk):
                st[r, :len(x)] = torch.tensor(x)
            outs += m.greedy(st, (st != tok.pad).long(), max_len)
        else:
            outs += [m.beam(x, beam, max_len)[0][1] for x in chunk]
    dt = time.perf_counter() - t0
    return outs, dt


LINEAR_NAMES = ("q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2")


def round_f16(m):
    """Round the weight matrices the C engine rounds in F16 mode; returns their names.
    Selected by module type and name (not by shape: final_logits_bias is [1, V] and
    must stay F32)."""
    done = []
    for name, mod in m.named_modules():
        if isinstance(mod, nn.Linear):
            assert name.rsplit(".", 1)[-1] in LINEAR_NAMES, name
            w = f"{name}.weight"
        elif isinstance(mod, nn.Embedding):
            assert name == "model.shared", name        # shared: encoder/decoder tables and the tied lm_head
            w = f"{name}.weight"
        else:
            continue
        p = mod.weight
        p.data = p.data.half().float()
        done.append(w)
    c = m.c
    expect = 6 * c["encoder_layers"] + 10 * c["decoder_layers"] + 1
    assert len(done) == expect, (len(done), expect)
    assert "final_logits_bias" not in done and not any(x.endswith(".bias") for x in done)
    return done


def round_f16_mode(m):
    names = round_f16(m)
    n = sum(m.get_parameter(x).numel() for x in names)
    return (f"rounded {len(names)} weight matrices ({n} values) to F16: "
            f"{sum(x.startswith('model.encoder.') for x in names)} encoder Linear, "
            f"{sum(x.startswith('model.decoder.') for x in names)} decoder Linear, "
            f"{sum(x == 'model.shared.weight' for x in names)} embedding/lm_head (model.shared.weight); "
            f"biases, LayerNorms, final_logits_bias and positions kept F32")


def int8_mode(m):
    return f"quantized {recipe_model.quantize_int8(m)} matrices to int8 per output row (model.quantize_int8)"


# --weights: how the reference holds the weights, as the C engine's mode of that name
# (bench_engine.c WEIGHTS).  None: as loaded.  A new mode is one entry here.
WEIGHTS = {"f32": None, "f16": round_f16_mode, "int8": int8_mode}


def configs(text):
    """"batch:beam[:sentences],..." -> [(batch, beam, sentences or None)]"""
    out = []
    for c in text.split(","):
        x = [int(v) for v in c.split(":")]
        if len(x) not in (2, 3) or min(x) < 1:
            raise SystemExit(f"bench_torch: bad config {c}")
        out.append((x[0], x[1], x[2] if len(x) == 3 else None))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True); ap.add_argument("--input")
    ap.add_argument("--n", type=int, default=64); ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--weights", choices=tuple(WEIGHTS), default="f32",
                    help="how the weights are held, as the C engine's --weights of the same name")
    ap.add_argument("--configs", default="1:1,32:1,1:4,32:4", help="batch:beam[:sentences],...")
    ap.add_argument("--src-ids", help="source ids, one JSON list a line (bench_engine --src-out): "
                    "decode exactly these instead of tokenizing --input")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    m, _ = load_dir(a.model); tok = MarianTok(a.model)
    if WEIGHTS[a.weights]:
        with torch.no_grad():
            what = WEIGHTS[a.weights](m)
        print(f"bench_torch: --weights {a.weights}: {what}", file=sys.stderr, flush=True)
    if a.src_ids:
        srcs = [json.loads(x) for x in open(a.src_ids).read().splitlines()[:a.n]]
    else:
        srcs = [tok.encode(x) for x in open(a.input).read().splitlines()[:a.n]]
    beams = {}       # beam search is sentence by sentence whatever the batch: measured once per (beam, sentences)
    for batch, beam, k in configs(a.configs):
        sub = srcs[:k] if k else srcs
        note = None
        if beam > 1 and (beam, len(sub)) in beams:
            outs, dt, note = *beams[beam, len(sub)][:2], f"same run as batch {beams[beam, len(sub)][2]} (no batched beam)"
        else:
            # warm-up: the first chunk, a few steps (first calls' allocations, threads); a whole
            # decode would double the time of the big shapes' runs
            run(m, tok, sub[:batch if beam == 1 else 1], batch, beam, min(a.max_length, 6))
            outs, dt = run(m, tok, sub, batch, beam, a.max_length)
            if beam > 1:
                beams[beam, len(sub)] = (outs, dt, batch)
        ntok = sum(len(o) for o in outs)
        print(json.dumps({"engine": "pytorch", "weights": a.weights.upper(), "batch": batch, "beam": beam,
                          "sentences": len(sub), "seconds": round(dt, 3), "sent_per_s": round(len(sub) / dt, 2),
                          "tok_per_s": round(ntok / dt, 1), "target_tokens": ntok, "note": note,
                          "ids": outs}), flush=True)


if __name__ == "__main__":
    main()
