#!/usr/bin/python3
"""Write the Marian release fixtures that tests/test_marian.c reads.

Run from the repository root with Debian's python3 (numpy, yaml):

    /usr/bin/python3 models/recipe/marian_fixtures.py

Writes tests/fixtures/marian/ (format: tests/fixtures/marian/README.md):
  joint/       an OPUS-MT-train style release: decoder.yml, one joint vocabulary
               (every piece double-quoted, ids in `sort -u` order as that recipe
               numbers them), tied embeddings, swish, model.yml with sequences
               indented under their key
  separate/    no decoder.yml, *src.vocab.yml + *trg.vocab.yml written as
               marian-vocab / yaml-cpp do (plain where YAML allows, so pieces such
               as 1 or true are plain), untied output layer, relu, embedding layer
               norm ("nd"), a decoder FFN size of its own, model.yml with
               sequences at their key's indentation
  compressed.npz   a savez_compressed archive (must be refused)
and the seeds of the fuzz targets: tests/fuzz/corpus/npz/ (tiny Marian models
with dim-vocabs [16, 16], the vocabulary size fuzz_npz.c's release uses) and
tests/fuzz/corpus/yaml/ (model.yml in both list styles, decoder.yml, both
vocabulary styles, flow collections and escapes).
Each model directory has expected.json: the Hugging Face config the converter's
rules give, both vocabularies with <pad> added, and for every tensor its
Hugging Face name, shape, transposition and a few values indexed [out][in].
Random values come from a fixed seed; the .npz is written member by member
(STORED) as Marian's cnpy does, special:model.yml as '<i1' characters with a
final NUL.
"""
import io, json, os, shutil, zipfile

import numpy as np
import yaml

OUT = "tests/fixtures/marian"
FUZZ = "tests/fuzz/corpus"
SPM = "tests/fixtures/tokenizer/spm"
SEED = 20241123
D, HEADS, FFN = 8, 2, 12

# Pieces a real vocabulary can hold (target labels, punctuation) that YAML
# must quote, or that a YAML reader would otherwise type as bool/int/null.
HARD = ['"', "'", ":", "#", "- ", "-", "?", "?x", "-:", "true", "false", "True", "1", "007", "1.5", "-1",
        "0x10", ".inf", "null", "Null", "~", "yes", "No", "[", "]", "{", "}", ",", "&a", "*a", "!a", "|", ">",
        "%", "@", "`", "a: b", "a #b", "a#b", " lead", "trail ", "\\", "back\\slash", "it's", '"q"', "日本",
        "é", ">>fra<<"]


# ---- YAML writing (the two styles found in releases) ----------------------------

INDICATORS = set("-?:,[]{}#&*!|>'\"%@`")


def plain_ok(s):
    """Would yaml-cpp's emitter write s plain?  (It quotes only what would not
    read back as the same characters: null words, indicators, ': ', ' #'.)"""
    if not s or s in ("~", "null", "Null", "NULL"):
        return False
    if s[0] in INDICATORS and not (s[0] in "-?:" and len(s) > 1 and s[1] != " "):
        return False
    if s[0] == " " or s[-1] in " :" or ": " in s or " #" in s or "\t" in s:
        return False
    return all(ord(c) >= 0x20 and ord(c) != 0x7F for c in s)


def dquote(s):
    out = []
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif c == "\t":
            out.append("\\t")
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append("\\x%02x" % ord(c))
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def yamlcpp_scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return v if plain_ok(v) else dquote(v)


def emit_config(items, seq_indent):
    """A flat mapping as Marian writes model.yml; lists in block style indented
    seq_indent spaces under their key, empty lists as '[]' on the next line."""
    lines = []
    for key, v in items:
        if isinstance(v, list):
            lines.append(key + ":")
            pad = " " * seq_indent
            if not v:
                lines.append("  []")
            for x in v:
                lines.append(pad + "- " + yamlcpp_scalar(x))
        else:
            lines.append(key + ": " + yamlcpp_scalar(v))
    return "\n".join(lines) + "\n"


def emit_vocab(vocab, style):
    """OPUS-MT-train: every piece double-quoted (its sed escapes \\ and ");
    marian-vocab: yaml-cpp's plain-when-possible."""
    q = dquote if style == "opus" else yamlcpp_scalar
    return "".join("%s: %d\n" % (q(p), i) for p, i in sorted(vocab.items(), key=lambda x: x[1]))


# ---- vocabularies ------------------------------------------------------------------

def spm_pieces(path):
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=path)
    return [sp.id_to_piece(i) for i in range(sp.get_piece_size())]


def opus_vocab(pieces):
    """OPUS-MT-train: cat src.vocab trg.vocab | sort -u | nl -v 0 (byte order)."""
    uniq = sorted(set(pieces), key=lambda s: s.encode("utf-8"))
    return {p: i for i, p in enumerate(uniq)}


def marian_vocab(pieces):
    """marian-vocab: </s> 0, <unk> 1, then the pieces."""
    out = {"</s>": 0, "<unk>": 1}
    for p in pieces:
        out.setdefault(p, len(out))
    return out


# ---- model.yml -----------------------------------------------------------------------

def marian_config(n_src, n_tgt, **over):
    """model.yml as Marian v1.9 writes it (alphabetical: yaml-cpp emits its std::map)."""
    c = {
        "after-batches": 0, "after-epochs": 0, "allow-unk": False, "beam-size": 12,
        "bert-class-symbol": "[CLS]", "bert-mask-symbol": "[MASK]", "bert-sep-symbol": "[SEP]",
        "bert-masking-fraction": 0.15, "clip-norm": 5, "cost-scaling": [], "cost-type": "ce-mean-words",
        "data-weighting": "", "data-weighting-type": "sentence", "dec-cell": "gru", "dec-cell-base-depth": 2,
        "dec-cell-high-depth": 1, "dec-depth": 1, "devices": [0, 1], "dim-emb": D, "dim-rnn": 1024,
        "dim-vocabs": [n_src, n_tgt], "early-stopping": 10, "enc-cell": "gru", "enc-cell-depth": 1,
        "enc-depth": 1, "enc-type": "bidirectional", "exponential-smoothing": 0.0001, "input-types": [],
        "label-smoothing": 0.1, "layer-normalization": False, "learn-rate": 0.0003, "lemma-dim-emb": 0,
        "log": "/work/train.log", "logical-epoch": ["1e", 0], "lr-decay-inv-sqrt": [16000],
        "lr-decay-strategy": "epoch+stalled", "lr-warmup": 16000, "max-length": 500, "max-length-factor": 3,
        "maxi-batch-sort": "trg", "mini-batch-fit": True, "model": "/work/model/model.npz",
        "optimizer-params": [0.9, 0.98, 1e-09], "output-omit-bias": False,
        "precision": ["float32", "float32", "float32"], "right-left": False, "seed": 1111,
        "sentencepiece-options": "", "skip": False, "tempdir": "/tmp", "tied-embeddings": False,
        "tied-embeddings-all": True, "tied-embeddings-src": False,
        "train-sets": ["/work/data/train.src.gz", "/work/data/train.trg.gz"],
        "transformer-aan-activation": "swish", "transformer-aan-depth": 2, "transformer-aan-nogate": False,
        "transformer-decoder-autoreg": "self-attention", "transformer-depth-scaling": False,
        "transformer-dim-aan": 2048, "transformer-dim-ffn": FFN, "transformer-dropout": 0.1,
        "transformer-dropout-attention": 0, "transformer-ffn-activation": "swish", "transformer-ffn-depth": 2,
        "transformer-guided-alignment-layer": "last", "transformer-heads": HEADS,
        "transformer-no-projection": False, "transformer-postprocess": "dan",
        "transformer-postprocess-emb": "d", "transformer-preprocess": "", "transformer-tied-layers": [],
        "transformer-train-position-embeddings": False, "type": "transformer", "ulr": False,
        "ulr-dim-emb": 0, "valid-metrics": ["perplexity", "bleu-detok"],
        "version": "v1.9.56 37b7d1f5 2020-06-26 10:07:21 +0100", "vocabs": ["/work/vocab.yml"] * 2,
        "workspace": 24000,
    }
    c.update(over)
    return sorted(c.items())


# ---- weights -------------------------------------------------------------------------

LAYER = [  # Marian suffix, HF suffix, kind, in, out ('d' model, 'f' ffn), decoder only
    ("self_Wq", "self_attn.q_proj.weight", "mat", "d", "d", 0), ("self_bq", "self_attn.q_proj.bias", "vec", 0, "d", 0),
    ("self_Wk", "self_attn.k_proj.weight", "mat", "d", "d", 0), ("self_bk", "self_attn.k_proj.bias", "vec", 0, "d", 0),
    ("self_Wv", "self_attn.v_proj.weight", "mat", "d", "d", 0), ("self_bv", "self_attn.v_proj.bias", "vec", 0, "d", 0),
    ("self_Wo", "self_attn.out_proj.weight", "mat", "d", "d", 0),
    ("self_bo", "self_attn.out_proj.bias", "vec", 0, "d", 0),
    ("self_Wo_ln_scale", "self_attn_layer_norm.weight", "ln", 0, "d", 0),
    ("self_Wo_ln_bias", "self_attn_layer_norm.bias", "vec", 0, "d", 0),
    ("context_Wq", "encoder_attn.q_proj.weight", "mat", "d", "d", 1),
    ("context_bq", "encoder_attn.q_proj.bias", "vec", 0, "d", 1),
    ("context_Wk", "encoder_attn.k_proj.weight", "mat", "d", "d", 1),
    ("context_bk", "encoder_attn.k_proj.bias", "vec", 0, "d", 1),
    ("context_Wv", "encoder_attn.v_proj.weight", "mat", "d", "d", 1),
    ("context_bv", "encoder_attn.v_proj.bias", "vec", 0, "d", 1),
    ("context_Wo", "encoder_attn.out_proj.weight", "mat", "d", "d", 1),
    ("context_bo", "encoder_attn.out_proj.bias", "vec", 0, "d", 1),
    ("context_Wo_ln_scale", "encoder_attn_layer_norm.weight", "ln", 0, "d", 1),
    ("context_Wo_ln_bias", "encoder_attn_layer_norm.bias", "vec", 0, "d", 1),
    ("ffn_W1", "fc1.weight", "mat", "d", "f", 0), ("ffn_b1", "fc1.bias", "vec", 0, "f", 0),
    ("ffn_W2", "fc2.weight", "mat", "f", "d", 0), ("ffn_b2", "fc2.bias", "vec", 0, "d", 0),
    ("ffn_ffn_ln_scale", "final_layer_norm.weight", "ln", 0, "d", 0),
    ("ffn_ffn_ln_bias", "final_layer_norm.bias", "vec", 0, "d", 0),
]


def make_weights(rng, m):
    """Marian name -> (array as Marian stores it, HF name, HF array)."""
    out = {}

    def add(marian, hf, kind, rows, cols):
        if kind == "mat":                       # Marian [in][out]; HF Linear [out][in]
            a = rng.standard_normal((rows, cols)).astype(np.float32) * 0.3
            out[marian] = (a, hf, a.T)
        elif kind == "emb":                     # [n][d] in both
            a = rng.standard_normal((rows, cols)).astype(np.float32) * 0.3
            out[marian] = (a, hf, a)
        else:                                   # Marian [1][n]; HF [n]
            a = rng.standard_normal((1, cols)).astype(np.float32) * 0.1 + (1.0 if kind == "ln" else 0.0)
            out[marian] = (a.astype(np.float32), hf, a[0].astype(np.float32))

    d = m.get("d", D)
    if m["share"]:
        add("Wemb", "model.shared.weight", "emb", m["n_src"], d)
    else:
        add("encoder_Wemb", "model.encoder.embed_tokens.weight", "emb", m["n_src"], d)
        add("decoder_Wemb", "model.decoder.embed_tokens.weight", "emb", m["n_tgt"], d)
    if not m["tie"]:
        add("decoder_ff_logit_out_W", "lm_head.weight", "mat", d, m["n_tgt"])
    add("decoder_ff_logit_out_b", "final_logits_bias", "vec", 0, m["n_tgt"])
    if m["norm_emb"]:
        for side in ("encoder", "decoder"):
            add(side + "_emb_ln_scale_pre", "model.%s.layernorm_embedding.weight" % side, "ln", 0, d)
            add(side + "_emb_ln_bias_pre", "model.%s.layernorm_embedding.bias" % side, "vec", 0, d)
    for side, ffn in (("encoder", m["enc_ffn"]), ("decoder", m["dec_ffn"])):
        dim = {"d": d, "f": ffn}
        for suffix, hf, kind, i, o, dec_only in LAYER:
            if dec_only and side == "encoder":
                continue
            add("%s_l1_%s" % (side, suffix), "model.%s.layers.0.%s" % (side, hf), kind,
                dim.get(i, 1), dim[o])
    return out


def npy_bytes(a):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.ascontiguousarray(a), version=(1, 0))
    return buf.getvalue()


def cnpy_chars(text):
    """special:model.yml as Marian's cnpy writes it: '<i1' characters, NUL-terminated."""
    data = text.encode("utf-8") + b"\0"
    header = "{'descr': '<i1', 'fortran_order': False, 'shape': (%d,), }" % len(data)
    header += " " * (16 - (10 + len(header) + 1) % 16) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + data


def stored(name):
    """A member with a fixed date, so that the fixtures are byte-identical on every run."""
    return zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))


def write_npz(path, weights, model_yml):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        members = {k: npy_bytes(v[0]) for k, v in weights.items()}
        members["special:model.yml"] = cnpy_chars(model_yml)
        for name in sorted(members):            # cnpy writes its std::map in order
            z.writestr(stored(name + ".npy"), members[name])


def probes(a, rng):
    """A few [index..., value] of the HF array: the corners and two random cells."""
    idx = [tuple(0 for _ in a.shape), tuple(s - 1 for s in a.shape)]
    for _ in range(2):
        idx.append(tuple(int(rng.integers(s)) for s in a.shape))
    return [list(i) + [float(a[i])] for i in idx]


# ---- the Hugging Face view (the converter's rules) -------------------------------------

def hf_config(m, tgt_vocab, beam):
    pad = m["n_tgt"]
    eos = tgt_vocab["</s>"]
    c = {
        "model_type": "marian", "architectures": ["MarianMTModel"], "d_model": D,
        "encoder_layers": 1, "decoder_layers": 1, "encoder_attention_heads": HEADS,
        "decoder_attention_heads": HEADS, "encoder_ffn_dim": m["enc_ffn"], "decoder_ffn_dim": m["dec_ffn"],
        "activation_function": m["act"], "vocab_size": m["n_src"] + 1, "decoder_vocab_size": m["n_tgt"] + 1,
        "share_encoder_decoder_embeddings": m["share"], "tie_word_embeddings": m["tie"],
        "normalize_embedding": m["norm_emb"], "scale_embedding": True, "static_position_embeddings": True,
        "max_position_embeddings": max(D, 512), "pad_token_id": pad, "decoder_start_token_id": pad,
        "eos_token_id": eos, "forced_eos_token_id": eos, "bos_token_id": 0, "bad_words_ids": [[pad]],
        "max_length": 512,
    }
    if beam:
        c["num_beams"] = beam
    return c


def write_model(name, m, src_vocab, tgt_vocab, vocab_style, seq_indent, decoder_yml, rng):
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cfg = marian_config(len(src_vocab), len(tgt_vocab), **m["yml"])
    weights = make_weights(rng, m)
    model_file = "opus.spm32k-spm32k.transformer-align.model1.npz.best-perplexity.npz"
    write_npz(os.path.join(d, model_file), weights, emit_config(cfg, seq_indent))
    files = {}
    if m["joint"]:
        files["joint"] = "opus.spm32k-spm32k.vocab.yml"
        vocabs = [(files["joint"], src_vocab)]
    else:
        vocabs = [("opus.spm32k-spm32k.src.vocab.yml", src_vocab), ("opus.spm32k-spm32k.trg.vocab.yml", tgt_vocab)]
    for fname, v in vocabs:
        text = emit_vocab(v, vocab_style)
        # the file must mean what we meant for any YAML reader (BaseLoader: all strings)
        back = yaml.load(text, Loader=yaml.BaseLoader)
        assert back == {p: str(i) for p, i in v.items()}, fname
        with open(os.path.join(d, fname), "w", encoding="utf-8") as f:
            f.write(text)
    if decoder_yml:
        with open(os.path.join(d, "decoder.yml"), "w") as f:
            f.write("models:\n  - %s\nvocabs:\n  - %s\n  - %s\nbeam-size: 6\nnormalize: 0.6\nword-penalty: 0\n"
                    "mini-batch: 16\nmaxi-batch: 100\nmaxi-batch-sort: src\nrelative-paths: true\n"
                    % (model_file, vocabs[0][0], vocabs[-1][0]))
    shutil.copy(os.path.join(SPM, m["spm"][0]), os.path.join(d, "source.spm"))
    shutil.copy(os.path.join(SPM, m["spm"][1]), os.path.join(d, "target.spm"))
    with_pad = lambda v: dict(v, **{"<pad>": len(v)})
    expected = {
        "config": hf_config(m, tgt_vocab, 6 if decoder_yml else 0),
        "joint": m["joint"], "beam_size": 6 if decoder_yml else 0, "normalize": 0.6 if decoder_yml else 0,
        "model_file": model_file, "src_vocab": with_pad(src_vocab), "tgt_vocab": with_pad(tgt_vocab),
        "tensors": [{"marian": k, "hf": hf, "shape": list(a.shape), "transposed": a is not v0 and a.ndim == 2,
                     "probes": probes(a, rng)} for k, (v0, hf, a) in sorted(weights.items())],
    }
    with open(os.path.join(d, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, indent=1)


def main():
    rng = np.random.default_rng(SEED)
    os.makedirs(OUT, exist_ok=True)
    rules = spm_pieces(os.path.join(SPM, "uni-rules.spm"))
    suffix = spm_pieces(os.path.join(SPM, "uni-suffix.spm"))

    joint = opus_vocab(rules + rules + HARD)
    write_model("joint", {"joint": True, "share": True, "tie": True, "norm_emb": False, "act": "swish",
                          "enc_ffn": FFN, "dec_ffn": FFN, "n_src": len(joint), "n_tgt": len(joint),
                          "spm": ("uni-rules.spm", "uni-rules.spm"), "yml": {}},
                joint, joint, "opus", 2, True, rng)

    src = marian_vocab([p for p in rules if p not in ("</s>", "<unk>")] + HARD)
    tgt = marian_vocab([p for p in suffix if p not in ("</s>", "<unk>")] + ["tab\there"])
    yml = {"tied-embeddings-all": False, "transformer-ffn-activation": "relu",
           "transformer-postprocess-emb": "nd", "transformer-decoder-dim-ffn": FFN - 2,
           "transformer-decoder-ffn-depth": 0}
    write_model("separate", {"joint": False, "share": False, "tie": False, "norm_emb": True, "act": "relu",
                             "enc_ffn": FFN, "dec_ffn": FFN - 2, "n_src": len(src), "n_tgt": len(tgt),
                             "spm": ("uni-rules.spm", "uni-suffix.spm"), "yml": yml},
                src, tgt, "marian", 0, False, rng)

    np.savez_compressed(os.path.join(OUT, "compressed.npz"), Wemb=np.zeros((4, D), np.float32))
    print("wrote", OUT)
    write_fuzz_seeds(np.random.default_rng(SEED + 1))


def write_fuzz_seeds(rng):
    """Seeds of tests/fuzz/fuzz_npz.c (whose fixed vocabulary has 16 pieces) and fuzz_yaml.c."""
    out = os.path.join(FUZZ, "npz")
    os.makedirs(out, exist_ok=True)
    for name, m in (("tiny_joint", {"share": True, "tie": True, "norm_emb": False, "yml": {}}),
                    ("tiny_separate", {"share": False, "tie": False, "norm_emb": True,
                                       "yml": {"tied-embeddings-all": False, "transformer-postprocess-emb": "nd",
                                               "transformer-ffn-activation": "relu"}})):
        m.update({"d": 4, "enc_ffn": 4, "dec_ffn": 4, "n_src": 16, "n_tgt": 16})
        cfg = marian_config(16, 16, **dict(m["yml"], **{"dim-emb": 4, "transformer-dim-ffn": 4,
                                                        "transformer-heads": 2}))
        write_npz(os.path.join(out, name), make_weights(rng, m), emit_config(cfg, 2 if m["share"] else 0))
    with zipfile.ZipFile(os.path.join(out, "one_array"), "w", zipfile.ZIP_STORED) as z:
        z.writestr(stored("x.npy"), npy_bytes(np.arange(6, dtype=np.float16).reshape(2, 3)))
    shutil.copy(os.path.join(OUT, "compressed.npz"), os.path.join(out, "compressed"))
    out = os.path.join(FUZZ, "yaml")
    os.makedirs(out, exist_ok=True)
    seeds = {
        "model_yml": emit_config(marian_config(16, 16), 2),
        "model_yml_flat": emit_config(marian_config(16, 16), 0),
        "decoder_yml": open(os.path.join(OUT, "joint", "decoder.yml")).read(),
        "vocab_opus": emit_vocab(opus_vocab(HARD + ["</s>", "<unk>"]), "opus"),
        "vocab_marian": emit_vocab(marian_vocab(HARD + ["tab\there"]), "marian"),
        "flow": "--- # flow and escapes\na: [1, [2, 3], {b: 'c''d', e: }, ]\nf: \"\\x41\\u00e9\\U0001F600\\L\\ \"\n"
                "g:\n- - h\n  - i: ~\n    j: 1.5e-3\n...\n",
    }
    for name, text in seeds.items():
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
