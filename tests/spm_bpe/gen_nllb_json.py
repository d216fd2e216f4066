#!/usr/bin/python3
"""NLLB tokenizer.json directories (NllbTokenizerFast's save, no
sentencepiece.bpe.model) written from the nllb BPE model trained by
gen_ref.py, following transformers' convert_slow_tokenizer.NllbConverter (an
SpmConverter; src/transformers/convert_slow_tokenizer.py, read at commit
00111b31 of huggingface/transformers), and a legacy_behaviour directory, for
tests/test_spm_bpe.c (tests/spm_bpe/README.md).

    gen_nllb_json.py DIR        (DIR holds nllb.model and test.txt)

  DIR/nllb-json-v4/   the layout of the files on the hub (transformers 4.x,
                      tokenizers < 0.14): normalizer Sequence[Precompiled,
                      Replace(Regex " {2,}", " ")], Metaspace(add_prefix_space
                      true) pre-tokenizer and decoder, merges "a b"
  DIR/nllb-json-v5/   the converter read: Sequence[Precompiled, Strip(right),
                      Replace(Regex " {2,}", "\u2581")], Metaspace(prepend_scheme
                      "always", split true), merges ["a", "b"]
  both: model BPE over NllbConverter.vocab (<s> <pad> </s> <unk> = 0..3, spm
  pieces 3.. at id + 1), unk "<unk>", fuse_unk true, byte_fallback false,
  merges from the spm vocabulary (every split of a piece into two pieces,
  ordered by the merged piece's spm id, then the halves' ids: generate_merges);
  added tokens <s> <pad> </s> <unk>, the 202 codes, <mask> (lstrip); the
  post-processor TemplateProcessing "eng_Latn $A </s>".
  DIR/nllb-legacy-dir/ the spm directory with legacy_behaviour true, and
  DIR/nllb-legacy-wrap.jsonl its ids by ref_fairseq.py (pieces + [</s>, code]).
"""
import base64
import json
import os
import shutil
import sys

import sentencepiece as spm


def field(buf, want):
    """The bytes of the first length-delimited protobuf field number want."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            _, i = varint(buf, i)
        elif wt == 1:
            i += 8
        elif wt == 5:
            i += 4
        elif wt == 2:
            n, i = varint(buf, i)
            if num == want:
                return buf[i:i + n]
            i += n
        else:
            raise ValueError("wire type %d" % wt)
    return b""


def varint(buf, i):
    v = s = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << s
        s += 7
        if not b & 0x80:
            return v, i


def tokenizer_json(model_file, codes, form):
    sp = spm.SentencePieceProcessor(model_file=model_file)
    with open(model_file, "rb") as f:
        proto = f.read()
    charsmap = field(field(proto, 3), 2)           # ModelProto.normalizer_spec.precompiled_charsmap
    n = len(sp)
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for i in range(3, n):
        vocab[sp.IdToPiece(i)] = i + 1
    spm_vocab = {sp.IdToPiece(i): i for i in range(n)}
    merges = []
    for piece, pid in spm_vocab.items():
        local = [(piece[:k], piece[k:]) for k in range(1, len(piece))
                 if piece[:k] in spm_vocab and piece[k:] in spm_vocab]
        local.sort(key=lambda x: (spm_vocab[x[0]], spm_vocab[x[1]]))
        merges.extend((pid, l, r) for l, r in local)
    merges.sort(key=lambda m: m[0])
    merges = [f"{l} {r}" if form == "v4" else [l, r] for _, l, r in merges]
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for t, i in vocab.items() if i < 4]
    for i, c in enumerate(codes + ["<mask>"]):
        added.append({"id": n + 1 + i, "content": c, "single_word": False, "lstrip": c == "<mask>", "rstrip": False,
                      "normalized": False, "special": True})
    b64 = base64.b64encode(charsmap).decode()
    if form == "v4":
        norm = [{"type": "Precompiled", "precompiled_charsmap": b64},
                {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]
        meta = {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True}
    else:
        norm = [{"type": "Precompiled", "precompiled_charsmap": b64},
                {"type": "Strip", "strip_left": False, "strip_right": True},
                {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": "\u2581"}]
        meta = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}
    eng, eos = n + 1 + codes.index("eng_Latn"), 2
    tmpl = lambda seq: [{"SpecialToken": {"id": "eng_Latn", "type_id": 0}}] + \
        [{"Sequence": {"id": s, "type_id": 0}} for s in seq] + [{"SpecialToken": {"id": "</s>", "type_id": 0}}]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": norm},
        "pre_tokenizer": meta,
        "post_processor": {"type": "TemplateProcessing", "single": tmpl("A"), "pair": tmpl("AB"),
                           "special_tokens": {"eng_Latn": {"id": "eng_Latn", "ids": [eng], "tokens": ["eng_Latn"]},
                                              "</s>": {"id": "</s>", "ids": [eos], "tokens": ["</s>"]}}},
        "decoder": dict(meta),
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": False, "vocab": vocab,
                  "merges": merges},
    }


def main():
    d = sys.argv[1]
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import ref_fairseq as ref
    model = os.path.join(d, "nllb.model")
    cfg = {"tokenizer_class": "NllbTokenizerFast", "src_lang": "eng_Latn", "tgt_lang": None,
           "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>", "sep_token": "</s>",
           "cls_token": "<s>", "mask_token": {"__type": "AddedToken", "content": "<mask>", "lstrip": True},
           "additional_special_tokens": ref.NLLB_CODES, "legacy_behaviour": False, "model_max_length": 1024}
    for form in ("v4", "v5"):
        out = os.path.join(d, "nllb-json-" + form)
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tokenizer_json(model, ref.NLLB_CODES, form), f, ensure_ascii=False)
        with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
            json.dump(cfg, f, indent=1)
        with open(os.path.join(out, "special_tokens_map.json"), "w") as f:
            json.dump({"additional_special_tokens": ref.NLLB_CODES, "eos_token": "</s>"}, f, indent=1)
    ld = os.path.join(d, "nllb-legacy-dir")
    os.makedirs(ld, exist_ok=True)
    shutil.copy(model, os.path.join(ld, "sentencepiece.bpe.model"))
    with open(os.path.join(ld, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "NllbTokenizer", "legacy_behaviour": True}, f, indent=1)
    with open(os.path.join(d, "test.txt"), encoding="utf-8") as f:
        lines = f.read().split("\n")[:-1]
    tok = ref.Nllb(model, legacy=True)
    codes = ref.NLLB_CODES
    with open(os.path.join(d, "nllb-legacy-wrap.jsonl"), "w", encoding="utf-8") as out:
        for i, line in enumerate(lines):
            lang, tgt = codes[i % len(codes)], codes[(i * 7 + 3) % len(codes)]
            ids = tok.encode(line, lang)
            tgt_id = tok.lang_code_to_id[tgt]
            out.write(json.dumps({"lang": lang, "tgt": tgt, "tgt_id": tgt_id, "ids": ids,
                                  "dec": tok.decode([2, tgt_id] + ids)}, ensure_ascii=False) + "\n")
    print(f"nllb-json-v4, nllb-json-v5, nllb-legacy-wrap: {len(lines)} lines")


if __name__ == "__main__":
    main()
