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
  tests/fixtures/tokenizer/spm/char.spm   a tiny CHAR model, which the loader refuses
Only spm/bpe.spm and inputs/hard.txt are read; rerun when they change."""
import os
import subprocess
import sys
import tempfile

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

    def row(b):
        ids, ph, raw = tf.spm_fields(sp, b)
        return [ids, ph, tf.fnv1a64(sp.decode(raw).encode("utf-8"))]
    tf.write_expected("bpe", ["spm", "pieces", "spm_decode"], sets, row)

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

    with tempfile.TemporaryDirectory() as d:
        with open(f"{d}/t.txt", "w") as f:
            f.write("a tiny text for a character model\nwith two lines\n")
        subprocess.run(["spm_train", f"--input={d}/t.txt", f"--model_prefix={d}/c", "--model_type=char",
                        "--vocab_size=25", "--normalization_rule_name=identity", "--minloglevel=2"], check=True)
        os.replace(f"{d}/c.model", f"{OUT}/spm/char.spm")
    print("bpe/hard.txt, bpe/nllb.txt, spm/char.spm written")


if __name__ == "__main__":
    main()
