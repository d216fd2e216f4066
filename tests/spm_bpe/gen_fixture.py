#!/usr/bin/python3
"""The committed BPE fixtures of tests/test_tokenizer.c (fast, no generated
model), from the repository root:

    /usr/bin/python3 tests/spm_bpe/gen_fixture.py

  tests/fixtures/tokenizer/bpe/hard.txt   python3-sentencepiece's ids, pieces and
      decode of spm/bpe.spm (a tiny BPE model) for inputs/hard.txt (3600 hard
      cases), in the format of models/recipe/tok_fixtures.py (README beside them)
  tests/fixtures/tokenizer/bpe/nllb.txt   ref_fairseq.Nllb on spm/bpe.spm: per
      hard case the NLLB source ids for eng_Latn and the decode of
      [</s>, fra_Latn] + those ids ("ids<TAB>decode hash"; "-<TAB>-" for
      malformed UTF-8, which mtserve refuses)
  tests/fixtures/tokenizer/spm/bpe-unused.spm, bpe-unused/hard.txt   bpe.spm with
      every 5th multi-character NORMAL piece made UNUSED, and its expected outputs
  tests/fixtures/tokenizer/spm/char.spm   a tiny CHAR model, which the loader refuses
Only spm/bpe.spm and inputs/hard.txt are read; rerun when they change."""
import os
import sys

sys.path.insert(0, "models/recipe")
sys.path.insert(0, "tests/spm_bpe")
import sentencepiece as spm          # noqa: E402
import tok_fixtures as tf            # noqa: E402
import ref_fairseq as ref            # noqa: E402

OUT = "tests/fixtures/tokenizer"


def main():
    hard = tf.read_lines(f"{OUT}/inputs/hard.txt")
    sets = {"hard": [tf.unescape(line.decode("utf-8")) for line in hard]}
    sp = spm.SentencePieceProcessor(model_file=f"{OUT}/spm/bpe.spm")

    def row(b, sp=sp):
        ids, ph, raw = tf.spm_fields(sp, b)
        return [ids, ph, tf.fnv1a64(sp.decode(raw).encode("utf-8"))]
    tf.write_expected("bpe", ["spm", "pieces", "spm_decode"], sets, row)

    # every 5th multi-character NORMAL piece rewritten to UNUSED: merged, then
    # split back along the pair that made it (spm's rev_merge)
    with open(f"{OUT}/spm/bpe.spm", "rb") as f:
        top = tf.pb_fields(f.read())
    k = 0
    for i, (fld, w, v) in enumerate(top):
        if fld == 1:
            piece = tf.pb_fields(v)
            text = next((x[2] for x in piece if x[0] == 1), b"")
            typ = next((x[2] for x in piece if x[0] == 3), 1)
            if typ == 1 and len(text.decode("utf-8")) > 1 and k % 5 == 0:
                top[i] = (fld, w, tf.pb_join(tf.pb_set(piece, 3, 0, 5)))
            k += typ == 1 and len(text.decode("utf-8")) > 1
    with open(f"{OUT}/spm/bpe-unused.spm", "wb") as f:
        f.write(tf.pb_join(top))
    spu = spm.SentencePieceProcessor(model_file=f"{OUT}/spm/bpe-unused.spm")
    tf.write_expected("bpe-unused", ["spm", "pieces", "spm_decode"], sets, lambda b: row(b, spu))

    nllb = ref.Nllb(f"{OUT}/spm/bpe.spm")
    with open(f"{OUT}/bpe/nllb.txt", "w", encoding="utf-8", newline="\n") as f:
        f.write("# fields: nllb\tnllb_decode\n")
        for b in sets["hard"]:
            try:
                text = b.decode("utf-8")
            except UnicodeDecodeError:           # mtserve refuses it (MT_ERR_INPUT)
                f.write("-\t-\n")
                continue
            ids = nllb.encode(text, "eng_Latn")
            dec = nllb.decode([2, nllb.lang_code_to_id["fra_Latn"]] + ids)
            f.write(tf.ids_field(ids) + "\t" + tf.fnv1a64(dec.encode("utf-8")) + "\n")

    char = tf.train("char", [b"a tiny text for a character model", b"with two lines"], model_type="char",
                    vocab_size=25, normalization_rule_name="identity")      # fixed paths: reproducible
    with open(f"{OUT}/spm/char.spm", "wb") as f:
        f.write(char)
    print("bpe/hard.txt, bpe/nllb.txt, spm/bpe-unused.spm, bpe-unused/hard.txt, spm/char.spm written")


if __name__ == "__main__":
    main()
