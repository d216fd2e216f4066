#!/usr/bin/python3
"""The PyTorch reference implementation of the MarianMT model format.

Written from the conventions of docs/MARIAN.md (sections 1-4); it is the
independent reference the C engine is checked against, and the model we train.

Conventions (all from the spec):
  - token embeddings multiplied by sqrt(d_model); sinusoidal positions in
    Marian's [sin | cos] layout, computed in float64, starting at 0;
  - post-norm blocks, LayerNorm eps 1e-5, swish (or relu) feed-forward;
  - logits = h . shared^T + final_logits_bias (tied embeddings);
  - the config variants of published models (none of them changes the default
    configuration's modules, parameters or results): separate encoder and
    decoder tables when share_encoder_decoder_embeddings is false (the decoder's
    with decoder_vocab_size rows; the special ids are target ids), an own
    lm_head when tie_word_embeddings is false, and normalize_embedding: the
    BART-era layernorm_embedding (transformers 3.x, when MarianMTModel was a
    BartForConditionalGeneration) applied to embedding * scale + position in
    the encoder and in the decoder.  Today's HF MarianMTModel has no such module
    (it ignores the key) and convert_marian_to_pytorch.py refuses such models;
    this follows the BART code that defined the key;
  - decoding starts from the pad token; pad is never generated: it is removed
    from the softmax normalizer ("renormalized" logits);
  - greedy and beam search (HF v4.50+ rules, length penalty over generated
    tokens including eos) with an incremental KV cache.
"""
import math
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

NEG = torch.finfo(torch.float32).min


def default_config(**kw):
    c = dict(
        architectures=["MarianMTModel"], model_type="marian", vocab_size=8000, decoder_vocab_size=8000,
        d_model=256, encoder_layers=3, decoder_layers=3, encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=1024, decoder_ffn_dim=1024, activation_function="swish", max_position_embeddings=512,
        scale_embedding=True, static_position_embeddings=True, normalize_before=False, normalize_embedding=False,
        add_final_layer_norm=False, share_encoder_decoder_embeddings=True, tie_word_embeddings=True,
        pad_token_id=7999, eos_token_id=0, bos_token_id=0, decoder_start_token_id=7999, forced_eos_token_id=0,
        bad_words_ids=[[7999]], num_beams=4, max_length=256, dropout=0.1, attention_dropout=0.0,
        activation_dropout=0.0, init_std=0.02, is_encoder_decoder=True, use_cache=True,
        num_hidden_layers=3, torch_dtype="float32")
    c.update(kw)
    return c


def sinusoidal_positions(n_pos, dim):
    """[n_pos, dim] float32: first half sin, second half cos (not interleaved)."""
    pos = np.arange(n_pos, dtype=np.float64)[:, None]
    j = np.arange(dim, dtype=np.float64)[None, :]
    enc = pos / np.power(10000, 2 * (j // 2) / dim)
    half = dim // 2 if dim % 2 == 0 else dim // 2 + 1
    out = np.zeros((n_pos, dim), dtype=np.float32)
    out[:, :half] = np.sin(enc[:, 0::2])
    out[:, half:] = np.cos(enc[:, 1::2])
    return torch.from_numpy(out)


def q8_rows(v):
    """Symmetric int8 quantization of each row of v (float32 [..., n]), as the C
    engine does it (engine/linear_q8.c): scale = max|row| / 127, q = round half to
    even of v * (127 / max), every operation in float32.  Returns q (integer
    valued, float64) and the scales [..., 1] (float32)."""
    mx = v.abs().amax(dim=-1, keepdim=True)
    inv = torch.where(mx > 0, torch.tensor(127.0, dtype=v.dtype) / mx, torch.zeros_like(mx))
    q = torch.round(v * inv).clamp(-127, 127)
    return q.double(), mx / 127.0


def linear_q8(x, qw, ws, b):
    """y = (float)(qx . qw) * (xs * ws) + b: the int8 product of engine/linear_q8.c.
    The integer sums are exact in float64 (|sum| < 2^53) and rounded once to
    float32, as C's (float) of the int32 sum."""
    qx, xs = q8_rows(x)
    acc = torch.matmul(qx, qw.t()).float()
    y = acc * (xs * ws.t())
    return y + b if b is not None else y


def quantize_int8(model):
    """The C engine's --weights int8 on this reference: every nn.Linear and the
    vocabulary projection get int8 weights per output row and quantize their inputs
    per row as they run; embeddings, norms and attention stay float32.  Returns the
    number of matrices quantized."""
    n = 0
    for mod in model.modules():
        if isinstance(mod, nn.Linear):
            qw, ws = q8_rows(mod.weight.data.float())
            mod.forward = (lambda qw, ws, b: (lambda x: linear_q8(x, qw, ws, b)))(qw, ws, mod.bias)
            n += 1
    head = model.lm_head.weight if hasattr(model, "lm_head") else model.table(True).weight
    model.q8_head = q8_rows(head.data.float())      # a copy: a tied table stays float32 for the embeddings
    return n + (0 if hasattr(model, "lm_head") else 1)


def act_fn(name):
    return {"swish": F.silu, "silu": F.silu, "relu": F.relu, "gelu": F.gelu}[name]


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.scaling = self.hd ** -0.5
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(d, d) for _ in range(4))

    def split(self, x):  # [B, T, d] -> [B, H, T, hd]
        B, T, _ = x.shape
        return x.view(B, T, self.h, self.hd).transpose(1, 2)

    def forward(self, x, k, v, mask):
        """x [B,Tq,d]; k, v [B,H,Tk,hd] already projected; mask additive [B,1,Tq|1,Tk] or None."""
        q = self.split(self.q_proj(x))
        w = torch.matmul(q, k.transpose(-1, -2)) * self.scaling          # [B,H,Tq,Tk]
        if mask is not None:
            w = w + mask
        w = F.softmax(w.float(), dim=-1).to(q.dtype)
        w = F.dropout(w, p=0.0, training=self.training)
        o = torch.matmul(w, v).transpose(1, 2).reshape(x.shape[0], x.shape[1], -1)
        return self.out_proj(o), w

    def kv(self, x):
        return self.split(self.k_proj(x)), self.split(self.v_proj(x))


class EncoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["d_model"]
        self.self_attn = Attention(d, c["encoder_attention_heads"])
        self.self_attn_layer_norm = nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, c["encoder_ffn_dim"]), nn.Linear(c["encoder_ffn_dim"], d)
        self.final_layer_norm = nn.LayerNorm(d)
        self.act, self.p = act_fn(c["activation_function"]), c["dropout"]

    def forward(self, h, mask):
        k, v = self.self_attn.kv(h)
        a, w = self.self_attn(h, k, v, mask)
        h = self.self_attn_layer_norm(h + F.dropout(a, self.p, self.training))
        f = self.fc2(self.act(self.fc1(h)))
        h = self.final_layer_norm(h + F.dropout(f, self.p, self.training))
        return h, w


class DecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["d_model"]
        self.self_attn = Attention(d, c["decoder_attention_heads"])
        self.self_attn_layer_norm = nn.LayerNorm(d)
        self.encoder_attn = Attention(d, c["decoder_attention_heads"])
        self.encoder_attn_layer_norm = nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, c["decoder_ffn_dim"]), nn.Linear(c["decoder_ffn_dim"], d)
        self.final_layer_norm = nn.LayerNorm(d)
        self.act, self.p = act_fn(c["activation_function"]), c["dropout"]

    def forward(self, h, self_k, self_v, self_mask, cross_k, cross_v, cross_mask):
        a, ws = self.self_attn(h, self_k, self_v, self_mask)
        h = self.self_attn_layer_norm(h + F.dropout(a, self.p, self.training))
        a, wc = self.encoder_attn(h, cross_k, cross_v, cross_mask)
        h = self.encoder_attn_layer_norm(h + F.dropout(a, self.p, self.training))
        f = self.fc2(self.act(self.fc1(h)))
        h = self.final_layer_norm(h + F.dropout(f, self.p, self.training))
        return h, ws, wc


class _Stack(nn.Module):
    """An encoder or decoder: its layers, and (config variants only) its own
    token table (embed_tokens) and layernorm_embedding."""

    def __init__(self, layers, embed_tokens=None, layernorm_embedding=None):
        super().__init__()
        if embed_tokens is not None:
            self.embed_tokens = embed_tokens
        self.layers = nn.ModuleList(layers)
        if layernorm_embedding is not None:
            self.layernorm_embedding = layernorm_embedding


def _table(rows, d, pad):
    return nn.Embedding(rows, d, padding_idx=pad if 0 <= pad < rows else None)


class _Inner(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, pad = c["d_model"], c["pad_token_id"]
        enc_tab = dec_tab = enc_ln = dec_ln = None
        if c.get("share_encoder_decoder_embeddings", True):
            self.shared = nn.Embedding(c["vocab_size"], d, padding_idx=pad)
        else:
            self.shared = None
            enc_tab = _table(c["vocab_size"], d, pad)
            dec_tab = _table(c.get("decoder_vocab_size", c["vocab_size"]), d, pad)
        if c.get("normalize_embedding", False):
            enc_ln, dec_ln = nn.LayerNorm(d), nn.LayerNorm(d)
        self.encoder = _Stack([EncoderLayer(c) for _ in range(c["encoder_layers"])], enc_tab, enc_ln)
        self.decoder = _Stack([DecoderLayer(c) for _ in range(c["decoder_layers"])], dec_tab, dec_ln)


class Marian(nn.Module):
    """State-dict names equal Hugging Face's MarianMTModel names (model.shared.weight, ...)."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.model = _Inner(c)
        shared = c.get("share_encoder_decoder_embeddings", True)
        v_out = c["vocab_size"] if shared else c.get("decoder_vocab_size", c["vocab_size"])
        self.register_buffer("final_logits_bias", torch.zeros(1, v_out))
        if not c.get("tie_word_embeddings", True):
            self.lm_head = nn.Linear(c["d_model"], v_out, bias=False)
        self.register_buffer("pos", sinusoidal_positions(c["max_position_embeddings"], c["d_model"]), persistent=False)
        self.scale = math.sqrt(c["d_model"]) if c["scale_embedding"] else 1.0
        self.pad, self.eos = c["pad_token_id"], c["eos_token_id"]
        std = c["init_std"]
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=std)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Embedding):
                nn.init.normal_(m.weight, std=std)
        with torch.no_grad():
            for tab in {id(t): t for t in (self.table(False), self.table(True))}.values():
                if self.pad < tab.weight.shape[0]:
                    tab.weight[self.pad].zero_()

    # ---- building blocks -------------------------------------------------
    def table(self, decoder):
        """The token embedding table of the encoder or the decoder."""
        if self.model.shared is not None:
            return self.model.shared
        return (self.model.decoder if decoder else self.model.encoder).embed_tokens

    def embed(self, ids, start=0, decoder=False):  # ids [B,T] -> [B,T,d]
        x = self.table(decoder)(ids) * self.scale + self.pos[start:start + ids.shape[1]]
        ln = getattr(self.model.decoder if decoder else self.model.encoder, "layernorm_embedding", None)
        if ln is not None:
            x = ln(x)
        return F.dropout(x, self.c["dropout"], self.training)

    def logits(self, h):  # [..., d] -> [..., V]
        if getattr(self, "q8_head", None) is not None:             # quantize_int8()
            return linear_q8(h, *self.q8_head, self.final_logits_bias[0])
        head = self.lm_head.weight if hasattr(self, "lm_head") else self.table(True).weight
        return F.linear(h, head) + self.final_logits_bias[0]

    def logprobs(self, logits):
        """log-softmax with pad removed from the normalizer (never generated)."""
        logits = logits.float().clone()
        logits[..., self.pad] = -math.inf
        return F.log_softmax(logits, dim=-1)

    @staticmethod
    def key_mask(src_mask):  # [B,S] 1/0 -> additive [B,1,1,S]
        return ((1.0 - src_mask[:, None, None, :].float()) * NEG)

    def encode(self, src, src_mask, capture=None):
        """src [B,S] ids, src_mask [B,S] -> encoder output [B,S,d]."""
        h, m = self.embed(src), self.key_mask(src_mask)
        for layer in self.model.encoder.layers:
            h, w = layer(h, m)
            if capture is not None:
                capture["encoder"].append(w)
        return h

    def cross_kv(self, enc):
        return [layer.encoder_attn.kv(enc) for layer in self.model.decoder.layers]

    def decode_full(self, tgt_in, enc, src_mask, capture=None):
        """Teacher-forced pass: tgt_in [B,T] (starting with pad) -> logits [B,T,V], causal mask."""
        T = tgt_in.shape[1]
        causal = torch.triu(torch.full((T, T), NEG), diagonal=1)[None, None]
        cm = self.key_mask(src_mask)
        h = self.embed(tgt_in, decoder=True)
        for layer, (ck, cv) in zip(self.model.decoder.layers, self.cross_kv(enc)):
            k, v = layer.self_attn.kv(h)
            h, ws, wc = layer(h, k, v, causal, ck, cv, cm)
            if capture is not None:
                capture["decoder"].append(ws); capture["cross"].append(wc)
        return self.logits(h)

    def forward(self, src, src_mask, tgt_in):
        return self.decode_full(tgt_in, self.encode(src, src_mask), src_mask)

    # ---- incremental decoding -------------------------------------------
    def new_cache(self, enc):
        return {"self": [None] * len(self.model.decoder.layers), "cross": self.cross_kv(enc)}

    def step(self, tok, t, cache, src_mask):
        """tok [B] at position t; appends this position's K/V to the cache -> logits [B,V]."""
        h = self.embed(tok[:, None], start=t, decoder=True)
        cm = self.key_mask(src_mask)
        for i, layer in enumerate(self.model.decoder.layers):
            k, v = layer.self_attn.kv(h)
            if cache["self"][i] is not None:
                k = torch.cat([cache["self"][i][0], k], dim=2); v = torch.cat([cache["self"][i][1], v], dim=2)
            cache["self"][i] = (k, v)
            ck, cv = cache["cross"][i]
            h, _, _ = layer(h, k, v, None, ck, cv, cm)   # one query sees all cached keys: no causal mask needed
        return self.logits(h[:, 0])

    @staticmethod
    def reorder(cache, idx):
        cache["self"] = [(k[idx], v[idx]) for k, v in cache["self"]]
        cache["cross"] = [(k[idx], v[idx]) for k, v in cache["cross"]]

    @torch.no_grad()
    def greedy(self, src, src_mask, max_length):
        """Batch greedy decoding. Returns a list of generated id lists (eos included when produced)."""
        B = src.shape[0]
        enc = self.encode(src, src_mask)
        cache = self.new_cache(enc)
        tok = torch.full((B,), self.pad, dtype=torch.long)
        out = [[] for _ in range(B)]
        done = [False] * B
        for t in range(max_length - 1):
            lg = self.step(tok, t, cache, src_mask).float()
            lg[:, self.pad] = -math.inf
            if t + 1 == max_length - 1:              # forced eos on the last step
                lg[:] = -math.inf; lg[:, self.eos] = 0
            tok = lg.argmax(-1)
            for b in range(B):
                if not done[b]:
                    out[b].append(int(tok[b]))
                    done[b] = int(tok[b]) == self.eos
            if all(done):
                break
            tok = torch.where(torch.tensor(done), torch.full_like(tok, self.pad), tok)
        return out

    @torch.no_grad()
    def beam(self, src_ids, num_beams, max_length, length_penalty=1.0):
        """Beam search for one sentence, HF v4.50+ rules (early_stopping=False).
        Returns the finished hypotheses [(score, ids)], best first."""
        Bm, K = num_beams, 2 * num_beams
        src = torch.tensor([src_ids]); sm = torch.ones_like(src)
        enc = self.encode(src, sm).expand(Bm, -1, -1)
        sm = sm.expand(Bm, -1)
        cache = self.new_cache(enc)
        seqs = [[] for _ in range(Bm)]
        run = torch.full((Bm,), -1e9); run[0] = 0.0
        fin = [(-1e9, None)] * Bm
        unsatisfied = True
        cur = 1
        last = torch.full((Bm,), self.pad, dtype=torch.long)
        while cur < max_length:
            lp = self.logprobs(self.step(last, cur - 1, cache, sm))        # [Bm,V]
            if cur == max_length - 1:
                lp[:] = -math.inf; lp[:, self.eos] = 0
            V = lp.shape[1]
            tot = (lp + run[:, None]).view(-1)
            top, idx = torch.topk(tot, K)
            beam_i, tok_i = idx // V, idx % V
            stop = (tok_i == self.eos) | (cur + 1 >= max_length)
            # finished candidates: only those among the first Bm of the K qualify
            cand = list(fin)
            for r in range(Bm):
                if stop[r] and unsatisfied:
                    sc = float(top[r]) / ((cur + 1 - 1) ** length_penalty)
                    cand.append((sc, seqs[int(beam_i[r])] + [int(tok_i[r])]))
            cand.sort(key=lambda x: -x[0])
            fin = cand[:Bm]
            # next running beams: best Bm of the K that did not stop
            alive = top + stop.float() * -1e9
            run, order = torch.topk(alive, Bm)
            sel = beam_i[order]
            seqs = [seqs[int(beam_i[o])] + [int(tok_i[o])] for o in order]
            last = tok_i[order]
            self.reorder(cache, sel)
            cur += 1
            best_possible = float(run[0]) / ((cur - 1) ** length_penalty)
            all_fin = all(s is not None for _, s in fin)
            worst = min(s for s, _ in fin) if all_fin else -1e9
            unsatisfied = unsatisfied and best_possible > worst
            if not unsatisfied or bool(stop.all()):
                break
        return [(s, ids) for s, ids in fin if ids is not None]
