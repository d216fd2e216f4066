#!/usr/bin/python3
"""gen_llm.py OUT: random-weight decoder-only checkpoints (Llama / Qwen2 / Qwen3)
in the published Hugging Face layout, and their expected outputs from an
independent float64 reference written here from the HF modeling equations
(LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM: RMSNorm, rotate_half RoPE,
grouped-query attention, SwiGLU), not from the engine's code.

Only numpy (Debian's python3-numpy): python3-torch is not installed on the
build machine, and a float64 numpy forward is the reference the tests need.
A missing numpy makes this script, hence `make llm-models` and `make test`,
fail.

OUT/<name>-2l/{f32,f16,bf16,sharded}/   the test shape (narrow(), below) at 2
                                        layers: four file forms of the SAME
                                        values (see round_weights)
OUT/<name>-2l/expected.txt              greedy continuations (20 tokens) of
                                        N_PROMPTS random prompts (1..40 ids)
OUT/<name>-full/bf16/                   the test shape at full depth, BF16
                                        (logits check)
OUT/<name>-full/logits.txt, logits.f32  first-step logits of N_LOGIT prompts
OUT/<name>-2l/attention.txt, .f64       attention probabilities (mt_attention_run)
                                        of 5 prompt + target pairs, from the
                                        f32 checkpoint: [L][H][N][N] float64
OUT/bad/<case>/                         checkpoints the loader must refuse
OUT/summary.json                        what was made: distinct outputs,
                                        redrawn prompts, margins

The test shape is the published config narrowed (narrow(): hidden size,
intermediate size, query and K/V heads divided by NARROW[name], head_dim, the
query/K-V grouping, RoPE theta, biases, Q/K norms and tying as published; the
vocabulary cut to TEST_VOCAB).  What the tests prove does not need the
published widths: the forms prove the readers, the greedy runs the equations,
the full depth the error over every layer (LOGIT_TOL), and every kernel at
every width is tested against its reference in test_kernels.  At published
widths the fixtures took 15 GB and 20 minutes; narrowed, under 1 GB.
`gen_llm.py OUT full published` writes the full-depth checkpoints at the
published shapes (TinyLlama 2.2 GB, Qwen3 1.2 GB, Qwen2.5 1 GB): the speed
figures of `make bench-llm` (`make llm-models-full`).

`gen_llm.py OUT attention [SRC]` writes only the attention files into
OUT/<name>-2l/, reading the 2-layer f32 checkpoints of SRC (default OUT), so
a read-only fixture directory made before can be used.

The published configs (config.json on the Hub, checked against copies found
with the search tool: TinyLlama-1.1B-Chat-v1.0, Qwen3-0.6B, Qwen2.5-0.5B).
"""
import json
import os
import shutil
import struct
import sys
import zlib

import numpy as np

TINYLLAMA = {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 2048,
    "initializer_range": 0.02, "intermediate_size": 5632, "max_position_embeddings": 2048,
    "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 22, "num_key_value_heads": 4,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 10000.0,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.35.0",
    "use_cache": True, "vocab_size": 32000,
}
QWEN3 = {
    "architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
    "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
    "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
    "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
    "rope_scaling": None, "rope_theta": 1000000, "sliding_window": None, "tie_word_embeddings": True,
    "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": True,
    "use_sliding_window": False, "vocab_size": 151936,
}
QWEN2 = {   # Qwen2.5-0.5B: q/k/v biases, 14 heads over 2 KV heads
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
    "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 24,
    "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": True,
    "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": True,
    "use_sliding_window": False, "vocab_size": 151936,
}
MODELS = {"tinyllama": TINYLLAMA, "qwen3": QWEN3, "qwen2": QWEN2}
NARROW = {"tinyllama": 4, "qwen3": 2, "qwen2": 2}    # 32/4 heads over 4/1 K/V; 16/8 over 8/4; 14/2 over 7/1
TEST_VOCAB = 16384
PUBLISHED = False       # `full published`: the published shapes (benchmarks)

N_PROMPTS = 32          # greedy prompts per reduced model
GEN = 20                # tokens generated per prompt
N_LOGIT = 4             # prompts of the full-depth logits check
MARGIN = 1e-3           # a reference greedy step whose two best logits are closer is a near-tie: prompt redrawn
STD = 0.02              # HF initializer_range (Linear and embedding weights)


# ---- weights ------------------------------------------------------------------
def round_weights(w):
    """float32 values that BF16, F16 and F32 all hold exactly: rounded to BF16
    (nearest even), magnitudes below F16's smallest normal (2^-14) set to 0.
    So the f32/f16/bf16 files of one model hold the same numbers and one
    reference serves them all (checked below)."""
    b = w.astype(np.float32).view(np.uint32)
    b = ((b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    r = b.view(np.float32)
    r[np.abs(r) < 2.0 ** -14] = 0.0
    return r


def tensor(seed, name, shape, kind):
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    if kind == "norm":      # around 1, so a norm weight that is not applied shows
        w = 1.0 + 0.1 * rng.standard_normal(shape, dtype=np.float32)
    elif kind == "bias":
        w = 0.1 * rng.standard_normal(shape, dtype=np.float32)
    else:
        w = STD * rng.standard_normal(shape, dtype=np.float32)
    return round_weights(w)


def narrow(name, cfg):
    """The test shape of a published config (see the header); itself with PUBLISHED."""
    if PUBLISHED:
        return cfg
    k = NARROW[name]
    d, H, KV = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or d // H
    assert d % k == 0 and H % k == 0 and KV % k == 0 and cfg["intermediate_size"] % k == 0, name
    V0 = cfg["vocab_size"]
    V = min(V0, TEST_VOCAB)
    out = dict(cfg, hidden_size=d // k, intermediate_size=cfg["intermediate_size"] // k,
               num_attention_heads=H // k, num_key_value_heads=KV // k, vocab_size=V)
    if "head_dim" in cfg:
        out["head_dim"] = hd
    assert (out.get("head_dim") or out["hidden_size"] // out["num_attention_heads"]) == hd, name
    for t in ("bos_token_id", "eos_token_id"):      # the same distance from the end of the vocabulary
        out[t] = cfg[t] if cfg[t] < V else V - (V0 - cfg[t])
    return out


def dims(cfg):
    d, H, KV = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or d // H
    return d, H, KV, hd, cfg["intermediate_size"], cfg["vocab_size"]


def layer_specs(cfg, i):
    """(name, shape, kind) of layer i, as the HF checkpoints name them."""
    d, H, KV, hd, F, V = dims(cfg)
    p = f"model.layers.{i}."
    s = [(p + "input_layernorm.weight", (d,), "norm"), (p + "post_attention_layernorm.weight", (d,), "norm"),
         (p + "self_attn.q_proj.weight", (H * hd, d), "w"), (p + "self_attn.k_proj.weight", (KV * hd, d), "w"),
         (p + "self_attn.v_proj.weight", (KV * hd, d), "w"), (p + "self_attn.o_proj.weight", (d, H * hd), "w"),
         (p + "mlp.gate_proj.weight", (F, d), "w"), (p + "mlp.up_proj.weight", (F, d), "w"),
         (p + "mlp.down_proj.weight", (d, F), "w")]
    if cfg["model_type"] == "qwen2":
        s += [(p + "self_attn.q_proj.bias", (H * hd,), "bias"), (p + "self_attn.k_proj.bias", (KV * hd,), "bias"),
              (p + "self_attn.v_proj.bias", (KV * hd,), "bias")]
    if cfg["model_type"] == "qwen3":
        s += [(p + "self_attn.q_norm.weight", (hd,), "norm"), (p + "self_attn.k_norm.weight", (hd,), "norm")]
    return s


def all_specs(cfg):
    d, H, KV, hd, F, V = dims(cfg)
    s = [("model.embed_tokens.weight", (V, d), "w")]
    for i in range(cfg["num_hidden_layers"]):
        s += layer_specs(cfg, i)
    s.append(("model.norm.weight", (d,), "norm"))
    if not cfg["tie_word_embeddings"]:
        s.append(("lm_head.weight", (V, d), "w"))
    return s


# ---- safetensors --------------------------------------------------------------
DT = {"F32": (4, np.float32), "F16": (2, np.float16), "BF16": (2, None)}


def encode(w, dtype):
    if dtype == "F32":
        return w.astype("<f4").tobytes()
    if dtype == "F16":
        h = w.astype("<f2")
        assert np.array_equal(h.astype(np.float32), w), "F16 does not hold the values exactly"
        return h.tobytes()
    return (w.astype(np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()   # exact: w is BF16-rounded


def write_safetensors(path, specs, dtype, get):
    """specs [(name, shape, kind)]; get(name, shape, kind) -> float32 array; streamed in order."""
    es = DT[dtype][0]
    header, at = {}, 0
    for name, shape, _ in specs:
        n = int(np.prod(shape)) * es
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [at, at + n]}
        at += n
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for name, shape, kind in specs:
            f.write(encode(get(name, shape, kind), dtype))


def write_config(dirpath, cfg):
    os.makedirs(dirpath, exist_ok=True)
    with open(os.path.join(dirpath, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)


def write_sharded(dirpath, specs, dtype, get, nshards=2):
    per = (len(specs) + nshards - 1) // nshards
    wmap, total = {}, 0
    for k in range(nshards):
        part = specs[k * per:(k + 1) * per]
        fname = f"model-{k + 1:05d}-of-{nshards:05d}.safetensors"
        write_safetensors(os.path.join(dirpath, fname), part, dtype, get)
        for name, shape, _ in part:
            wmap[name] = fname
            total += int(np.prod(shape)) * DT[dtype][0]
    with open(os.path.join(dirpath, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": wmap}, f, indent=2)


# ---- the reference: HF's equations in float64 ----------------------------------
def rmsnorm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, pos, theta):
    """x [T][heads][hd] at absolute positions pos [T]: HF rotate_half (pairs i, i + hd/2)."""
    hd = x.shape[-1]
    inv = 1.0 / (float(theta) ** (np.arange(0, hd, 2, dtype=np.float64) / hd))
    ang = np.asarray(pos, dtype=np.float64)[:, None] * inv[None, :]        # [T][hd/2]
    cos = np.concatenate([np.cos(ang), np.cos(ang)], -1)[:, None, :]
    sin = np.concatenate([np.sin(ang), np.sin(ang)], -1)[:, None, :]
    x1, x2 = x[..., :hd // 2], x[..., hd // 2:]
    return x * cos + np.concatenate([-x2, x1], -1) * sin


class Ref:
    """A decoder-only LM in float64; W: name -> array (float64)."""

    def __init__(self, cfg, W):
        self.cfg, self.W = cfg, W
        self.d, self.H, self.KV, self.hd, self.F, self.V = dims(cfg)
        self.eps, self.theta = cfg["rms_norm_eps"], cfg["rope_theta"]
        self.L = cfg["num_hidden_layers"]

    def layer(self, i, x, pos, cache, probs=None):
        """x [T][d] new positions pos; cache: (K [n][KV][hd], V) of earlier positions, or None.
        probs (a list): receives the softmax probabilities [H][T][n]."""
        W, p, T = self.W, f"model.layers.{i}.", x.shape[0]
        h = rmsnorm(x, W[p + "input_layernorm.weight"], self.eps)
        q = h @ W[p + "self_attn.q_proj.weight"].T
        k = h @ W[p + "self_attn.k_proj.weight"].T
        v = h @ W[p + "self_attn.v_proj.weight"].T
        if self.cfg["model_type"] == "qwen2":
            q = q + W[p + "self_attn.q_proj.bias"]
            k = k + W[p + "self_attn.k_proj.bias"]
            v = v + W[p + "self_attn.v_proj.bias"]
        q = q.reshape(T, self.H, self.hd)
        k = k.reshape(T, self.KV, self.hd)
        v = v.reshape(T, self.KV, self.hd)
        if self.cfg["model_type"] == "qwen3":
            q = rmsnorm(q, W[p + "self_attn.q_norm.weight"], self.eps)
            k = rmsnorm(k, W[p + "self_attn.k_norm.weight"], self.eps)
        q, k = rope(q, pos, self.theta), rope(k, pos, self.theta)
        if cache is not None:
            k = np.concatenate([cache[0], k], 0)
            v = np.concatenate([cache[1], v], 0)
        n, G = k.shape[0], self.H // self.KV
        kr = np.repeat(k, G, axis=1)                    # repeat_kv: head h reads KV head h // G
        vr = np.repeat(v, G, axis=1)
        s = np.einsum("thd,nhd->htn", q, kr) / np.sqrt(self.hd)
        allowed = np.arange(n)[None, :] <= np.asarray(pos)[:, None]      # causal, absolute positions
        s = np.where(allowed[None], s, -np.inf)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        if probs is not None:
            probs.append(s)
        ctx = np.einsum("htn,nhd->thd", s, vr).reshape(T, self.H * self.hd)
        x = x + ctx @ W[p + "self_attn.o_proj.weight"].T
        h = rmsnorm(x, W[p + "post_attention_layernorm.weight"], self.eps)
        g = h @ W[p + "mlp.gate_proj.weight"].T
        u = h @ W[p + "mlp.up_proj.weight"].T
        x = x + (g / (1.0 + np.exp(-g)) * u) @ W[p + "mlp.down_proj.weight"].T
        return x, (k, v)

    def logits(self, x):
        h = rmsnorm(x, self.W["model.norm.weight"], self.eps)
        head = self.W["model.embed_tokens.weight"] if self.cfg["tie_word_embeddings"] else self.W["lm_head.weight"]
        return h @ head.T

    def greedy(self, prompt, n, eos, stop=None, force_last=False):
        """HF greedy (no pad excluded, ids as given): up to n ids, stopping after
        eos (or any id of stop); force_last: the n-th id is eos, as the engine's
        max_length forces it.  Returns ids and the smallest top-2 gap of the
        steps that chose."""
        stop = stop or {eos}
        caches, pos0, margin = [None] * self.L, 0, np.inf
        new = list(prompt)
        out = []
        for i in range(n):
            x = self.W["model.embed_tokens.weight"][new]
            pos = list(range(pos0, pos0 + len(new)))
            for k in range(self.L):
                x, caches[k] = self.layer(k, x, pos, caches[k])
            lg = self.logits(x[-1:])[0]
            top = np.argsort(-lg, kind="stable")[:2]
            if force_last and i == n - 1:
                t = eos
            else:
                margin = min(margin, lg[top[0]] - lg[top[1]])
                t = int(top[0])
            out.append(t)
            pos0 += len(new)
            new = [t]
            if t in stop:
                break
        return out, margin


def draw_prompt(rng, V):
    n = int(rng.integers(1, 41))
    return [int(t) for t in rng.integers(0, V, n)]


# ---- the models ------------------------------------------------------------------
def reduced(out, name, cfg0, seed, summary):
    cfg = dict(narrow(name, cfg0), num_hidden_layers=2)
    base = os.path.join(out, f"{name}-2l")
    specs = all_specs(cfg)
    W32 = {n: tensor(seed, n, s, k) for n, s, k in specs}
    get = lambda n, s, k: W32[n]                                         # noqa: E731
    for form, dtype in (("f32", "F32"), ("f16", "F16"), ("bf16", "BF16")):
        write_config(os.path.join(base, form), cfg)
        write_safetensors(os.path.join(base, form, "model.safetensors"), specs, dtype, get)
    sh_dtype = {"tinyllama": "F32", "qwen3": "BF16", "qwen2": "F16"}[name]
    write_config(os.path.join(base, "sharded"), cfg)
    write_sharded(os.path.join(base, "sharded"), specs, sh_dtype, get)
    ref = Ref(cfg, {n: w.astype(np.float64) for n, w in W32.items()})
    rng = np.random.default_rng(seed + 1000)
    rows, redrawn, margins = [], 0, []
    eos = cfg["eos_token_id"]
    lengths = [1, 2, 40] + [None] * (N_PROMPTS - 3)       # the extremes always in
    for L in lengths:
        while True:
            p = draw_prompt(rng, cfg["vocab_size"])
            if L is not None:
                p = [int(t) for t in rng.integers(0, cfg["vocab_size"], L)]
            ids, margin = ref.greedy(p, GEN, eos)
            if margin >= MARGIN:
                break
            redrawn += 1
        rows.append((p, ids))
        margins.append(float(margin))
    with open(os.path.join(base, "expected.txt"), "w") as f:
        f.write(f"# {name} at 2 layers: prompt ids, then the float64 reference's greedy ids ({GEN} at most, "
                f"eos {eos} ends)\n")
        for p, ids in rows:
            f.write("prompt " + " ".join(map(str, p)) + "\n")
            f.write("greedy " + " ".join(map(str, ids)) + "\n")
    summary[f"{name}-2l"] = {
        "prompts": len(rows), "distinct_outputs": len({tuple(i) for _, i in rows}),
        "distinct_first_ids": len({i[0] for _, i in rows}),
        "distinct_ids": len({t for _, i in rows for t in i}),
        "redrawn_near_ties": redrawn, "min_margin": min(margins), "sharded_dtype": sh_dtype,
    }
    print(name, summary[f"{name}-2l"], flush=True)


def full(out, name, cfg, seed, summary):
    """Full depth in BF16, streamed layer by layer: each tensor is drawn, written
    and used by the reference on the logit prompts, then dropped."""
    base = os.path.join(out, f"{name}-full")
    cfg = narrow(name, cfg)
    d, H, KV, hd, F, V = dims(cfg)
    rng = np.random.default_rng(seed + 2000)
    prompts = [[int(t) for t in rng.integers(0, V, n)] for n in (1, 7, 23, 40)][:N_LOGIT]
    specs = all_specs(cfg)
    write_config(os.path.join(base, "bf16"), cfg)
    state = {"x": None, "layer": -1, "W": {}}
    ref = Ref(cfg, state["W"])

    def get(n, s, k):
        w = tensor(seed, n, s, k)
        W = state["W"]
        W[n] = w.astype(np.float64)
        if n == "model.embed_tokens.weight":
            state["x"] = [W[n][p] for p in prompts]
            if cfg["tie_word_embeddings"]:
                state["emb"] = W[n]
            if not cfg["tie_word_embeddings"]:
                del W[n]
        elif n.startswith("model.layers."):
            i = int(n.split(".")[2])
            need = [m for m, _, _ in layer_specs(cfg, i)]
            if all(m in W for m in need):
                state["x"] = [ref.layer(i, x, list(range(len(x))), None)[0] for x in state["x"]]
                for m in need:
                    del W[m]
        return w

    write_safetensors(os.path.join(base, "bf16", "model.safetensors"), specs, "BF16", get)
    W = state["W"]
    if cfg["tie_word_embeddings"]:
        W["model.embed_tokens.weight"] = state["emb"]
    lg = np.stack([ref.logits(x[-1:])[0] for x in state["x"]])          # [N_LOGIT][V]
    with open(os.path.join(base, "logits.txt"), "w") as f:
        f.write(f"# {name} full depth: prompts of logits.f32 ([{len(prompts)}][{V}] float32 of the float64 "
                f"reference's first-step logits)\n")
        for p in prompts:
            f.write("prompt " + " ".join(map(str, p)) + "\n")
    lg.astype("<f4").tofile(os.path.join(base, "logits.f32"))
    summary[f"{name}-full"] = {"prompts": len(prompts), "logit_std": float(lg.std()),
                               "argmax": [int(a) for a in lg.argmax(1)]}
    print(name, "full", summary[f"{name}-full"], flush=True)


# ---- attention probabilities (mt_attention_run) ---------------------------------
ATTN_CASES = [(1, 4), (7, 0), (23, 9), (40, 20)]    # (prompt ids, target ids); then one repeated-id prompt
ATTN_REPEAT = 32


class Checkpoint:
    """name -> float64 array of a single-file F32 safetensors, read lazily from a read-only mapping."""

    def __init__(self, path):
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            self.header = json.loads(f.read(n))
        self.base = 8 + n
        self.mm = np.memmap(path, dtype=np.uint8, mode="r")

    def __getitem__(self, name):
        h = self.header[name]
        assert h["dtype"] == "F32", name
        a, b = h["data_offsets"]
        return np.frombuffer(self.mm[self.base + a:self.base + b], dtype="<f4").reshape(h["shape"]).astype(np.float64)


def attention(out, src, name, cfg0, seed, summary):
    """The whole sequence (prompt + target) through every layer at once, HF's causal
    attention (Ref.layer), each layer's probabilities [H][N][N] kept."""
    cfg = dict(narrow(name, cfg0), num_hidden_layers=2)
    ck = Checkpoint(os.path.join(src, f"{name}-2l", "f32", "model.safetensors"))
    ref = Ref(cfg, ck)
    rng = np.random.default_rng(seed + 3000)
    V = cfg["vocab_size"]
    cases = [([int(t) for t in rng.integers(0, V, P)], [int(t) for t in rng.integers(0, V, T)]) for P, T in ATTN_CASES]
    cases.append(([int(rng.integers(0, V))] * ATTN_REPEAT, []))    # the RoPE relative-position check
    base = os.path.join(out, f"{name}-2l")
    os.makedirs(base, exist_ok=True)
    h = ck.header["model.embed_tokens.weight"]
    table = np.frombuffer(ck.mm[ck.base + h["data_offsets"][0]:ck.base + h["data_offsets"][1]],
                          dtype="<f4").reshape(h["shape"])
    stats = []
    with open(os.path.join(base, "attention.txt"), "w") as f, open(os.path.join(base, "attention.f64"), "wb") as g:
        f.write(f"# {name} at 2 layers: prompt and target ids; attention.f64 holds per pair [layers][heads][N][N] "
                f"float64 softmax probabilities, N = prompt + target\n")
        for p, t in cases:
            seq = p + t
            x = table[seq].astype(np.float64)
            probs = []
            for i in range(ref.L):
                x, _ = ref.layer(i, x, list(range(len(seq))), None, probs)
            a = np.stack(probs)                                     # [L][H][N][N]
            a.astype("<f8").tofile(g)
            f.write("prompt " + " ".join(map(str, p)) + "\n")
            f.write("target " + " ".join(map(str, t)) + "\n")
            stats.append(float(a[:, :, 1:, :].max()) if len(seq) > 1 else 1.0)
    summary[f"{name}-2l-attention"] = {"pairs": len(cases), "lengths": [len(p) + len(t) for p, t in cases],
                                       "max_prob_rows_after_0": stats, "from": src}
    print(name, "attention", summary[f"{name}-2l-attention"], flush=True)


def bad(out, summary):
    """Small checkpoints with one fault each; tests/test_llm.c expects each refusal."""
    cfg = dict(TINYLLAMA, hidden_size=64, intermediate_size=96, num_attention_heads=4, num_key_value_heads=2,
               num_hidden_layers=2, vocab_size=100)
    specs = all_specs(cfg)
    W = {n: tensor(7, n, s, k) for n, s, k in specs}
    get = lambda n, s, k: W[n]                                          # noqa: E731
    root = os.path.join(out, "bad")

    def make(case, c, sp=specs, sharded=False):
        p = os.path.join(root, case)
        write_config(p, c)
        if sharded:
            write_sharded(p, sp, "F32", lambda n, s, k: W[n] if W[n].shape == tuple(s) else W[n].reshape(s))
        else:
            write_safetensors(os.path.join(p, "model.safetensors"), sp, "F32",
                              lambda n, s, k: W[n] if n in W and W[n].shape == tuple(s) else np.zeros(s, np.float32))
        return p

    make("good", cfg)
    make("good-sharded", cfg, sharded=True)
    make("missing-tensor", cfg, [s for s in specs if s[0] != "model.layers.1.mlp.up_proj.weight"])
    make("wrong-shape", cfg, [(n, (s[1], s[0]) if n == "model.layers.0.self_attn.k_proj.weight" else s, k)
                              for n, s, k in specs])
    make("extra-tensor", cfg, specs + [("model.layers.2.mlp.up_proj.weight", (96, 64), "w")])
    p = make("index-missing-shard", cfg, sharded=True)
    os.remove(os.path.join(p, "model-00002-of-00002.safetensors"))
    p = make("index-unmapped-tensor", cfg, sharded=True)           # a shard tensor the index does not name
    ix = json.load(open(os.path.join(p, "model.safetensors.index.json")))
    del ix["weight_map"]["model.norm.weight"]
    json.dump(ix, open(os.path.join(p, "model.safetensors.index.json"), "w"))
    p = make("index-wrong-shard", cfg, sharded=True)               # the index names the other shard
    ix = json.load(open(os.path.join(p, "model.safetensors.index.json")))
    ix["weight_map"]["model.norm.weight"] = "model-00001-of-00002.safetensors"
    json.dump(ix, open(os.path.join(p, "model.safetensors.index.json"), "w"))
    make("rope-scaling-yarn", dict(cfg, rope_scaling={"rope_type": "yarn", "factor": 4.0}))
    make("attention-bias", dict(cfg, attention_bias=True))
    make("sliding-window", dict(cfg, model_type="qwen2", architectures=["Qwen2ForCausalLM"], use_sliding_window=True,
                                sliding_window=4096, attention_bias=None))
    make("hidden-act", dict(cfg, hidden_act="gelu"))
    make("mlp-bias", dict(cfg, mlp_bias=True))
    make("model-type", dict(cfg, model_type="mistral", architectures=["MistralForCausalLM"]))
    summary["bad"] = sorted(os.listdir(root))


def main():
    out = sys.argv[1]
    only = sys.argv[2].split(",") if len(sys.argv) > 2 else ["reduced", "attention", "full", "bad"]
    global PUBLISHED
    PUBLISHED = len(sys.argv) > 3 and sys.argv[3] == "published"
    src = sys.argv[3] if len(sys.argv) > 3 and not PUBLISHED else out
    os.makedirs(out, exist_ok=True)
    summary = {}
    if "bad" in only:
        shutil.rmtree(os.path.join(out, "bad"), ignore_errors=True)
        bad(out, summary)
    if "reduced" in only:
        for seed, (name, cfg) in enumerate(MODELS.items()):
            reduced(out, name, cfg, 11 + seed, summary)
    if "attention" in only:
        for seed, (name, cfg) in enumerate(MODELS.items()):
            attention(out, src, name, cfg, 11 + seed, summary)
    if "full" in only:
        for seed, (name, cfg) in enumerate(MODELS.items()):
            full(out, name, cfg, 31 + seed, summary)
    old = {}
    if os.path.exists(os.path.join(out, "summary.json")):
        old = json.load(open(os.path.join(out, "summary.json")))
    old.update(summary)
    json.dump(old, open(os.path.join(out, "summary.json"), "w"), indent=2)


if __name__ == "__main__":
    main()
