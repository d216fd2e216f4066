#!/usr/bin/python3
"""The PyTorch reference's speed on the same weights and inputs as bench_engine.

Prints one JSON line per configuration: sentences/s, target tokens/s and the
output ids (so bench/run.sh can check the C outputs are equal).
Greedy runs batched (batch 1 and 32); beam search in the reference decodes one
sentence at a time, so "beam 4 batch 32" is 32 sentences decoded one after
another (the reference has no batched beam search).

--weights f16 reproduces the C engine's F16 mode (engine/model.c,
prepare_weights): every weight MATRIX is rounded to half precision (round to
nearest even) once, before decoding -- the weight of every nn.Linear (attention
q/k/v/out, fc1, fc2, encoder and decoder) and the embedding table
(model.shared.weight, which is also the tied lm_head).  Biases, LayerNorm
weights/biases, final_logits_bias and the sinusoidal position table stay F32;
activations stay F32."""
import argparse, json, os, sys, time
import torch
import torch.nn as nn
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "models", "recipe"))
from load import load_dir
from marian_tok import MarianTok


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True); ap.add_argument("--input")
    ap.add_argument("--n", type=int, default=64); ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--weights", choices=("f32", "f16"), default="f32",
                    help="f16: round every weight matrix to half precision first, as the C engine's F16 mode")
    ap.add_argument("--configs", default="1:1,32:1,1:4,32:4", help="batch:beam,...")
    ap.add_argument("--src-ids", help="source ids, one JSON list a line (bench_engine --src-out): "
                    "decode exactly these instead of tokenizing --input")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    m, _ = load_dir(a.model); tok = MarianTok(a.model)
    if a.weights == "f16":
        with torch.no_grad():
            names = round_f16(m)
        n = sum(m.get_parameter(x).numel() for x in names)
        print(f"bench_torch: --weights f16: rounded {len(names)} weight matrices ({n} values) to F16: "
              f"{sum(x.startswith('model.encoder.') for x in names)} encoder Linear, "
              f"{sum(x.startswith('model.decoder.') for x in names)} decoder Linear, "
              f"{sum(x == 'model.shared.weight' for x in names)} embedding/lm_head (model.shared.weight); "
              f"biases, LayerNorms, final_logits_bias and positions kept F32", file=sys.stderr, flush=True)
    if a.src_ids:
        srcs = [json.loads(x) for x in open(a.src_ids).read().splitlines()[:a.n]]
    else:
        srcs = [tok.encode(x) for x in open(a.input).read().splitlines()[:a.n]]
    beams = {}       # beam search is sentence by sentence whatever the batch: measured once per beam size
    for cfg in a.configs.split(","):
        batch, beam = map(int, cfg.split(":"))
        note = None
        if beam > 1 and beam in beams:
            outs, dt, note = *beams[beam][:2], f"same run as batch {beams[beam][2]} (no batched beam)"
        else:
            run(m, tok, srcs[:batch if beam == 1 else 1], batch, beam, a.max_length)   # warm-up
            outs, dt = run(m, tok, srcs, batch, beam, a.max_length)
            if beam > 1:
                beams[beam] = (outs, dt, batch)
        ntok = sum(len(o) for o in outs)
        print(json.dumps({"engine": "pytorch", "weights": a.weights.upper(), "batch": batch, "beam": beam, "sentences": len(srcs),
                          "seconds": round(dt, 3), "sent_per_s": round(len(srcs) / dt, 2),
                          "tok_per_s": round(ntok / dt, 1), "target_tokens": ntok, "note": note,
                          "ids": outs}), flush=True)


if __name__ == "__main__":
    main()
