#!/usr/bin/python3
"""gen_m2m.py OUT SPM_DIR [small | full NAME | deep NAME | bench NAME]: random-weight M2M-100 / NLLB-200
checkpoints in the published Hugging Face layout and their expected outputs
from an independent float64 reference written here from the published
equations (transformers' modeling_m2m_100.py: M2M100SinusoidalPositionalEmbedding,
the pre-LN M2M100EncoderLayer / DecoderLayer, the closing layer_norm of each
stack, the tied head; generation as HF >= 4.50 runs it with
forced_bos_token_id), not from the engine's code.  Only numpy (Debian's
python3-numpy) and python3-sentencepiece (through tests/spm_bpe/ref_fairseq.py,
the tokenizers' Python re-implementation); pytorch_model.bin is written by
ptwrite.py without torch.

SPM_DIR is `make spm-bpe-ref`'s output (tests/spm_bpe): its nllb-dir and
m2m-dir hold BPE tokenizers trained here with NLLB's and M2M-100's settings
and special-token layouts; they are copied into every model directory.

small (make check, ~40 MB, seconds):
  OUT/nllb-small/{f32,f16,pt}/   d_model 128, 2 heads of 64, ffn 512, 2+2 layers,
                                 the nllb-dir tokenizer (8,000 pieces: ids to
                                 <mask> = 8,203) and 2 padding rows, vocab 8,206
  OUT/m2m-small/{f32,f16,pt}/    d_model 64, 2 heads of 32, ffn 128, 2+2 layers,
                                 the m2m-dir tokenizer (vocab.json 2,851 entries,
                                 100 language tokens, 8 madeup words): 2,959
  OUT/<name>/expected.jsonl      the reference's outputs (below)
  OUT/nllb-small/json/           f32's weights with NLLB's tokenizer.json alone (no
                                 sentencepiece.bpe.model; tests/spm_bpe/gen_nllb_json.py,
                                 the hub's layout), tokenizer_class NllbTokenizerFast
  OUT/nllb-small/legacy/         f32 with legacy_behaviour true, and
  OUT/nllb-small/expected-legacy.jsonl  greedy rows of the legacy source (pieces +
                                 [</s>, code]; no near-tie), as expected.jsonl
  OUT/bad/<case>/                configs the loader must refuse, by name
full NAME (make m2m-full-check, GBs): one published config, NAME =
  nllb-600m (facebook/nllb-200-distilled-600M), nllb-1.3b (facebook/nllb-200-1.3B),
  m2m-418m (facebook/m2m100_418M): every width, vocabulary and special id as
  published,
  OUT/NAME/{f32,f16,pt}/         at 2 encoder + 2 decoder layers, in the three
                                 forms the hub ships
  OUT/NAME/deep/                 (deep NAME, after full NAME: its sources come from
                                 expected.jsonl) at full depth, safetensors F16
  OUT/NAME/expected.jsonl        greedy and beam results of the 2-layer model
  OUT/NAME/logits.jsonl, .f32    the full-depth model's logits at the first
                                 free step ([n][V] float32)
  Their sources are id-based in the published layout (the language tokens at
  256,001 + i for NLLB, 128,004 + i for M2M-100; the pieces those of the
  tokenizers trained here, whose ids exist in the published vocabularies).

The forms of one model hold the SAME values (gen_llm.round_weights: exact in
F16), so one reference serves them all.  expected.jsonl, one object a line:
  {"kind": "greedy" | "beam", "text", "src_lang", "tgt_lang", "src": source ids,
   "tgt_id": the forced first id, "ids": the generated ids (the forced one
   first, </s> last when produced), "dec": their decoding (small models),
   "score": greedy sum of log p / beam's length-normalized score}
Decoding as the engine's defaults define it (docs/M2M100.md): max_length
MAX_LENGTH counts the start token, the first generated id is forced (log p 0),
the last allowed one is </s> (log p 0), pad is never generated nor counted in
the log-softmax; beams as HF >= 4.50 with length_penalty 1 and the model's
early_stopping.  A sentence one of whose greedy steps has its two best logits
closer than MARGIN is replaced by the next one (a near-tie, which float32 may
break either way): summary.json counts them.

Source sentences: the gettext catalogues of this machine (tests/spm_bpe/
corpus.py's reader), 8 per language (French, Russian, Greek, Chinese), 5 to 40
pieces; each translated into 3 targets (English, German, Arabic).
"""
import json
import math
import os
import random
import shutil
import subprocess
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "llm"))
sys.path.insert(0, os.path.join(HERE, "..", "spm_bpe"))
import gen_llm                       # noqa: E402  round_weights, write_safetensors
import ref_fairseq                   # noqa: E402  the tokenizers in Python
import corpus                        # noqa: E402  catalogue_lines
import ptwrite                       # noqa: E402
import gen_nllb_json                 # noqa: E402  NLLB's tokenizer.json from an spm model

# ---- the published configs (config.json on the Hub) --------------------------------
NLLB_600M = {
    "activation_dropout": 0.0, "activation_function": "relu", "architectures": ["M2M100ForConditionalGeneration"],
    "attention_dropout": 0.1, "bos_token_id": 0, "d_model": 1024, "decoder_attention_heads": 16,
    "decoder_ffn_dim": 4096, "decoder_layerdrop": 0, "decoder_layers": 12, "decoder_start_token_id": 2,
    "dropout": 0.1, "encoder_attention_heads": 16, "encoder_ffn_dim": 4096, "encoder_layerdrop": 0,
    "encoder_layers": 12, "eos_token_id": 2, "init_std": 0.02, "is_encoder_decoder": True, "max_length": 200,
    "max_position_embeddings": 1024, "model_type": "m2m_100", "num_hidden_layers": 12, "pad_token_id": 1,
    "scale_embedding": True, "tokenizer_class": "NllbTokenizer", "torch_dtype": "float32",
    "transformers_version": "4.21.0.dev0", "use_cache": True, "vocab_size": 256206,
}
# bigdataai-lab/nllb-200-1.3B (a public mirror of facebook/nllb-200-1.3B), config.json as read
NLLB_1_3B = dict(NLLB_600M, decoder_ffn_dim=8192, decoder_layers=24, encoder_ffn_dim=8192, encoder_layers=24,
                 num_hidden_layers=24)
NLLB_1_3B.pop("tokenizer_class")
M2M_418M = {
    "activation_dropout": 0.0, "activation_function": "relu", "architectures": ["M2M100ForConditionalGeneration"],
    "attention_dropout": 0.1, "bos_token_id": 0, "d_model": 1024, "decoder_attention_heads": 16,
    "decoder_ffn_dim": 4096, "decoder_layerdrop": 0.05, "decoder_layers": 12, "decoder_start_token_id": 2,
    "dropout": 0.1, "early_stopping": True, "encoder_attention_heads": 16, "encoder_ffn_dim": 4096,
    "encoder_layerdrop": 0.05, "encoder_layers": 12, "eos_token_id": 2, "gradient_checkpointing": False,
    "init_std": 0.02, "is_encoder_decoder": True, "max_length": 200, "max_position_embeddings": 1024,
    "model_type": "m2m_100", "num_beams": 5, "num_hidden_layers": 12, "pad_token_id": 1, "scale_embedding": True,
    "transformers_version": "4.4.0.dev0", "use_cache": True, "vocab_size": 128112,
}
FULL = {"nllb-600m": (NLLB_600M, "nllb"), "nllb-1.3b": (NLLB_1_3B, "nllb"), "m2m-418m": (M2M_418M, "m2m")}
PUBLISHED_LANG_BASE = {"nllb": 256001, "m2m": 128004}

SRC_LANGS = {"nllb": ["fra_Latn", "rus_Cyrl", "ell_Grek", "zho_Hans"], "m2m": ["fr", "ru", "el", "zh"]}
TGT_LANGS = {"nllb": ["eng_Latn", "deu_Latn", "arb_Arab"], "m2m": ["en", "de", "ar"]}
LOCALES = ["fr", "ru", "el", "zh_CN"]
PER_LANG = 8
MAX_LENGTH = 20          # decoder length, start token included: forced id, 17 free, forced </s>
MARGIN = 1e-3
POOL = 400               # candidate sentences kept per source language
N_BEAM = {"small": 24, "full": 12}     # beam 4 decodes (the first sources x targets)
BEAM = 4


# ---- weights ------------------------------------------------------------------------
def specs(cfg, with_positions=False):
    """(name, shape, kind) of M2M100ForConditionalGeneration's state dict, in its order
    (module registration: k, v, q, out; the tied names are views, written by the forms)."""
    d, V = cfg["d_model"], cfg["vocab_size"]
    s = [("model.shared.weight", (V, d), "emb")]
    if with_positions:
        s.append(("model.encoder.embed_positions.weights", (cfg["max_position_embeddings"] + 2, d), "pos"))

    def attn(p):
        return [(f"{p}.{x}_proj.{w}", (d, d) if w == "weight" else (d,), "w" if w == "weight" else "bias")
                for x in ("k", "v", "q", "out") for w in ("weight", "bias")]

    def ln(p):
        return [(p + ".weight", (d,), "norm"), (p + ".bias", (d,), "bias")]

    def ffn(p, F):
        return [(p + ".fc1.weight", (F, d), "w"), (p + ".fc1.bias", (F,), "bias"),
                (p + ".fc2.weight", (d, F), "w"), (p + ".fc2.bias", (d,), "bias")]
    for i in range(cfg["encoder_layers"]):
        p = f"model.encoder.layers.{i}"
        s += attn(p + ".self_attn") + ln(p + ".self_attn_layer_norm") + ffn(p, cfg["encoder_ffn_dim"])
        s += ln(p + ".final_layer_norm")
    s += ln("model.encoder.layer_norm")
    if with_positions:
        s.append(("model.decoder.embed_positions.weights", (cfg["max_position_embeddings"] + 2, d), "pos"))
    for i in range(cfg["decoder_layers"]):
        p = f"model.decoder.layers.{i}"
        s += attn(p + ".self_attn") + ln(p + ".self_attn_layer_norm") + attn(p + ".encoder_attn")
        s += ln(p + ".encoder_attn_layer_norm") + ffn(p, cfg["decoder_ffn_dim"]) + ln(p + ".final_layer_norm")
    s += ln("model.decoder.layer_norm")
    return s


def gain(target):
    """A power of two (exact in every form) taking gen_llm's std 0.02 near target."""
    return np.float32(2.0 ** round(math.log2(target / 0.02)))


def draw(cfg, seed, name, shape, kind):
    """gen_llm.tensor's values (norms around 1, biases 0.1, weights 0.02), the
    weights scaled by powers of two: embeddings to about 1 / sqrt(d) (about 1
    once scaled by sqrt(d)), a Linear [out][in] to about 1.5 / sqrt(in), the
    blocks' last products (out_proj, fc2) 4 times that and cross-attention's
    out_proj 8 times, so that each block adds more to the residual stream than
    the token's embedding holds and the output depends on the source: with
    HF's 0.02 every source gave the same output (3 distinct of 96: one per
    target), with the blocks at 1x the published widths still did (3 of 96 at
    d_model 1024)."""
    if kind == "pos":                              # what an old checkpoint saved: the table, pad row 0
        return positions(cfg["d_model"], shape[0], cfg["pad_token_id"]).astype(np.float32)
    w = gen_llm.tensor(seed, name, shape, "w" if kind == "emb" else kind)
    if kind == "emb":
        w = w * gain(1.0 / math.sqrt(cfg["d_model"]))
        w[cfg["pad_token_id"]] = 0.0              # nn.Embedding(padding_idx) starts the pad row at zero
    elif kind == "w":
        w = w * gain(1.5 / math.sqrt(shape[1]))
        if name.endswith(("out_proj.weight", "fc2.weight")):
            w = w * np.float32(8.0 if ".encoder_attn." in name else 4.0)
    return w


def positions(d, n, pad):
    """M2M100SinusoidalPositionalEmbedding.get_embedding in float64: rows 0..n-1."""
    half = d // 2
    f = np.exp(np.arange(half, dtype=np.float64) * -(math.log(10000.0) / (half - 1)))
    a = np.arange(n, dtype=np.float64)[:, None] * f[None, :]
    e = np.concatenate([np.sin(a), np.cos(a)], axis=1)
    if d % 2:
        e = np.concatenate([e, np.zeros((n, 1))], axis=1)
    if pad is not None:
        e[pad] = 0.0
    return e


# ---- the reference --------------------------------------------------------------------
def layer_norm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * g + b


def attend(q, k, v, H):
    """q [T][d] over k, v [S][d]: heads of d / H, softmax(q k^T / sqrt(hd)) v, no mask."""
    T, d = q.shape
    hd = d // H
    qh = q.reshape(T, H, hd)
    kh = k.reshape(-1, H, hd)
    vh = v.reshape(-1, H, hd)
    s = np.einsum("thd,shd->hts", qh, kh) * hd ** -0.5
    s = np.exp(s - s.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    return np.einsum("hts,shd->thd", s, vh).reshape(T, d)


def top2(v):
    """The first index of v's maximum, and the largest value at another index."""
    y = int(np.argmax(v))
    keep, v[y] = v[y], -np.inf
    second = v.max()
    v[y] = keep
    return y, second


class Ref:
    """M2M100ForConditionalGeneration in float64; W: name -> array (float64)."""

    def __init__(self, cfg, W):
        self.cfg, self.W = cfg, W
        self.d, self.pad, self.eos = cfg["d_model"], cfg["pad_token_id"], cfg["eos_token_id"]
        self.scale = math.sqrt(self.d) if cfg.get("scale_embedding", True) else 1.0
        self.pe = positions(self.d, cfg["max_position_embeddings"] + self.pad + 2, self.pad)
        self.act = {"relu": lambda x: np.maximum(x, 0.0)}[cfg["activation_function"]]

    def lin(self, x, p):
        return x @ self.W[p + ".weight"].T + self.W[p + ".bias"]

    def embed(self, ids, pos0):
        """token * sqrt(d) + position: a row's i-th non-pad token is at padding_idx + 1 + i."""
        x = self.W["model.shared.weight"][ids] * self.scale
        return x + self.pe[self.pad + 1 + pos0: self.pad + 1 + pos0 + len(ids)]

    def ln(self, x, p):
        return layer_norm(x, self.W[p + ".weight"], self.W[p + ".bias"])

    def ffn(self, x, p):
        return x + self.lin(self.act(self.lin(self.ln(x, p + ".final_layer_norm"), p + ".fc1")), p + ".fc2")

    def encoder_layer(self, i, x):
        p, H = f"model.encoder.layers.{i}", self.cfg["encoder_attention_heads"]
        h = self.ln(x, p + ".self_attn_layer_norm")
        a = p + ".self_attn"
        x = x + self.lin(attend(self.lin(h, a + ".q_proj"), self.lin(h, a + ".k_proj"), self.lin(h, a + ".v_proj"),
                                H), a + ".out_proj")
        return self.ffn(x, p)

    def encode(self, src):
        x = self.embed(src, 0)
        for i in range(self.cfg["encoder_layers"]):
            x = self.encoder_layer(i, x)
        return self.ln(x, "model.encoder.layer_norm")

    def cross_kv(self, enc):
        out = []
        for i in range(self.cfg["decoder_layers"]):
            a = f"model.decoder.layers.{i}.encoder_attn"
            out.append((self.lin(enc, a + ".k_proj"), self.lin(enc, a + ".v_proj")))
        return out

    def decoder_step(self, tok, t, cache, cross):
        """One position t for each row r: tok [R]; cache[i] = (K, V) lists of [t][d] per
        row (appended here); cross[r][i] = (K, V) of row r's source.  Logits [R][V]."""
        H = self.cfg["decoder_attention_heads"]
        x = self.W["model.shared.weight"][tok] * self.scale + self.pe[self.pad + 1 + t]     # every row at t
        for i in range(self.cfg["decoder_layers"]):
            p = f"model.decoder.layers.{i}"
            h = self.ln(x, p + ".self_attn_layer_norm")
            a = p + ".self_attn"
            q, k, v = self.lin(h, a + ".q_proj"), self.lin(h, a + ".k_proj"), self.lin(h, a + ".v_proj")
            ctx = np.empty_like(q)
            for r in range(len(tok)):
                cache[i][0][r].append(k[r])
                cache[i][1][r].append(v[r])
                ctx[r] = attend(q[r:r + 1], np.array(cache[i][0][r]), np.array(cache[i][1][r]), H)[0]
            x = x + self.lin(ctx, a + ".out_proj")
            h = self.ln(x, p + ".encoder_attn_layer_norm")
            a = p + ".encoder_attn"
            q = self.lin(h, a + ".q_proj")
            for r in range(len(tok)):
                ctx[r] = attend(q[r:r + 1], cross[r][i][0], cross[r][i][1], H)[0]
            x = x + self.lin(ctx, a + ".out_proj")
            x = self.ffn(x, p)
        x = self.ln(x, "model.decoder.layer_norm")
        return x @ self.W["model.shared.weight"].T              # tied head, no bias

    def new_cache(self, R):
        return [([[] for _ in range(R)], [[] for _ in range(R)]) for _ in range(self.cfg["decoder_layers"])]

    def greedy(self, srcs, bos, max_length):
        """Each source with its forced first id bos[r]; returns per row (ids, min top-2
        gap of the free steps, sum of log p)."""
        R = len(srcs)
        cross = [self.cross_kv(self.encode(s)) for s in srcs]
        cache = self.new_cache(R)
        tok = np.full(R, self.eos)
        out = [[] for _ in range(R)]
        gap, score = [np.inf] * R, [0.0] * R
        live = list(range(R))
        for t in range(max_length - 1):
            lg = self.decoder_step(tok[live], t, [([c[0][r] for r in live], [c[1][r] for r in live]) for c in cache],
                                   [cross[r] for r in live])
            lg[:, self.pad] = -np.inf
            nxt = []
            for j, r in enumerate(live):
                if t == 0:
                    y, lp = bos[r], 0.0
                elif t == max_length - 2:
                    y, lp = self.eos, 0.0
                else:
                    y, second = top2(lg[j])
                    gap[r] = min(gap[r], lg[j][y] - second)
                    m = lg[j].max()
                    lp = lg[j][y] - (m + math.log(np.exp(lg[j] - m).sum()))
                out[r].append(int(y))
                score[r] += lp
                tok[r] = y
                if not (t > 0 and y == self.eos):
                    nxt.append(r)
            live = nxt
            if not live:
                break
        return [(out[r], gap[r], score[r]) for r in range(R)]

    def beam(self, src, bos, max_length, B, early):
        """HF >= 4.50 beam search (length_penalty 1; early_stopping as given) with the
        engine's forced first and last ids.  Returns (ids, score) of the best."""
        cross1 = self.cross_kv(self.encode(src))
        cache = self.new_cache(B)
        run_ids = [[] for _ in range(B)]
        run_sc = np.array([0.0] + [-1e9] * (B - 1))
        fin = []                                        # (score, ids), best first, at most B
        tok = np.full(B, self.eos)
        unsat = True
        for t in range(max_length - 1):
            cur = t + 1                                 # tokens generated once this step is done
            lg = self.decoder_step(tok, t, cache, [cross1] * B)
            lg[:, self.pad] = -np.inf
            if t == 0 or t == max_length - 2:
                forced = bos if t == 0 else self.eos
                lp = np.full_like(lg, -np.inf)
                lp[:, forced] = 0.0
            else:
                m = lg.max(-1, keepdims=True)
                lp = lg - (m + np.log(np.exp(lg - m).sum(-1, keepdims=True)))
            tot = (run_sc[:, None] + lp).reshape(-1)
            V = lg.shape[1]
            order = np.argsort(-tot, kind="stable")[:2 * B]
            cands = []
            for k, f in enumerate(order):
                b, y = divmod(int(f), V)
                stop = (y == self.eos and t > 0) or cur + 1 > max_length - 1
                cands.append((tot[f], b, y, stop))
            new_fin = [(sc / cur, run_ids[b] + [y]) for k, (sc, b, y, stop) in enumerate(cands[:B])
                       if stop and unsat]
            if new_fin:
                merged = fin + new_fin
                merged.sort(key=lambda e: -e[0])           # stable: old entries first on ties
                fin = merged[:B]
            alive = [(sc + (-1e9 if stop else 0.0), b, y) for sc, b, y, stop in cands]
            keep = sorted(range(len(alive)), key=lambda k: -alive[k][0])[:B]
            parents = [alive[k][1] for k in keep]
            run_ids = [run_ids[alive[k][1]] + [alive[k][2]] for k in keep]
            run_sc = np.array([alive[k][0] for k in keep])
            tok = np.array([alive[k][2] for k in keep])
            for i in range(len(cache)):
                for j in (0, 1):
                    cache[i][j][:] = [list(cache[i][j][p]) for p in parents]
            worst = min(e[0] for e in fin) if len(fin) == B else -1e9
            unsat = unsat and run_sc[0] / cur > worst
            full = early and len(fin) == B
            if not unsat or all(c[3] for c in cands) or full:
                break
        return fin[0][1], fin[0][0]


# ---- sources -----------------------------------------------------------------------
def tokenizers(spm_dir):
    nd, md = os.path.join(spm_dir, "nllb-dir"), os.path.join(spm_dir, "m2m-dir")
    with open(os.path.join(md, "vocab.json"), encoding="utf-8") as f:
        enc = json.load(f)
    return {"nllb": (ref_fairseq.Nllb(os.path.join(nd, "sentencepiece.bpe.model")), nd),
            "m2m": (ref_fairseq.M2M100(os.path.join(md, "sentencepiece.bpe.model"), enc), md)}


_CATALOGUES = {}


def catalogue(loc):
    """corpus.catalogue_lines(loc), read once (it parses every .mo of the locale)."""
    if loc not in _CATALOGUES:
        _CATALOGUES[loc] = sorted({l for l in corpus.catalogue_lines(loc) if "\t" not in l})
    return _CATALOGUES[loc]


def sentence_pool(tok, kind):
    """Per source language, catalogue lines of 5..40 pieces, in a seeded order."""
    rng = random.Random(4949)
    pools = []
    for loc, lang in zip(LOCALES, SRC_LANGS[kind]):
        lines = list(catalogue(loc))
        rng.shuffle(lines)
        ok = []
        for l in lines:                     # the first POOL that fit: enough for every use, and fast
            if 5 <= len(tok.encode(l, lang)) - 2 <= 40:
                ok.append(l)
                if len(ok) == POOL:
                    break
        if len(ok) < PER_LANG * 4:
            sys.exit(f"gen_m2m.py: only {len(ok)} usable {loc} lines on this machine")
        pools.append((lang, ok))
    return pools


def lang_id(tok, kind, code):
    return tok.lang_code_to_id[code] if kind == "nllb" else tok.lang_token_to_id[f"__{code}__"]


def published_ids(kind, ids, tok, codes):
    """Source ids with the language token moved to its published place."""
    i = list(ids)
    code = next(c for c in codes if lang_id(tok, kind, c) == i[0])
    i[0] = PUBLISHED_LANG_BASE[kind] + (ref_fairseq.NLLB_CODES if kind == "nllb" else ref_fairseq.M2M_CODES).index(code)
    return i


def choose(ref, tok, kind, published, summary):
    """PER_LANG sentences per source language whose greedy runs into all 3 targets
    have no near-tie; returns the greedy rows."""
    rows, replaced = [], 0
    tgts = TGT_LANGS[kind]
    all_codes = ref_fairseq.NLLB_CODES if kind == "nllb" else ref_fairseq.M2M_CODES
    for lang, pool in sentence_pool(tok, kind):
        taken, at = 0, 0
        while taken < PER_LANG:
            batch = pool[at:at + PER_LANG - taken]
            at += len(batch)
            if not batch:
                sys.exit(f"gen_m2m.py: ran out of {lang} sentences without near-ties")
            srcs, bos, meta = [], [], []
            for text in batch:
                src = tok.encode(text, lang)
                for tgt in tgts:
                    b = lang_id(tok, kind, tgt)
                    if published:
                        src_p = published_ids(kind, src, tok, all_codes)
                        b = PUBLISHED_LANG_BASE[kind] + all_codes.index(tgt)
                    srcs.append(src_p if published else src)
                    bos.append(b)
                    meta.append((text, tgt))
            res = ref.greedy(srcs, bos, MAX_LENGTH)
            for j in range(0, len(res), len(tgts)):
                group = res[j:j + len(tgts)]
                if min(g[1] for g in group) < MARGIN:
                    replaced += 1
                    continue
                taken += 1
                for k, (ids, gap, score) in enumerate(group):
                    text, tgt = meta[j + k]
                    rows.append({"kind": "greedy", "text": text, "src_lang": lang, "tgt_lang": tgt,
                                 "src": [int(x) for x in srcs[j + k]], "tgt_id": int(bos[j + k]), "ids": ids,
                                 "score": score, "min_gap": gap})
                if taken == PER_LANG:
                    break
    summary["near_tie_sentences_replaced"] = replaced
    return rows


def add_decodes(rows, tok, published):
    for r in rows:
        if not published:
            r["dec"] = tok.decode([2] + r["ids"])
        r.pop("min_gap", None)


def beams(ref, rows, n, early):
    out = []
    for r in rows[:n]:
        ids, score = ref.beam(r["src"], r["tgt_id"], MAX_LENGTH, BEAM, early)
        out.append(dict(r, kind="beam", ids=[int(x) for x in ids], score=float(score)))
    return out


# ---- model directories -------------------------------------------------------------
def tied_entries(cfg, sp):
    """pytorch_model.bin's state dict in HF's order: model.shared.weight and its tied
    views (the encoder's embed_tokens after it, the decoder's before its first
    tensor, lm_head.weight last) on storage "0", every other tensor its own."""
    e, keys, dec_done = [], {}, False
    d, V = cfg["d_model"], cfg["vocab_size"]
    for name, shape, kind in sp:
        if name == "model.shared.weight":
            e += [(name, "0", "F32", shape), ("model.encoder.embed_tokens.weight", "0", "F32", shape)]
            continue
        if name.startswith("model.decoder.") and not dec_done:
            e.append(("model.decoder.embed_tokens.weight", "0", "F32", (V, d)))
            dec_done = True
        keys[name] = str(len(keys) + 1)
        e.append((name, keys[name], "F32", shape))
    e.append(("lm_head.weight", "0", "F32", (V, d)))
    return e, keys


def modules(cfg):
    m = ["", "model", "model.encoder", "model.decoder", "lm_head"]
    for s in ("encoder", "decoder"):
        for i in range(cfg[f"{s}_layers"]):
            m.append(f"model.{s}.layers.{i}")
    return m


def write_forms(base, cfg, sp, W, tok_dir, forms=("f32", "f16", "pt")):
    get = lambda n, s, k: W[n]                                          # noqa: E731
    plain = [x for x in sp if x[2] != "pos"]
    for form in forms:
        dd = os.path.join(base, form)
        os.makedirs(dd, exist_ok=True)
        c = dict(cfg, torch_dtype="float16" if form == "f16" else "float32")
        gen_llm.write_config(dd, c)
        for f in os.listdir(tok_dir):
            shutil.copy(os.path.join(tok_dir, f), dd)
        if form == "pt":
            entries, keys = tied_entries(cfg, sp)
            by_key = {v: n for n, v in keys.items()}
            ptwrite.write(os.path.join(dd, "pytorch_model.bin"), entries,
                          lambda key: W["model.shared.weight"] if key == "0" else W[by_key[key]], modules(cfg))
        else:
            gen_llm.write_safetensors(os.path.join(dd, "model.safetensors"), plain, form.upper(), get)


def write_expected(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def fast_and_legacy(base, ref, tok_dir, rows):
    """nllb-small's json/ and legacy/ forms (the f32 weights) and the greedy rows
    of the legacy source order for the first PER_LANG greedy texts of each
    source language, without near-ties."""
    f32 = os.path.join(base, "f32")
    for form in ("json", "legacy"):
        dd = os.path.join(base, form)
        os.makedirs(dd, exist_ok=True)
        for f in ("config.json", "model.safetensors"):
            shutil.copy(os.path.join(f32, f), dd)
    jd, ld = os.path.join(base, "json"), os.path.join(base, "legacy")
    spm_file = os.path.join(tok_dir, "sentencepiece.bpe.model")
    with open(os.path.join(jd, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(gen_nllb_json.tokenizer_json(spm_file, ref_fairseq.NLLB_CODES, "v4"), f, ensure_ascii=False)
    with open(os.path.join(jd, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "NllbTokenizerFast", "src_lang": "eng_Latn", "legacy_behaviour": False,
                   "additional_special_tokens": ref_fairseq.NLLB_CODES}, f, indent=1)
    for fn in os.listdir(tok_dir):
        shutil.copy(os.path.join(tok_dir, fn), ld)
    with open(os.path.join(ld, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "NllbTokenizer", "legacy_behaviour": True}, f, indent=1)
    leg = ref_fairseq.Nllb(spm_file, legacy=True)
    greedy = [r for r in rows if r["kind"] == "greedy"]
    srcs = [leg.encode(r["text"], r["src_lang"]) for r in greedy]
    res = ref.greedy(srcs, [r["tgt_id"] for r in greedy], MAX_LENGTH)
    out = []
    for r, src, (ids, gap, score) in zip(greedy, srcs, res):
        if gap >= MARGIN:
            out.append(dict(r, src=[int(x) for x in src], ids=ids, score=score, dec=leg.decode([2] + ids)))
            out[-1].pop("min_gap", None)
    write_expected(os.path.join(base, "expected-legacy.jsonl"), out)
    return {"legacy_rows": len(out), "legacy_differs": sum(a["ids"] != b["ids"] for a, b in zip(out, greedy))}


def small(out, spm_dir, summary):
    toks = tokenizers(spm_dir)
    shapes = {
        "nllb-small": ("nllb", dict(NLLB_600M, d_model=128, encoder_attention_heads=2, decoder_attention_heads=2,
                                    encoder_ffn_dim=512, decoder_ffn_dim=512, encoder_layers=2, decoder_layers=2,
                                    num_hidden_layers=2)),
        "m2m-small": ("m2m", dict(M2M_418M, d_model=64, encoder_attention_heads=2, decoder_attention_heads=2,
                                  encoder_ffn_dim=128, decoder_ffn_dim=128, encoder_layers=2, decoder_layers=2,
                                  num_hidden_layers=2)),
    }
    for seed, (name, (kind, cfg)) in enumerate(shapes.items()):
        tok, tok_dir = toks[kind]
        n_ids = (tok.fairseq_tokens_to_ids["<mask>"] + 1 + 2) if kind == "nllb" else \
            (len(tok.encoder) + len(ref_fairseq.M2M_CODES) + 8)
        cfg = dict(cfg, vocab_size=n_ids)
        sp = specs(cfg, with_positions=True)
        W = {n: draw(cfg, 101 + seed, n, s, k) for n, s, k in sp}
        base = os.path.join(out, name)
        write_forms(base, cfg, sp, W, tok_dir)
        ref = Ref(cfg, {n: w.astype(np.float64) for n, w in W.items()})
        summ = {}
        rows = choose(ref, tok, kind, False, summ)
        rows += beams(ref, rows, N_BEAM["small"], bool(cfg.get("early_stopping")))
        add_decodes(rows, tok, False)
        write_expected(os.path.join(base, "expected.jsonl"), rows)
        if kind == "nllb":
            summ.update(fast_and_legacy(base, ref, tok_dir, rows))
        served(ref, tok, kind, base, summ)
        summ.update(decodes=len(rows), distinct_outputs=len({tuple(r["ids"]) for r in rows if r["kind"] == "greedy"}),
                    eos_ended=sum(r["ids"][-1] == 2 and len(r["ids"]) < MAX_LENGTH - 1 for r in rows),
                    beam_differs_from_greedy=sum(b["ids"] != g["ids"] for b, g in
                                                 zip([r for r in rows if r["kind"] == "beam"], rows)))
        summ["lang_vocab"] = lang_vocab_fixture(base, kind, tok_dir)
        summary[name] = summ
        print(name, summ, flush=True)
    bad(out, toks, summary)


FIXTURE_LANGS = {"nllb": ["fra_Latn", "rus_Cyrl", "ell_Grek", "zho_Hans"], "m2m": ["fr", "ru", "el", "zh"]}


def lang_vocab_fixture(base, kind, tok_dir):
    """OUT/<name>/lang_vocab.txt: a target-language vocabulary map built by
    models/recipe/lang_vocab.py (the recipe itself, run here) from this
    machine's gettext catalogues, one text per language (test_m2m.c loads it:
    the recipe's output must be a file the engine accepts)."""
    args = []
    for code, loc in zip(FIXTURE_LANGS[kind], LOCALES):
        path = os.path.join(base, "text-%s.txt" % code)
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(catalogue(loc)[:3000]) + "\n")
        args.append("%s=%s" % (code, path))
    recipe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models", "recipe", "lang_vocab.py")
    subprocess.run([sys.executable, recipe, tok_dir, os.path.join(base, "lang_vocab.txt")] + args, check=True)
    return len(args)


SERVED_TGTS = {"nllb": ["eng_Latn", "deu_Latn", "arb_Arab", "spa_Latn", "jpn_Jpan"], "m2m": ["en", "de", "ar", "es", "ja"]}
SERVED_CODES = {"fra_Latn": "fr", "rus_Cyrl": "ru", "ell_Grek": "el", "zho_Hans": "zh", "eng_Latn": "en",
                "deu_Latn": "de", "arb_Arab": "ar", "spa_Latn": "es", "jpn_Jpan": "ja"}


def served(ref, tok, kind, base, summary):
    """served.jsonl: 20 pairs (4 sources x 5 targets), one sentence each, for the
    server test (test_m2m.c test_served): the request's codes as clients send them
    ("fr", "de"), the model's, the greedy ids and their text."""
    rows, skipped = [], 0
    for lang, pool in sentence_pool(tok, kind):
        for tgt in SERVED_TGTS[kind]:
            while True:
                text = pool.pop()
                src, b = tok.encode(text, lang), lang_id(tok, kind, tgt)
                (ids, gap, score), = ref.greedy([src], [b], MAX_LENGTH)
                if gap >= MARGIN and "." not in text and "%" not in text and "{" not in text:
                    break
                skipped += 1
            rows.append({"text": text, "source": SERVED_CODES.get(lang, lang), "target": SERVED_CODES.get(tgt, tgt),
                         "src_lang": lang, "tgt_lang": tgt, "src": src, "tgt_id": b, "ids": ids,
                         "dec": tok.decode([2] + ids)})
    write_expected(os.path.join(base, "served.jsonl"), rows)
    summary["served_pairs"], summary["served_redrawn"] = len(rows), skipped


def bad(out, toks, summary):
    """Configs the loader refuses, each naming its key (test_m2m.c)."""
    tok_dir = toks["nllb"][1]
    cfg = dict(NLLB_600M, d_model=16, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
               decoder_ffn_dim=32, encoder_layers=1, decoder_layers=1, vocab_size=toks["nllb"][0].fairseq_tokens_to_ids["<mask>"] + 1)
    cases = {
        "good": cfg,
        "nllb-moe": dict(cfg, model_type="nllb-moe", num_experts=128),
        "moe-keys": dict(cfg, num_experts=4),
        "activation": dict(cfg, activation_function="gelu_new"),
        "unshared": dict(cfg, share_encoder_decoder_embeddings=False),
        "not-encoder-decoder": dict(cfg, is_encoder_decoder=False),
        "decoder-vocab": dict(cfg, decoder_vocab_size=cfg["vocab_size"] + 8),
        "d-model": dict(cfg, d_model=2, encoder_attention_heads=1, decoder_attention_heads=1),
        "emb-norm": dict(cfg, normalize_embedding=True),
    }
    root = os.path.join(out, "bad")
    shutil.rmtree(root, ignore_errors=True)
    for case, c in cases.items():
        sp = specs(c)
        W = {n: draw(c, 7, n, s, k) for n, s, k in sp}
        write_forms(os.path.join(root, case), c, sp, W, tok_dir, forms=("f32",))
    no_ln = os.path.join(root, "no-final-norm", "f32")      # the encoder's closing LayerNorm missing
    c = cases["good"]
    sp = [x for x in specs(c) if not x[0].startswith("model.encoder.layer_norm")]
    W = {n: draw(c, 7, n, s, k) for n, s, k in sp}
    write_forms(os.path.dirname(no_ln), c, sp, W, tok_dir, forms=("f32",))
    summary["bad"] = sorted(os.listdir(root))


# ---- the published configs ---------------------------------------------------------
N_DEEP = 4               # sources of the full-depth logits check


def decoder_layer_full(ref, i, x, enc):
    """Decoder layer i over all positions of x [T][d] at once (causal), against enc."""
    p, H = f"model.decoder.layers.{i}", ref.cfg["decoder_attention_heads"]
    T = x.shape[0]
    h = ref.ln(x, p + ".self_attn_layer_norm")
    a = p + ".self_attn"
    q, k, v = ref.lin(h, a + ".q_proj"), ref.lin(h, a + ".k_proj"), ref.lin(h, a + ".v_proj")
    ctx = np.stack([attend(q[t:t + 1], k[:t + 1], v[:t + 1], H)[0] for t in range(T)])
    x = x + ref.lin(ctx, a + ".out_proj")
    h = ref.ln(x, p + ".encoder_attn_layer_norm")
    a = p + ".encoder_attn"
    x = x + ref.lin(attend(ref.lin(h, a + ".q_proj"), ref.lin(enc, a + ".k_proj"), ref.lin(enc, a + ".v_proj"), H),
                    a + ".out_proj")
    return ref.ffn(x, p)


def deep(out, cfg, seed, prompts, summary, name, tok_dir):
    """The full-depth model in F16 safetensors, streamed: each tensor drawn, written,
    and used by the reference on the prompts ([eos, forced id] after each source)
    once its layer is complete, then dropped.  Writes the first free step's logits."""
    base = os.path.join(out, name, "deep")
    os.makedirs(base, exist_ok=True)
    gen_llm.write_config(base, dict(cfg, torch_dtype="float16"))
    for f in os.listdir(tok_dir):
        shutil.copy(os.path.join(tok_dir, f), base)
    sp = specs(cfg)
    W = {}
    ref = Ref(cfg, W)
    st = {"enc": None, "dec": None}

    def layer_done(prefix, names):
        return all(n in W for n in names if n.startswith(prefix))

    names = [n for n, _, _ in sp]

    def get(n, s, k):
        w = draw(cfg, seed, n, s, k)
        W[n] = w.astype(np.float64)
        if n == "model.shared.weight":
            st["enc"] = [ref.embed(src, 0) for src, _ in prompts]
            st["dec"] = [ref.embed([ref.eos, b], 0) for _, b in prompts]
        for i in range(max(cfg["encoder_layers"], cfg["decoder_layers"])):
            for side in ("encoder", "decoder"):
                pre = f"model.{side}.layers.{i}."
                if n.startswith(pre) and layer_done(pre, names):
                    if side == "encoder":
                        st["enc"] = [ref.encoder_layer(i, x) for x in st["enc"]]
                    else:
                        st["dec"] = [decoder_layer_full(ref, i, x, e) for x, e in zip(st["dec"], st["encf"])]
                    for m in [m for m in names if m.startswith(pre)]:
                        W.pop(m, None)
        if n == "model.encoder.layer_norm.bias":
            st["encf"] = [ref.ln(x, "model.encoder.layer_norm") for x in st["enc"]]
        return w

    gen_llm.write_safetensors(os.path.join(base, "model.safetensors"), sp, "F16", get)
    lg = np.stack([ref.ln(x, "model.decoder.layer_norm")[1] @ W["model.shared.weight"].T for x in st["dec"]])
    lg[:, cfg["pad_token_id"]] = -np.inf
    fin = np.where(np.isfinite(lg), lg, 0.0)
    fin.astype("<f4").tofile(os.path.join(out, name, "logits.f32"))
    top = np.argsort(-lg, axis=1, kind="stable")[:, :2]
    rows = [{"src": [int(x) for x in p[0]], "tgt_id": int(p[1]), "argmax": int(t[0]),
             "gap": float(l[t[0]] - l[t[1]])} for p, t, l in zip(prompts, top, lg)]
    write_expected(os.path.join(out, name, "logits.jsonl"), rows)
    summary[name + "-deep"] = {"prompts": len(rows), "argmax": [r["argmax"] for r in rows],
                               "gaps": [r["gap"] for r in rows], "logit_std": float(fin.std())}


def full(out, spm_dir, name, summary):
    cfg0, kind = FULL[name]
    seed = 200 + list(FULL).index(name)
    tok, tok_dir = tokenizers(spm_dir)[kind]
    cfg = dict(cfg0, encoder_layers=2, decoder_layers=2, num_hidden_layers=2)
    sp = specs(cfg, with_positions=True)
    W = {n: draw(cfg, seed, n, s, k) for n, s, k in sp}
    base = os.path.join(out, name)
    write_forms(base, cfg, sp, W, tok_dir)
    ref = Ref(cfg, {n: w.astype(np.float64) for n, w in W.items()})
    del W
    summ = {}
    rows = choose(ref, tok, kind, True, summ)
    rows += beams(ref, rows, N_BEAM["full"], bool(cfg.get("early_stopping")))
    add_decodes(rows, tok, True)
    write_expected(os.path.join(base, "expected.jsonl"), rows)
    summ.update(decodes=len(rows), distinct_outputs=len({tuple(r["ids"]) for r in rows if r["kind"] == "greedy"}))
    summary[name] = summ
    print(name, summ, flush=True)


def full_deep(out, spm_dir, name, summary):
    """The full-depth model of `full NAME`'s config (its 2-layer forms may be gone:
    its expected.jsonl gives the sources)."""
    cfg0, kind = FULL[name]
    seed = 200 + list(FULL).index(name)
    tok_dir = tokenizers(spm_dir)[kind][1]
    with open(os.path.join(out, name, "expected.jsonl"), encoding="utf-8") as f:
        greedy = [r for r in map(json.loads, f) if r["kind"] == "greedy"]   # one per source language, targets in turn
    picks = [greedy[i * len(greedy) // N_DEEP + i % 3] for i in range(N_DEEP)]
    deep(out, cfg0, seed, [(r["src"], r["tgt_id"]) for r in picks], summary, name, tok_dir)
    print(name, "deep", summary[name + "-deep"], flush=True)


def bench_weights(out, spm_dir, name):
    """bench NAME (make m2m-vocab-bench): the full-depth model of a published config
    in F16 safetensors, weights only (no reference: the benchmark times it, the
    tests check the same code at 2 layers and the first step at full depth)."""
    cfg, kind = FULL[name]
    seed = 200 + list(FULL).index(name)
    base = os.path.join(out, name, "deep")
    os.makedirs(base, exist_ok=True)
    gen_llm.write_config(base, dict(cfg, torch_dtype="float16"))
    tok_dir = tokenizers(spm_dir)[kind][1]
    for f in os.listdir(tok_dir):
        shutil.copy(os.path.join(tok_dir, f), base)
    gen_llm.write_safetensors(os.path.join(base, "model.safetensors"), specs(cfg), "F16",
                              lambda n, s, k: draw(cfg, seed, n, s, k))


def main():
    out, spm_dir = sys.argv[1], sys.argv[2]
    what = sys.argv[3] if len(sys.argv) > 3 else "small"
    os.makedirs(out, exist_ok=True)
    summary = {}
    if what == "small":
        small(out, spm_dir, summary)
    elif what == "full":
        full(out, spm_dir, sys.argv[4], summary)
    elif what == "bench":
        bench_weights(out, spm_dir, sys.argv[4])
    else:
        full_deep(out, spm_dir, sys.argv[4], summary)
    path = os.path.join(out, "summary.json")
    old = json.load(open(path)) if os.path.exists(path) else {}
    old.update(summary)
    json.dump(old, open(path, "w"), indent=2)


if __name__ == "__main__":
    main()
