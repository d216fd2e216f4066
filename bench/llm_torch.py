#!/usr/bin/python3
"""llm_torch.py: the PyTorch reference for bench/bench_llm.c (issue 31).

A small PyTorch implementation of the Hugging Face Llama / Qwen2 / Qwen3
causal-LM forward (modeling_llama, modeling_qwen2, modeling_qwen3):
RMSNorm (float32 variance, as HF), rotate_half RoPE, grouped-query attention
(repeat_kv), SwiGLU MLP, Qwen2's q/k/v biases, Qwen3's per-head q_norm/k_norm,
tied or untied lm_head; a preallocated KV cache; greedy decoding.

The checkpoint is read without the safetensors/transformers packages: the
safetensors header is parsed here (u64 little-endian length + JSON), each
tensor mapped with numpy, BF16 widened to float32 by a 16-bit shift.

  /usr/bin/python3 bench/llm_torch.py --model DIR [--dtype f32,bf16] [--batch 1,8]
        [--prompt 16] [--threads 2] [--check] [--no-speed]

--check: the first-step logits of the prompts in DIR/../logits.txt against
DIR/../logits.f32 (the float64 numpy reference of tests/llm/gen_llm.py):
max |torch - ref| / max |ref| per prompt, and the argmax.

Speed, as bench_llm: b prompts of --prompt ids (the same ids: C's srand(7),
rand() % V, through ctypes) decoded greedily together to n1 = 8 and n2 = 40
generated ids (best of 3 each); step = (t(n2) - t(n1)) / 32, so the prefill
cancels; tok/s = b / step.  No id ends a row early (bench_llm stops a row at
eos, which random weights rarely produce: its "ids" field says).  One JSON line
per (dtype, batch).
"""
import argparse
import ctypes
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

# ---- the checkpoint ------------------------------------------------------------
NP_DT = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}


def read_safetensors(path):
    """name -> float32 numpy array (a copy), parsing the header here."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        raw = data[a:b].view(NP_DT[t["dtype"]]).reshape(t["shape"])
        if t["dtype"] == "BF16":
            arr = (raw.astype(np.uint32) << 16).view(np.float32)
        else:
            arr = raw.astype(np.float32)
        out[name] = arr
    return out


def load_weights(d):
    single = os.path.join(d, "model.safetensors")
    if os.path.exists(single):
        return read_safetensors(single)
    with open(os.path.join(d, "model.safetensors.index.json")) as f:
        files = sorted(set(json.load(f)["weight_map"].values()))
    W = {}
    for fn in files:
        W.update(read_safetensors(os.path.join(d, fn)))
    return W


# ---- the network ---------------------------------------------------------------
class LM:
    def __init__(self, d, dtype):
        with open(os.path.join(d, "config.json")) as f:
            c = json.load(f)
        self.cfg = c
        self.kind = c["model_type"]
        self.d = c["hidden_size"]
        self.H = c["num_attention_heads"]
        self.KV = c.get("num_key_value_heads") or self.H
        self.hd = c.get("head_dim") or self.d // self.H
        self.L = c["num_hidden_layers"]
        self.V = c["vocab_size"]
        self.eps = c["rms_norm_eps"]
        self.theta = float(c.get("rope_theta", 10000.0))
        self.tied = c.get("tie_word_embeddings", False)
        self.dtype = dtype
        W = load_weights(d)

        def T(name):
            return torch.from_numpy(W.pop(name)).to(dtype).contiguous()

        self.emb = T("model.embed_tokens.weight")
        self.head = self.emb if self.tied else T("lm_head.weight")
        self.norm = T("model.norm.weight")
        self.layers = []
        for i in range(self.L):
            p = f"model.layers.{i}."
            l = {k: T(p + n) for k, n in (
                ("ln_in", "input_layernorm.weight"), ("ln_post", "post_attention_layernorm.weight"),
                ("q", "self_attn.q_proj.weight"), ("k", "self_attn.k_proj.weight"),
                ("v", "self_attn.v_proj.weight"), ("o", "self_attn.o_proj.weight"),
                ("gate", "mlp.gate_proj.weight"), ("up", "mlp.up_proj.weight"),
                ("down", "mlp.down_proj.weight"))}
            for k in ("q", "k", "v"):
                bn = p + f"self_attn.{k}_proj.bias"
                l[k + "_b"] = T(bn) if bn in W else None
            if self.kind == "qwen3":
                l["q_norm"], l["k_norm"] = T(p + "self_attn.q_norm.weight"), T(p + "self_attn.k_norm.weight")
            self.layers.append(l)
        if self.tied:
            W.pop("lm_head.weight", None)
        if W:
            raise SystemExit(f"unexpected tensors: {sorted(W)[:5]}")

    def weight_bytes(self):
        """Bytes of the matrices a batch-1 step reads (as bench_llm counts them)."""
        n = sum(l[k].numel() for l in self.layers for k in ("q", "k", "v", "o", "gate", "up", "down"))
        return (n + self.head.numel()) * self.head.element_size()

    def rmsnorm(self, x, w):
        # HF LlamaRMSNorm: variance in float32, then weight * x.to(input dtype)
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return w * xf.to(x.dtype)

    def rope_tables(self, n):
        inv = 1.0 / (self.theta ** (torch.arange(0, self.hd, 2, dtype=torch.float64) / self.hd))
        ang = torch.arange(n, dtype=torch.float64)[:, None] * inv[None, :]
        ang = torch.cat([ang, ang], -1)
        self.cos, self.sin = ang.cos().to(self.dtype), ang.sin().to(self.dtype)   # [n][hd]

    def rope(self, x, pos0):
        # x [B][heads][T][hd] at positions pos0 .. pos0 + T - 1: HF rotate_half
        T = x.shape[2]
        c, s = self.cos[pos0:pos0 + T], self.sin[pos0:pos0 + T]
        h = self.hd // 2
        rot = torch.cat([-x[..., h:], x[..., :h]], -1)
        return x * c + rot * s

    def new_cache(self, B, n):
        shape = (B, self.KV, n, self.hd)
        self.kc = [torch.zeros(shape, dtype=self.dtype) for _ in range(self.L)]
        self.vc = [torch.zeros(shape, dtype=self.dtype) for _ in range(self.L)]
        self.rope_tables(n)

    def forward(self, ids, pos0):
        """ids [B][T] at positions pos0..; K/V into the cache; returns the last position's logits [B][V] (float32)."""
        B, T = ids.shape
        G = self.H // self.KV
        x = F.embedding(ids, self.emb)
        n = pos0 + T
        mask = None
        if T > 1:
            mask = torch.full((T, n), float("-inf")).triu(pos0 + 1)           # causal, absolute positions
        for i, l in enumerate(self.layers):
            h = self.rmsnorm(x, l["ln_in"])
            q = F.linear(h, l["q"], l["q_b"]).view(B, T, self.H, self.hd)
            k = F.linear(h, l["k"], l["k_b"]).view(B, T, self.KV, self.hd)
            v = F.linear(h, l["v"], l["v_b"]).view(B, T, self.KV, self.hd)
            if self.kind == "qwen3":
                q, k = self.rmsnorm(q, l["q_norm"]), self.rmsnorm(k, l["k_norm"])
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            q, k = self.rope(q, pos0), self.rope(k, pos0)
            self.kc[i][:, :, pos0:n] = k
            self.vc[i][:, :, pos0:n] = v
            K, Vv = self.kc[i][:, :, :n], self.vc[i][:, :, :n]
            # repeat_kv without the copy: query head h = g * G + j reads K/V head g, so the
            # G heads of a group (T rows each) are one [G*T][hd] block against K/V head g
            qg = q.reshape(B, self.KV, G * T, self.hd)
            s = torch.matmul(qg, K.transpose(2, 3)) / (self.hd ** 0.5)       # [B][KV][G*T][n]
            if mask is not None:
                s = (s.view(B, self.KV, G, T, n) + mask).view(B, self.KV, G * T, n)
            p = torch.softmax(s.float(), -1).to(q.dtype)                     # HF: softmax in float32
            ctx = torch.matmul(p, Vv).view(B, self.H, T, self.hd).transpose(1, 2).reshape(B, T, self.H * self.hd)
            x = x + F.linear(ctx, l["o"])
            h = self.rmsnorm(x, l["ln_post"])
            x = x + F.linear(F.silu(F.linear(h, l["gate"])) * F.linear(h, l["up"]), l["down"])
        h = self.rmsnorm(x[:, -1], self.norm)
        return F.linear(h, self.head).float()

    def greedy(self, prompts, n_new):
        """prompts [B][P] ids; n_new generated ids per row (no early stop)."""
        B, P = prompts.shape
        lg = self.forward(prompts, 0)
        out = [lg.argmax(-1)]
        for t in range(1, n_new):
            lg = self.forward(out[-1][:, None], P + t - 1)
            out.append(lg.argmax(-1))
        return torch.stack(out, 1)


def c_rand_prompts(b, prompt, V):
    """bench_llm's prompt ids: srand(7), then rand() % V row by row (glibc's rand)."""
    libc = ctypes.CDLL(None)
    libc.srand(7)
    return [[libc.rand() % V for _ in range(prompt)] for _ in range(b)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--dtype", default="f32,bf16")
    ap.add_argument("--batch", default="1,8")
    ap.add_argument("--prompt", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--check", action="store_true", help="first-step logits against the float64 reference")
    ap.add_argument("--no-speed", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    N1, N2 = 8, 40
    for dname in a.dtype.split(","):
        dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[dname]
        t0 = time.perf_counter()
        m = LM(a.model, dtype)
        load_s = time.perf_counter() - t0
        print(json.dumps({"model": a.model, "engine": "pytorch", "torch": torch.__version__, "dtype": dname,
                          "threads": torch.get_num_threads(), "load_s": round(load_s, 1),
                          "step_bytes_MB": round(m.weight_bytes() / 1e6)}), flush=True)
        with torch.inference_mode():
            ref_dir = os.path.dirname(os.path.abspath(a.model.rstrip("/")))
            if a.check and os.path.exists(os.path.join(ref_dir, "logits.f32")):
                with open(os.path.join(ref_dir, "logits.txt")) as f:
                    prompts = [[int(t) for t in ln.split()[1:]] for ln in f if ln.startswith("prompt ")]
                ref = np.fromfile(os.path.join(ref_dir, "logits.f32"), "<f4").reshape(len(prompts), m.V)
                rel, am = [], []
                for p, r in zip(prompts, ref):
                    m.new_cache(1, len(p))
                    lg = m.forward(torch.tensor([p]), 0)[0].double().numpy()
                    rel.append(float(np.abs(lg - r).max() / np.abs(r).max()))
                    am.append(int(lg.argmax()) == int(r.argmax()))
                print(json.dumps({"check": "first-step logits vs float64 reference", "dtype": dname,
                                  "prompt_lengths": [len(p) for p in prompts],
                                  "max_rel_err": [float(f"{e:.2e}") for e in rel], "worst": float(f"{max(rel):.2e}"),
                                  "argmax_equal": f"{sum(am)}/{len(am)}",
                                  "within_1e-4": max(rel) <= 1e-4}), flush=True)
            if a.no_speed:
                continue
            for b in map(int, a.batch.split(",")):
                ids = torch.tensor(c_rand_prompts(b, a.prompt, m.V))
                m.new_cache(b, a.prompt + N2)
                t = [1e30, 1e30]
                for _ in range(a.reps):
                    for k, n in enumerate((N1, N2)):
                        s = time.perf_counter()
                        m.greedy(ids, n)
                        t[k] = min(t[k], time.perf_counter() - s)
                step = (t[1] - t[0]) / (N2 - N1)
                print(json.dumps({"engine": "pytorch", "dtype": dname, "batch": b, "prompt": a.prompt,
                                  "step_ms": round(step * 1e3, 2), "tok_s": round(b / step, 2),
                                  "t_s": [round(t[0], 3), round(t[1], 3)]}), flush=True)
        del m


if __name__ == "__main__":
    sys.exit(main())
