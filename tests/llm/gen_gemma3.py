#!/usr/bin/python3
"""gen_gemma3.py OUT [full]: random-weight Gemma 3 text checkpoints in the
published Hugging Face layout and their expected outputs from a float64 numpy
forward written here from the published equations (transformers'
models/gemma3/modeling_gemma3.py, read for this: Gemma3RMSNorm (x / rms * (1 +
w), in float32 there), Gemma3TextScaledWordEmbedding (embedding *
sqrt(hidden_size).to(weight dtype)), Gemma3MLP (down(gelu_pytorch_tanh(gate) *
up)), Gemma3Attention (q_norm / k_norm per head before rotate_half RoPE,
scaling query_pre_attn_scalar**-0.5, repeat_kv, sliding_window on
sliding_attention layers: keys p - window < k <= p), Gemma3DecoderLayer
(input_layernorm, post_attention_layernorm on the attention output,
pre_feedforward_layernorm, post_feedforward_layernorm on the MLP output),
Gemma3RotaryEmbedding (global layers rope_theta with rope_scaling linear:
inv_freq / factor; local layers rope_local_base_freq), Gemma3ForCausalLM
(final_logit_softcapping: null here), tied embeddings); not from the engine.

Published configs (config.json on the Hub; the values cross-checked against
copies in public repositories found with the search tool, e.g. test configs
carrying gemma-3-1B's and gemma-3-4b-it's values, and transformers'
Gemma3TextConfig defaults, which the 4b text_config relies on):
  gemma-3-1b-it  (Gemma3ForCausalLM, gemma3_text): hidden 1152, intermediate
    6912, 26 layers, 4 heads / 1 K/V head, head_dim 256, vocab 262144,
    query_pre_attn_scalar 256, sliding_window 512, sliding_window_pattern 6,
    rope_theta 1e6, rope_local_base_freq 1e4, rope_scaling null, eps 1e-6,
    max_position_embeddings 32768, eos [1, 106], bfloat16, tied.
  gemma-3-4b-it  (Gemma3ForConditionalGeneration, gemma3; its text_config):
    hidden 2560, intermediate 10240, 34 layers, rope_scaling linear 8,
    sliding_window 1024; the rest Gemma3TextConfig's defaults: 8 heads / 4
    K/V, head_dim 256, vocab 262208, query_pre_attn_scalar 256, rope_theta
    1e6, rope_local_base_freq 1e4, pattern 6, eps 1e-6, 131072 positions.

What is written (OUT, default build/gemma3):
  gemma3-1b-2l/{f32,f16,bf16}/     published widths, 2 layers (layer 0
                                   sliding, layer 1 full), sliding_window 16
                                   (not 512: prompts of up to 40 ids plus 20
                                   generated then cross it cheaply), vocab
                                   TEST_VOCAB (not 262144: the embedding
                                   alone would be 1.2 GB in F32; the tokenizer
                                   is tested on its own)
  gemma3-4b-2l/{bf16,f16,mm}/      the same for 4b (rope_scaling linear 8 on
                                   the full layer); mm = the published
                                   multimodal layout: model_type gemma3, a
                                   text_config naming only what differs from
                                   the defaults, language_model.model.* names,
                                   2 shards + index, vision tensors to skip
  <model>-2l/expected.txt          greedy ids (GEN) of N_PROMPTS prompts
  <model>-2l/logits.f32            the first-step logits of the first N_LOGIT2
  gemma3-1b-full/bf16, logits.*    (with `full`) all 26 layers, BF16, the
                                   first-step logits of N_LOGIT prompts
  gemma3-tiny/                     a small model (hidden 64) for valgrind
  bad/<case>/                      configs the loader must refuse, by name
Weights: N(0, 0.02), norm weights 0.1 N(0, 1) (held as 1 + w; the post-attention and
post-feedforward ones 4 + that, see POST_NORM), rounded to BF16
with |w| < 2^-14 set to 0 so every form holds the same numbers (gen_llm.py's
round_weights).  torch_dtype "bfloat16" as published: the embedding scale is
sqrt(hidden) rounded to BF16 (34.0 for 1152, 50.5 for 2560).
"""
import json
import os
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_llm import round_weights, write_safetensors, write_sharded, write_config  # noqa: E402  (file writers only)

G1B = {
    "architectures": ["Gemma3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "attn_logit_softcapping": None, "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": [1, 106],
    "final_logit_softcapping": None, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152,
    "initializer_range": 0.02, "intermediate_size": 6912, "max_position_embeddings": 32768,
    "model_type": "gemma3_text", "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1,
    "pad_token_id": 0, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
    "rope_scaling": None, "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6,
    "torch_dtype": "bfloat16", "use_cache": True, "vocab_size": 262144,
}
G4B_TEXT = {            # the published text_config: the rest are Gemma3TextConfig's defaults
    "hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text", "num_hidden_layers": 34,
    "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024,
}
TEXT_DEFAULTS = {
    "vocab_size": 262208, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
    "query_pre_attn_scalar": 256, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
    "sliding_window_pattern": 6, "rms_norm_eps": 1e-6, "max_position_embeddings": 131072,
    "final_logit_softcapping": None, "attn_logit_softcapping": None, "tie_word_embeddings": True,
    "eos_token_id": 1, "bos_token_id": 2, "pad_token_id": 0, "hidden_activation": "gelu_pytorch_tanh",
}
TEST_VOCAB = 8192
TEST_WINDOW = 16
N_PROMPTS = 32
GEN = 20
N_LOGIT = 4
N_LOGIT2 = 5           # 2-layer models: first-step logits of the first 5 prompts
MARGIN = 1e-3
STD = 0.02
# post_attention / post_feedforward norm weights are POST_NORM + 0.1 N(0, 1) (applied as 1 + w, ~5):
# with all norms near 1 the tied random embedding outweighs both layers and every greedy step
# repeats its input id (the own-token logit), so the window and the layers would not show.
POST_NORM = 4.0


def tensor(seed, name, shape, kind):
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    scale = 0.1 if kind == "norm" else STD          # Gemma norms hold w, applied as 1 + w
    w = scale * rng.standard_normal(shape, dtype=np.float32)
    if "post_attention_layernorm" in name or "post_feedforward_layernorm" in name:
        w += POST_NORM
    return round_weights(w)


def dims(cfg):
    return (cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"],
            cfg["intermediate_size"], cfg["vocab_size"])


def layer_specs(cfg, i, pfx="model."):
    d, H, KV, hd, F, V = dims(cfg)
    p = f"{pfx}layers.{i}."
    return [(p + "input_layernorm.weight", (d,), "norm"), (p + "post_attention_layernorm.weight", (d,), "norm"),
            (p + "pre_feedforward_layernorm.weight", (d,), "norm"),
            (p + "post_feedforward_layernorm.weight", (d,), "norm"),
            (p + "self_attn.q_proj.weight", (H * hd, d), "w"), (p + "self_attn.k_proj.weight", (KV * hd, d), "w"),
            (p + "self_attn.v_proj.weight", (KV * hd, d), "w"), (p + "self_attn.o_proj.weight", (d, H * hd), "w"),
            (p + "self_attn.q_norm.weight", (hd,), "norm"), (p + "self_attn.k_norm.weight", (hd,), "norm"),
            (p + "mlp.gate_proj.weight", (F, d), "w"), (p + "mlp.up_proj.weight", (F, d), "w"),
            (p + "mlp.down_proj.weight", (d, F), "w")]


def all_specs(cfg, pfx="model."):
    d, H, KV, hd, F, V = dims(cfg)
    s = [(pfx + "embed_tokens.weight", (V, d), "w")]
    for i in range(cfg["num_hidden_layers"]):
        s += layer_specs(cfg, i, pfx)
    return s + [(pfx + "norm.weight", (d,), "norm")]


# ---- the reference: modeling_gemma3's equations in float64 ----------------------
def rmsnorm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * (1.0 + w)


def rope(x, pos, theta, factor):
    hd = x.shape[-1]
    inv = 1.0 / (float(theta) ** (np.arange(0, hd, 2, dtype=np.float64) / hd)) / factor
    ang = np.asarray(pos, dtype=np.float64)[:, None] * inv[None, :]
    cos = np.concatenate([np.cos(ang), np.cos(ang)], -1)[:, None, :]
    sin = np.concatenate([np.sin(ang), np.sin(ang)], -1)[:, None, :]
    x1, x2 = x[..., :hd // 2], x[..., hd // 2:]
    return x * cos + np.concatenate([-x2, x1], -1) * sin


def gelu_tanh(g):
    return 0.5 * g * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (g + 0.044715 * g ** 3)))


def bf16(v):
    return float(round_weights(np.array([v], dtype=np.float32))[0])


def layer_types(cfg):
    if cfg.get("layer_types"):
        return cfg["layer_types"]
    pat = cfg["sliding_window_pattern"]
    return ["sliding_attention" if (i + 1) % pat else "full_attention" for i in range(cfg["num_hidden_layers"])]


class Ref:
    def __init__(self, cfg, W):
        self.cfg, self.W = cfg, W
        self.d, self.H, self.KV, self.hd, self.F, self.V = dims(cfg)
        self.eps, self.L = cfg["rms_norm_eps"], cfg["num_hidden_layers"]
        self.types = layer_types(cfg)
        rs = cfg.get("rope_scaling") or {}
        self.factor = float(rs.get("factor", 1.0)) if rs else 1.0
        s = float(np.sqrt(self.d))
        self.scale = bf16(s) if cfg.get("torch_dtype") == "bfloat16" else s

    def embed(self, ids):
        return self.W["model.embed_tokens.weight"][ids] * self.scale

    def layer(self, i, x, pos, cache):
        W, p, T, c = self.W, f"model.layers.{i}.", x.shape[0], self.cfg
        local = self.types[i] == "sliding_attention"
        h = rmsnorm(x, W[p + "input_layernorm.weight"], self.eps)
        q = (h @ W[p + "self_attn.q_proj.weight"].T).reshape(T, self.H, self.hd)
        k = (h @ W[p + "self_attn.k_proj.weight"].T).reshape(T, self.KV, self.hd)
        v = (h @ W[p + "self_attn.v_proj.weight"].T).reshape(T, self.KV, self.hd)
        q = rmsnorm(q, W[p + "self_attn.q_norm.weight"], self.eps)
        k = rmsnorm(k, W[p + "self_attn.k_norm.weight"], self.eps)
        theta, factor = (c["rope_local_base_freq"], 1.0) if local else (c["rope_theta"], self.factor)
        q, k = rope(q, pos, theta, factor), rope(k, pos, theta, factor)
        if cache is not None:
            k = np.concatenate([cache[0], k], 0)
            v = np.concatenate([cache[1], v], 0)
        n, G = k.shape[0], self.H // self.KV
        kr, vr = np.repeat(k, G, axis=1), np.repeat(v, G, axis=1)
        s = np.einsum("thd,nhd->htn", q, kr) * float(c["query_pre_attn_scalar"]) ** -0.5
        kp, qp = np.arange(n)[None, :], np.asarray(pos)[:, None]
        allowed = kp <= qp
        if local:
            allowed &= kp > qp - c["sliding_window"]
        s = np.where(allowed[None], s, -np.inf)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = np.einsum("htn,nhd->thd", s, vr).reshape(T, self.H * self.hd)
        a = ctx @ W[p + "self_attn.o_proj.weight"].T
        x = x + rmsnorm(a, W[p + "post_attention_layernorm.weight"], self.eps)
        h = rmsnorm(x, W[p + "pre_feedforward_layernorm.weight"], self.eps)
        m = (gelu_tanh(h @ W[p + "mlp.gate_proj.weight"].T) * (h @ W[p + "mlp.up_proj.weight"].T)) \
            @ W[p + "mlp.down_proj.weight"].T
        x = x + rmsnorm(m, W[p + "post_feedforward_layernorm.weight"], self.eps)
        return x, (k, v)

    def logits(self, x):
        lg = rmsnorm(x, self.W["model.norm.weight"], self.eps) @ self.W["model.embed_tokens.weight"].T
        cap = self.cfg.get("final_logit_softcapping")
        return cap * np.tanh(lg / cap) if cap else lg

    def greedy(self, prompt, n, eos, stop=None):
        """Up to n greedy ids, ending after eos (or any id of stop); the ids, the smallest top-2 gap."""
        stop = stop or {eos}
        caches, pos0, margin, new, out = [None] * self.L, 0, np.inf, list(prompt), []
        for _ in range(n):
            x = self.embed(new)
            pos = list(range(pos0, pos0 + len(new)))
            for k in range(self.L):
                x, caches[k] = self.layer(k, x, pos, caches[k])
            lg = self.logits(x[-1:])[0]
            top = np.argsort(-lg, kind="stable")[:2]
            margin = min(margin, lg[top[0]] - lg[top[1]])
            t = int(top[0])
            out.append(t)
            pos0 += len(new)
            new = [t]
            if t in stop:
                break
        return out, margin


# ---- the checkpoints ------------------------------------------------------------------
def test_cfg(name):
    if name == "gemma3-1b":
        cfg = dict(G1B)
    else:
        cfg = dict(TEXT_DEFAULTS, **G4B_TEXT, architectures=["Gemma3ForCausalLM"], torch_dtype="bfloat16")
    return dict(cfg, num_hidden_layers=2, vocab_size=TEST_VOCAB, sliding_window=TEST_WINDOW,
                layer_types=["sliding_attention", "full_attention"])


def mm_config(cfg):
    """The published multimodal layout of the same text model: only what differs from the defaults."""
    text = {k: cfg[k] for k in ("hidden_size", "intermediate_size", "num_hidden_layers", "rope_scaling",
                                "sliding_window", "vocab_size", "layer_types")}
    text["model_type"] = "gemma3_text"
    return {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "boi_token_index": 255999,
            "eoi_token_index": 256000, "eos_token_id": [1, 106], "image_token_index": 262144,
            "initializer_range": 0.02, "mm_tokens_per_image": 256, "text_config": text, "torch_dtype": "bfloat16",
            "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                              "model_type": "siglip_vision_model", "num_attention_heads": 16,
                              "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": False}}


def reduced(out, name, seed, forms, summary):
    cfg = test_cfg(name)
    base = os.path.join(out, f"{name}-2l")
    specs = all_specs(cfg)
    W32 = {n: tensor(seed, n, s, k) for n, s, k in specs}
    get = lambda n, s, k: W32[n]                                               # noqa: E731
    for form, dtype in forms:
        write_config(os.path.join(base, form), cfg)
        write_safetensors(os.path.join(base, form, "model.safetensors"), specs, dtype, get)
    if name == "gemma3-4b":     # multimodal layout: renamed text tensors + a vision tensor to skip
        mm = os.path.join(base, "mm")
        write_config(mm, mm_config(cfg))
        ren = {"language_model." + n: n for n, _, _ in specs}
        mspecs = [("language_model." + n, s, k) for n, s, k in specs]
        mspecs.append(("vision_tower.vision_model.embeddings.patch_embedding.bias", (1152,), "w"))
        mspecs.append(("multi_modal_projector.mm_soft_emb_norm.weight", (1152,), "norm"))
        mget = lambda n, s, k: W32[ren[n]] if n in ren else tensor(seed, n, s, k)   # noqa: E731
        write_sharded(mm, mspecs, "BF16", mget)
    ref = Ref(cfg, {n: w.astype(np.float64) for n, w in W32.items()})
    rng = np.random.default_rng(seed + 1000)
    rows, redrawn, margins = [], 0, []
    eos = cfg["eos_token_id"][0] if isinstance(cfg["eos_token_id"], list) else cfg["eos_token_id"]
    lengths = [1, 2, 40, 17, 33] + [None] * (N_PROMPTS - 5)
    while len(rows) < N_PROMPTS:
        L = lengths[len(rows)] or int(rng.integers(1, 41))
        p = [int(t) for t in rng.integers(0, cfg["vocab_size"], L)]
        ids, margin = ref.greedy(p, GEN, eos)
        if margin < MARGIN:
            redrawn += 1
            continue
        rows.append((p, ids))
        margins.append(float(margin))
    with open(os.path.join(base, "expected.txt"), "w") as f:
        f.write(f"# {name} at 2 layers (sliding_window {TEST_WINDOW}): prompt ids, then the float64 reference's "
                f"greedy ids ({GEN} at most, eos {eos} ends)\n")
        for p, ids in rows:
            f.write("prompt " + " ".join(map(str, p)) + "\n")
            f.write("greedy " + " ".join(map(str, ids)) + "\n")
    # first-step logits of the first N_LOGIT2 prompts (1, 2, 40, 17, 33 ids): the greedy ids hold
    # however close the logits are (margins here are wide); these pin the values
    lg = []
    for p, _ in rows[:N_LOGIT2]:
        x = ref.embed(p)
        for k in range(ref.L):
            x = ref.layer(k, x, list(range(len(p))), None)[0]
        lg.append(ref.logits(x[-1:])[0])
    np.stack(lg).astype(np.float32).tofile(os.path.join(base, "logits.f32"))
    summary[f"{name}-2l"] = {
        "prompts": len(rows), "distinct_outputs": len({tuple(i) for _, i in rows}),
        "distinct_first_ids": len({i[0] for _, i in rows}),
        "over_window": sum(len(p) + len(i) > TEST_WINDOW for p, i in rows),
        "prompt_over_window": sum(len(p) > TEST_WINDOW for p, _ in rows),
        "redrawn_near_ties": redrawn, "min_margin": min(margins), "embed_scale": ref.scale,
    }
    print(name, summary[f"{name}-2l"], flush=True)


def full_1b(out, seed, summary):
    """All 26 layers of gemma-3-1b (test vocabulary, published sliding_window 512), BF16,
    streamed: each layer drawn, written, run by the reference over every prompt, dropped."""
    cfg = dict(G1B, vocab_size=TEST_VOCAB)
    base = os.path.join(out, "gemma3-1b-full")
    write_config(os.path.join(base, "bf16"), cfg)
    specs = all_specs(cfg)
    write_safetensors(os.path.join(base, "bf16", "model.safetensors"), specs, "BF16",
                      lambda n, s, k: tensor(seed, n, s, k))
    rng = np.random.default_rng(seed + 2000)
    prompts = [[int(t) for t in rng.integers(0, TEST_VOCAB, L)] for L in (1, 7, 23, 40)][:N_LOGIT]
    W = {"model.embed_tokens.weight": tensor(seed, "model.embed_tokens.weight", (TEST_VOCAB, cfg["hidden_size"]),
                                             "w").astype(np.float64),
         "model.norm.weight": tensor(seed, "model.norm.weight", (cfg["hidden_size"],), "norm").astype(np.float64)}
    ref = Ref(cfg, W)
    xs = [ref.embed(p) for p in prompts]
    for i in range(cfg["num_hidden_layers"]):
        for n, s, k in layer_specs(cfg, i):
            W[n] = tensor(seed, n, s, k).astype(np.float64)
        xs = [ref.layer(i, x, list(range(len(p))), None)[0] for x, p in zip(xs, prompts)]
        for n, _, _ in layer_specs(cfg, i):
            del W[n]
    lg = np.stack([ref.logits(x[-1:])[0] for x in xs]).astype(np.float32)
    lg.tofile(os.path.join(base, "logits.f32"))
    with open(os.path.join(base, "logits.txt"), "w") as f:
        f.write("# gemma3-1b, 26 layers: prompts; logits.f32 = their first-step logits [prompt][vocab] float32\n")
        for p in prompts:
            f.write("prompt " + " ".join(map(str, p)) + "\n")
    summary["gemma3-1b-full"] = {"prompts": len(prompts), "argmax": [int(np.argmax(r)) for r in lg]}
    print("gemma3-1b-full", summary["gemma3-1b-full"], flush=True)


def tiny(out, seed, summary):
    """A small Gemma 3 (hidden 64, 4 heads over 2 K/V, head_dim 16, window 4) for valgrind."""
    cfg = dict(G1B, hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
               head_dim=16, query_pre_attn_scalar=16, num_hidden_layers=2, vocab_size=256, sliding_window=4,
               layer_types=["sliding_attention", "full_attention"], rope_scaling={"rope_type": "linear",
                                                                                  "factor": 8.0})
    base = os.path.join(out, "gemma3-tiny")
    specs = all_specs(cfg)
    # linear weights x10 (at hidden 64 the products are otherwise tiny), the embedding as drawn (x10 it
    # would outweigh every layer and each step would repeat its input id)
    W32 = {n: tensor(seed, n, s, k) * (10 if k == "w" and "embed" not in n else 1) for n, s, k in specs}
    write_config(base, cfg)
    write_safetensors(os.path.join(base, "model.safetensors"), specs, "F32", lambda n, s, k: W32[n])
    ref = Ref(cfg, {n: w.astype(np.float64) for n, w in W32.items()})
    rng = np.random.default_rng(seed + 3000)
    with open(os.path.join(base, "expected.txt"), "w") as f:
        f.write("# gemma3-tiny (window 4): prompt ids, greedy ids\n")
        for L in (1, 3, 9, 12):
            p = [int(t) for t in rng.integers(0, 256, L)]
            ids, margin = ref.greedy(p, 8, 1)
            f.write("prompt " + " ".join(map(str, p)) + "\ngreedy " + " ".join(map(str, ids)) + "\n")
    summary["gemma3-tiny"] = {"written": True}
    return cfg, specs, W32


BAD = {     # case: (config change, the words the refusal must name)
    "attn_softcap": ({"attn_logit_softcapping": 50.0}, "attn_logit_softcapping"),
    "rope_yarn": ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, "rope_scaling"),
    "gelu_exact": ({"hidden_activation": "gelu"}, "hidden_activation"),
    "chunked": ({"layer_types": ["chunked_attention", "full_attention"]}, "layer_types[0]"),
    "bidirectional": ({"use_bidirectional_attention": True}, "use_bidirectional_attention"),
    "rope_parameters": ({"rope_parameters": {"full_attention": {"rope_type": "default"}}}, "rope_parameters"),
    "mm_siglip_text": (None, "text_config.model_type"),
}


def bad(out, tcfg, specs, W32):
    for case, (change, words) in BAD.items():
        d = os.path.join(out, "bad", case)
        if change is None:
            cfg = {"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"],
                   "text_config": dict(tcfg, model_type="siglip_text_model")}
        else:
            cfg = dict(tcfg, **change)
        write_config(d, cfg)
        write_safetensors(os.path.join(d, "model.safetensors"), specs, "F32", lambda n, s, k: W32[n])
        with open(os.path.join(d, "refusal.txt"), "w") as f:
            f.write(words + "\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "build/gemma3"
    summary = {}
    tcfg, specs, W32 = tiny(out, 7, summary)
    bad(out, tcfg, specs, W32)
    full = "full" in sys.argv[2:]
    # `make check` (gemma3-models, ~250 MB): the 1b at 2 layers in BF16 and F16 (its random
    # weights are bf16 values, so BF16 holds them exactly); `full` (gemma3-full, ~3 GB):
    # its F32 form too, the 4b and the 1b at full depth
    forms_1b = (("bf16", "BF16"), ("f16", "F16")) + ((("f32", "F32"),) if full else ())
    reduced(out, "gemma3-1b", 11, forms_1b, summary)
    if full:
        reduced(out, "gemma3-4b", 13, (("bf16", "BF16"), ("f16", "F16")), summary)
        full_1b(out, 17, summary)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    with open(os.path.join(out, ".done"), "w") as f:
        f.write("ok\n")


if __name__ == "__main__":
    main()
