#!/usr/bin/python3
"""SentencePiece BPE models trained here and their reference encodings, for
tests/test_spm_bpe.c (tests/spm_bpe/README.md says what and why).

    gen_ref.py DIR        (DIR holds train.txt and test.txt from corpus.py)

Models (DIR/<name>.model), trained with python3-sentencepiece 0.1.97:
  nllb   NLLB's and M2M-100's published training settings (fairseq's spm_train
         command: model_type=bpe, character_coverage=0.99995,
         shuffle_input_sentence=true; the ids <unk>=0 <s>=1 </s>=2, nmt_nfkc:
         the defaults), vocab 8000
  m2m    the same settings, vocab 3000
  bytes  byte_fallback=true, user_defined_symbols, split_digits, coverage 0.98, vocab 1500
  ident  normalization identity, no dummy prefix, whitespace as suffix, coverage 0.999, vocab 3000
References (DIR/<name>.jsonl): one JSON object per test.txt line, in order:
  {"ids": spm.encode(line), "dec": spm.decode(ids)}.
Then NLLB- and M2M-100-shaped directories and their wrapped ids (fairseq_dirs).
"""
import json
import os
import sys

import sentencepiece as spm

COMMON = dict(model_type="bpe", character_coverage=0.99995, shuffle_input_sentence=True,
              input_sentence_size=0, num_threads=2, minloglevel=2)
MODELS = {
    "nllb": dict(vocab_size=8000),
    "m2m": dict(vocab_size=3000),
    "bytes": dict(vocab_size=1500, byte_fallback=True, split_digits=True,
                  user_defined_symbols=["<sep>", "http://", "ab"], character_coverage=0.98),
    "ident": dict(vocab_size=3000, character_coverage=0.999, normalization_rule_name="identity", add_dummy_prefix=False,
                  treat_whitespace_as_suffix=True, remove_extra_whitespaces=False),
}


def main():
    d = sys.argv[1]
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(d, "test.txt"), encoding="utf-8") as f:
        lines = f.read().split("\n")[:-1]
    for name, kw in MODELS.items():
        prefix = os.path.join(d, name)
        spm.SentencePieceTrainer.train(input=os.path.join(d, "train.txt"), model_prefix=prefix, **{**COMMON, **kw})
        sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
        with open(prefix + ".jsonl", "w", encoding="utf-8") as out:
            for line in lines:
                ids = sp.encode(line)
                out.write(json.dumps({"ids": ids, "dec": sp.decode(ids)}, ensure_ascii=False) + "\n")
        print(f"{name}: {sp.get_piece_size()} pieces, {len(lines)} lines")
    fairseq_dirs(d, lines)



def fairseq_dirs(d, lines):
    """NLLB- and M2M-100-shaped tokenizer directories on the nllb and m2m
    models, and the wrapped ids of ref_fairseq.py (DIR/{nllb,m2m}-wrap.jsonl:
    {"lang", "tgt", "ids": encode(line, lang), "dec": decode([eos, tgt] + ids)})."""
    import random
    import shutil
    import ref_fairseq as ref

    nd, md = os.path.join(d, "nllb-dir"), os.path.join(d, "m2m-dir")
    for x in (nd, md):
        os.makedirs(x, exist_ok=True)
    shutil.copy(os.path.join(d, "nllb.model"), os.path.join(nd, "sentencepiece.bpe.model"))
    shutil.copy(os.path.join(d, "m2m.model"), os.path.join(md, "sentencepiece.bpe.model"))
    with open(os.path.join(nd, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "NllbTokenizer", "src_lang": None, "tgt_lang": None,
                   "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>",
                   "mask_token": {"__type": "AddedToken", "content": "<mask>", "lstrip": True}}, f, indent=1)
    with open(os.path.join(nd, "special_tokens_map.json"), "w") as f:
        json.dump({"additional_special_tokens": ref.NLLB_CODES, "eos_token": "</s>"}, f, indent=1)
    # fairseq's dict.txt order is by frequency, not the spm order: a shuffled
    # vocabulary, with 5% of the pieces left out (they become <unk>).
    rng = random.Random(100)
    sp = spm.SentencePieceProcessor(model_file=os.path.join(md, "sentencepiece.bpe.model"))
    pieces = [sp.IdToPiece(i) for i in range(len(sp)) if not (sp.IsControl(i) or sp.IsUnknown(i))]
    rng.shuffle(pieces)
    pieces = pieces[: len(pieces) * 95 // 100]
    encoder = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for p in pieces:
        encoder[p] = len(encoder)
    with open(os.path.join(md, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(encoder, f, ensure_ascii=False)
    with open(os.path.join(md, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "M2M100Tokenizer", "language_codes": "m2m100", "num_madeup_words": 8}, f)

    for name, tok, codes in (("nllb", ref.Nllb(os.path.join(nd, "sentencepiece.bpe.model")), ref.NLLB_CODES),
                             ("m2m", ref.M2M100(os.path.join(md, "sentencepiece.bpe.model"), encoder), ref.M2M_CODES)):
        with open(os.path.join(d, name + "-wrap.jsonl"), "w", encoding="utf-8") as out:
            for i, line in enumerate(lines):
                lang, tgt = codes[i % len(codes)], codes[(i * 7 + 3) % len(codes)]
                ids = tok.encode(line, lang)
                tgt_id = tok.encode("", tgt)[0]
                dec = tok.decode([ids[-1], tgt_id] + ids)
                out.write(json.dumps({"lang": lang, "tgt": tgt, "tgt_id": tgt_id, "ids": ids, "dec": dec},
                                     ensure_ascii=False) + "\n")
        print(f"{name}-wrap: {len(lines)} lines")


if __name__ == "__main__":
    main()
