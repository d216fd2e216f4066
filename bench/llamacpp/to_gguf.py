#!/usr/bin/python3
"""to_gguf.py GGUF_PY MODEL_DIR OUT.gguf: a Hugging Face checkpoint of
gen_models.py (config.json, model.safetensors, tokenizer.json,
tokenizer_config.json) to an F32 GGUF, written with llama.cpp's own gguf-py
(GGUF_PY = <llama.cpp source>/gguf-py), for llama-server.  F16 and Q8_0 are
then made from it by llama.cpp's llama-quantize.

Why not convert_hf_to_gguf.py: it imports `transformers` (AutoConfig, at
module level in conversion/base.py) and `torch`, and reads tokenizers with
transformers' AutoTokenizer; neither package can be installed here (no PyPI;
Debian has no transformers).  So this writes what the converter writes for
these three classes, read from its source at the pinned commit
(conversion/base.py TextModel.set_gguf_parameters, conversion/llama.py
LlamaModel, conversion/qwen.py Qwen2Model/Qwen3Model, conversion/gemma.py
Gemma3Model):
  - hyperparameters: block_count, context_length, embedding_length,
    feed_forward_length, head_count, head_count_kv, rope.freq_base,
    layer_norm_rms_epsilon, key/value_length (where the config has head_dim),
    file_type; llama: vocab_size, rope.dimension_count; gemma3: the sliding
    window, rope.freq_base_swa (rope_local_base_freq);
  - tensors renamed by gguf-py's own TensorNameMap; llama: q_proj and k_proj
    rows permuted back to the interleaved RoPE layout (LlamaModel.permute);
    gemma3: 1 added to every *norm.weight (Gemma3RMSNorm's 1 + w), the
    embedding cut to the tokenizer's ids;
  - vocabularies from tokenizer.json (not AutoTokenizer): Llama 2 and Gemma 3 as
    SentencePiece ("llama"; a token's score minus the rank of the first merge
    that makes it, the order HF's BPE merges in; <0xNN> BYTE, special added
    tokens CONTROL, <unk> UNKNOWN; Gemma 3 without the space prefix, as the
    converter sets it), Qwen3 as "gpt2" with pre-tokenizer "qwen2", padded
    with [PADn] to vocab_size; special ids, add_bos and merges by gguf-py's
    SpecialVocab (it reads tokenizer.json / tokenizer_config.json itself).
The check that this is right is the benchmark's: llama-server's greedy F32
continuation of a prompt equals mtserve's F32 one, and both count the same
prompt tokens (bench/llamacpp_bench.py prints both).
"""
import json
import os
import sys

import numpy as np


def read_safetensors(path):
    """name -> float32 array (BF16/F16/F32), through a memory map."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        head = json.loads(f.read(n))
    base = 8 + n
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    out = {}
    for name, t in head.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        buf = raw[base + a:base + b]
        if t["dtype"] == "BF16":
            v = (buf.view("<u2").astype(np.uint32) << 16).view(np.float32)
        elif t["dtype"] == "F16":
            v = buf.view("<f2").astype(np.float32)
        else:
            v = np.array(buf.view("<f4"))
        out[name] = v.reshape(t["shape"])
    return out


def merge_scores(model):
    """token -> -(rank of the first merge that makes it)."""
    score = {}
    for rank, m in enumerate(model.get("merges", [])):
        a, b = m.split(" ", 1) if isinstance(m, str) else m
        score.setdefault(a + b, -float(rank))
    return score


def vocab_spm(gguf, w, tj, n_vocab, add_space_prefix):
    model = tj["model"]
    inv = {i: t for t, i in model["vocab"].items()}
    added = {a["id"]: a for a in tj["added_tokens"]}
    for i, a in added.items():
        inv.setdefault(i, a["content"])
    score = merge_scores(model)
    floor = -float(len(model.get("merges", [])) + 1)
    toks, scores, types = [], [], []
    for i in range(n_vocab):
        t = inv.get(i, f"[PAD{i}]")
        if t == model.get("unk_token", "<unk>"):
            ty = gguf.TokenType.UNKNOWN
        elif i in added and added[i].get("special"):
            ty = gguf.TokenType.CONTROL
        elif len(t) == 6 and t.startswith("<0x") and t.endswith(">"):
            ty = gguf.TokenType.BYTE
        elif i in added:
            ty = gguf.TokenType.USER_DEFINED
        elif i not in inv:
            ty = gguf.TokenType.UNUSED
        else:
            ty = gguf.TokenType.NORMAL
        toks.append(t)
        scores.append(0.0 if ty in (gguf.TokenType.CONTROL, gguf.TokenType.UNKNOWN) else score.get(t, floor))
        types.append(ty)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(toks)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_add_space_prefix(add_space_prefix)


def vocab_gpt2(gguf, w, tj, n_vocab, pre):
    inv = {i: t for t, i in tj["model"]["vocab"].items()}
    added = {a["id"]: a for a in tj["added_tokens"]}
    toks, types = [], []
    for i in range(n_vocab):
        if i in added:
            toks.append(added[i]["content"])
            types.append(gguf.TokenType.CONTROL if added[i].get("special") else gguf.TokenType.USER_DEFINED)
        elif i in inv:
            toks.append(inv[i])
            types.append(gguf.TokenType.NORMAL)
        else:
            toks.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(toks)
    w.add_token_types(types)


def permute(x, n_head):
    """LlamaModel.permute: HF's rotate_half rows back to interleaved pairs."""
    return x.reshape(n_head, 2, x.shape[0] // n_head // 2, *x.shape[1:]).swapaxes(1, 2).reshape(x.shape)


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    sys.path.insert(0, sys.argv[1])
    import gguf
    src, dst = sys.argv[2], sys.argv[3]
    cfg = json.load(open(os.path.join(src, "config.json")))
    tj = json.load(open(os.path.join(src, "tokenizer.json"), encoding="utf-8"))
    mt = cfg["model_type"]
    arch = {"llama": gguf.MODEL_ARCH.LLAMA, "qwen3": gguf.MODEL_ARCH.QWEN3,
            "gemma3_text": gguf.MODEL_ARCH.GEMMA3}[mt]
    L, H, KV = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    w = gguf.GGUFWriter(dst, gguf.MODEL_ARCH_NAMES[arch])
    w.add_name(os.path.basename(os.path.normpath(src)) + " (random weights)")
    w.add_block_count(L)
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(H)
    w.add_head_count_kv(KV)
    w.add_rope_freq_base(float(cfg["rope_theta"]))
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    if "head_dim" in cfg:
        w.add_key_length(cfg["head_dim"])
        w.add_value_length(cfg["head_dim"])
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    n_vocab = cfg["vocab_size"]
    if mt == "llama":
        w.add_vocab_size(n_vocab)
        w.add_rope_dimension_count(cfg.get("head_dim") or cfg["hidden_size"] // H)
        vocab_spm(gguf, w, tj, n_vocab, True)
    elif mt == "qwen3":
        vocab_gpt2(gguf, w, tj, n_vocab, "qwen2")
    else:
        w.add_rope_freq_base_swa(float(cfg["rope_local_base_freq"]))
        w.add_sliding_window(cfg["sliding_window"])
        n_real = len(tj["model"]["vocab"]) + len(tj["added_tokens"])     # Gemma3Model.modify_tensors
        n_vocab = min(n_vocab, n_real)
        vocab_spm(gguf, w, tj, n_vocab, False)
    gguf.SpecialVocab(src, load_merges=(mt == "qwen3"), n_vocab=n_vocab).add_to_gguf(w)

    tmap = gguf.get_tensor_name_map(arch, L)
    for name, t in read_safetensors(os.path.join(src, "model.safetensors")).items():
        if mt == "llama" and name.endswith("q_proj.weight"):
            t = permute(t, H)
        elif mt == "llama" and name.endswith("k_proj.weight"):
            t = permute(t, KV)
        if mt == "gemma3_text" and name.endswith("norm.weight"):
            t = t + np.float32(1.0)
        if mt == "gemma3_text" and "embed_tokens" in name:
            t = t[:n_vocab]
        new = tmap.get_name(name, try_suffixes=(".weight", ".bias"))
        if new is None:
            raise SystemExit(f"no GGUF name for {name}")
        w.add_tensor(new, np.ascontiguousarray(t, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()
    print(f"{dst}: {mt}, {L} layers, vocabulary {n_vocab}", flush=True)


if __name__ == "__main__":
    main()
