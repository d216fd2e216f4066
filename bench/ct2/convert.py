#!/usr/bin/python3
"""bench/ct2/convert.py: a Hugging Face MarianMT or M2M-100 / NLLB-200 folder -> a CTranslate2 model folder.

    /usr/bin/python3 bench/ct2/convert.py --ct2-src /work/ct2/src/CTranslate2 \
        --model build/bench-models/en-mg/safetensors-f32 --out build/ct2/en-mg-float32 \
        [--quantization int8] [--force]

The conversion itself is CTranslate2's: its MarianMTLoader or M2M100Loader
(converters/transformers.py, chosen by config.json's model_type "marian" or
"m2m_100") fills a TransformerSpec (specs/), and Converter.convert()
validates, quantizes (--quantization) and writes model.bin, config.json and
shared_vocabulary.json.  What `ct2-transformers-converter --model DIR` would
get from the `transformers` package (a MarianMTModel and a MarianTokenizer,
or an M2M100ForConditionalGeneration and an NllbTokenizer) is given here by
plain objects:

  * every tensor of model.safetensors (F32/F16/BF16 read with numpy, as torch
    tensors) hung on an attribute tree following its dotted name
    ("model.decoder.layers.3.fc1.weight" -> model.model.decoder.layers[3].fc1.weight);
  * the parts transformers computes rather than stores: the encoder's and
    decoder's embed_tokens (= model.shared), embed_positions (Marian's fixed
    sinusoids: sin of the even frequencies in the first half, cos in the second,
    max_position_embeddings rows), lm_head (tied to model.shared, no bias), each
    stack's `config`;
  * a tokenizer with eos/unk tokens and get_vocab() = vocab.json.

M2M-100 / NLLB-200 (issue 49), the same tree with what transformers computes:
  * embed_positions as M2M100SinusoidalPositionalEmbedding holds it: `weights`,
    max_position_embeddings + 2 rows of fairseq's sinusoids (sin of every
    frequency in the first half, cos in the second, log(10000) / (half - 1)
    apart, float32 as torch computes them, the padding row 1 zero) and
    `offset` 2: the loader keeps weights[2:];
  * NllbTokenizer's ids (tokenization_nllb.py): <s> <pad> </s> <unk> = 0-3,
    SentencePiece piece k >= 3 at k + 1, then the language codes
    (special_tokens_map.json's additional_special_tokens, in order) and
    <mask>; the loader pads with "madeupword" tokens to config.vocab_size.
    M2M-100's vocab.json layout is not handled (not benchmarked).

The package's compiled extension is not needed: only its pure-Python converter
and specs are imported from the source tree (--ct2-src).  The `transformers`
and `huggingface_hub` imports of converters/transformers.py are satisfied by
empty stand-in modules (Marian has no GPT-2 Conv1D, the one class it checks for).
"""
import argparse
import json
import os
import struct
import sys
import types

import numpy as np
import torch


class Node(types.SimpleNamespace):
    """An attribute tree node; numeric children are also reachable as a list (`layers`)."""


def tree_of(tensors):
    root = Node()
    for name, t in tensors.items():
        parts = name.split(".")
        node = root
        for p in parts[:-1]:
            key = "_%s" % p if p.isdigit() else p
            if not hasattr(node, key):
                setattr(node, key, Node())
            node = getattr(node, key)
        setattr(node, parts[-1], t)
    return root


def as_list(node):
    """layers._0, layers._1, ... -> [layers._0, layers._1, ...]"""
    idx = sorted(int(k[1:]) for k in vars(node) if k[0] == "_" and k[1:].isdigit())
    assert idx == list(range(len(idx))), "layer indices are not contiguous: %s" % idx
    return [getattr(node, "_%d" % i) for i in idx]


SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": None}


def load_safetensors(path):
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    hlen = struct.unpack("<Q", raw[:8].tobytes())[0]
    header = json.loads(raw[8:8 + hlen].tobytes())
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        buf = raw[8 + hlen + lo:8 + hlen + hi]
        if info["dtype"] == "BF16":   # upper half of a float32
            a = (buf.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
        elif info["dtype"] in SAFETENSORS_DTYPES:
            a = buf.view(SAFETENSORS_DTYPES[info["dtype"]]).astype(np.float32)
        else:
            raise SystemExit("%s: dtype %s not handled" % (name, info["dtype"]))
        out[name] = torch.from_numpy(np.array(a).reshape(info["shape"]))
    return out


def sinusoids(rows, dim):
    """transformers' MarianSinusoidalPositionalEmbedding table."""
    pos = np.arange(rows, dtype=np.float64)[:, None]
    j = np.arange(dim)
    angle = pos / np.power(10000.0, 2 * (j // 2) / dim)[None, :]
    half = (dim + 1) // 2
    table = np.empty((rows, dim), dtype=np.float32)
    table[:, :half] = np.sin(angle[:, 0::2])
    table[:, half:] = np.cos(angle[:, 1::2])
    return torch.from_numpy(table)


def marian_model(folder):
    cfg_json = json.load(open(os.path.join(folder, "config.json")))
    if cfg_json.get("model_type") != "marian":
        raise SystemExit("%s: model_type is %r, not marian" % (folder, cfg_json.get("model_type")))
    if not cfg_json.get("share_encoder_decoder_embeddings", True):
        raise SystemExit("separate source/target embeddings are not handled here")
    config = Node(**cfg_json)
    t = tree_of(load_safetensors(os.path.join(folder, "model.safetensors")))
    tied_stacks(t, config, Node(weight=sinusoids(cfg_json["max_position_embeddings"], cfg_json["d_model"])))
    if hasattr(t, "final_logits_bias"):
        pass                                       # [1, vocab], as in transformers
    else:
        t.final_logits_bias = torch.zeros(1, cfg_json["vocab_size"])

    vocab = json.load(open(os.path.join(folder, "vocab.json")))
    special = {}
    for f in ("special_tokens_map.json", "tokenizer_config.json"):
        p = os.path.join(folder, f)
        if os.path.exists(p):
            for k, v in json.load(open(p)).items():
                if isinstance(v, str):
                    special.setdefault(k, v)
    tokenizer = Node(eos_token=special.get("eos_token", "</s>"), unk_token=special.get("unk_token", "<unk>"),
                     bos_token=None, get_vocab=lambda: dict(vocab))
    return t, tokenizer


def tied_stacks(t, config, pos):
    """The parts of both stacks transformers computes rather than stores."""
    shared = t.model.shared.weight
    for stack in (t.model.encoder, t.model.decoder):
        stack.config = config
        stack.embed_tokens = Node(weight=shared)
        stack.embed_positions = pos
        stack.layers = as_list(stack.layers)
        for layer in stack.layers:                 # HF Linear modules always carry .bias
            for mod in vars(layer).values():
                for sub in [mod] + [v for v in vars(mod).values() if isinstance(v, Node)]:
                    if hasattr(sub, "weight") and not hasattr(sub, "bias"):
                        sub.bias = None
    t.config = config
    t.lm_head = Node(weight=shared, bias=None)


def fairseq_sinusoids(rows, dim, padding_idx=1):
    """transformers' M2M100SinusoidalPositionalEmbedding.get_embedding, in float32 as torch runs it."""
    half = dim // 2
    step = np.float32(np.log(10000.0) / (half - 1))
    freq = np.exp(np.arange(half, dtype=np.float32) * -step)
    angle = np.arange(rows, dtype=np.float32)[:, None] * freq[None, :]
    table = np.concatenate([np.sin(angle), np.cos(angle)], axis=1).astype(np.float32)
    if dim % 2:
        table = np.concatenate([table, np.zeros((rows, 1), np.float32)], axis=1)
    table[padding_idx, :] = 0
    return torch.from_numpy(table)


def m2m100_model(folder):
    import sentencepiece
    cfg_json = json.load(open(os.path.join(folder, "config.json")))
    if cfg_json.get("tokenizer_class", "NllbTokenizer") not in ("NllbTokenizer", "NllbTokenizerFast"):
        raise SystemExit("%s: only NLLB-200's tokenizer layout is handled here" % folder)
    config = Node(**cfg_json)
    t = tree_of(load_safetensors(os.path.join(folder, "model.safetensors")))
    offset = 2
    pos = Node(weights=fairseq_sinusoids(cfg_json["max_position_embeddings"] + offset, cfg_json["d_model"]),
               offset=offset)
    tied_stacks(t, config, pos)

    sp = sentencepiece.SentencePieceProcessor(model_file=os.path.join(folder, "sentencepiece.bpe.model"))
    codes = json.load(open(os.path.join(folder, "special_tokens_map.json")))["additional_special_tokens"]
    tokens = ["<s>", "<pad>", "</s>", "<unk>"] + [sp.IdToPiece(k) for k in range(3, len(sp))] + codes + ["<mask>"]
    assert len(set(tokens)) == len(tokens), "NLLB vocabulary tokens are not unique"
    vocab = {tok: i for i, tok in enumerate(tokens)}
    tokenizer = Node(bos_token="<s>", eos_token="</s>", unk_token="<unk>", unk_token_id=3,
                     convert_ids_to_tokens=lambda i: tokens[i], get_vocab=lambda: dict(vocab),
                     special_tokens_map={"additional_special_tokens": list(codes)})
    return t, tokenizer


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ct2-src", required=True, help="the CTranslate2 source tree (its python/ folder is used)")
    ap.add_argument("--model", required=True, help="Hugging Face MarianMT folder")
    ap.add_argument("--out", required=True, help="CTranslate2 model folder to write")
    ap.add_argument("--quantization", default=None, help="e.g. int8 (default: the weights' own float32)")
    ap.add_argument("--force", action="store_true")
    a = ap.parse_args()

    for name in ("transformers", "huggingface_hub"):
        stub = sys.modules.setdefault(name, types.ModuleType(name))
        if name == "transformers" and not hasattr(stub, "Conv1D"):
            stub.Conv1D = type("Conv1D", (), {})
    sys.path.insert(0, os.path.join(os.path.abspath(a.ct2_src), "python"))
    from ctranslate2.converters.converter import Converter
    from ctranslate2.converters.transformers import M2M100Loader, MarianMTLoader
    from ctranslate2.version import __version__

    model_type = json.load(open(os.path.join(a.model, "config.json"))).get("model_type")
    build, loader = {"marian": (marian_model, MarianMTLoader),
                     "m2m_100": (m2m100_model, M2M100Loader)}.get(model_type, (None, None))
    if build is None:
        raise SystemExit("%s: model_type %r: only marian and m2m_100 are converted here" % (a.model, model_type))
    model, tokenizer = build(a.model)

    class FolderConverter(Converter):
        def _load(self):
            with torch.no_grad():
                return loader()(model, tokenizer)

    out = FolderConverter().convert(a.out, quantization=a.quantization, force=a.force)
    print(json.dumps({"ctranslate2": __version__, "model": a.model, "out": out,
                      "quantization": a.quantization or "float32", "files": sorted(os.listdir(out))}))


if __name__ == "__main__":
    main()
