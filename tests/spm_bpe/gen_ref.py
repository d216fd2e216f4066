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


if __name__ == "__main__":
    main()
