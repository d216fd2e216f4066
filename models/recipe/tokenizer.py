#!/usr/bin/python3
"""Train the joint en+fr SentencePiece unigram model and export it as Marian expects.

source.spm and target.spm are the same joint model (one shared vocabulary, as
OPUS-MT models with a shared vocab).  vocab.json maps piece strings to Marian
ids: "</s>"=0, "<unk>"=1, then every normal piece in spm order, "<pad>" last
(docs/MARIAN.md section 5).
"""
import argparse, json, os, shutil
import sentencepiece as spm


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--vocab-size", type=int, default=8000)
    # 1.0 keeps every character of the training data: at 0.9995, rare but
    # essential characters such as "!", "?" and "%" fell out of the vocabulary.
    ap.add_argument("--coverage", type=float, default=1.0)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    # spm records the input and prefix paths in the model file: train inside the
    # output directory with fixed names so the bytes do not depend on --out.
    corpus = os.path.abspath(a.corpus)
    os.chdir(a.out)
    joint = "spm-input.txt"
    with open(joint, "w") as f:
        for side in ("en", "fr"):
            with open(f"{corpus}/train.{side}") as g:
                shutil.copyfileobj(g, f)
    prefix = "spm"
    # One thread and no sampling keep training byte-for-byte reproducible.
    spm.SentencePieceTrainer.train(
        input=joint, model_prefix=prefix, vocab_size=a.vocab_size, model_type="unigram",
        character_coverage=a.coverage, normalization_rule_name="nmt_nfkc",
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, input_sentence_size=0,
        shuffle_input_sentence=False, num_threads=1, minloglevel=1)
    os.remove(joint)
    for name in ("source.spm", "target.spm"):
        shutil.copyfile(prefix + ".model", name)
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    vocab = {"</s>": 0, "<unk>": 1}
    for i in range(sp.get_piece_size()):
        if sp.is_control(i) or sp.is_unknown(i):
            continue
        vocab.setdefault(sp.id_to_piece(i), len(vocab))
    vocab["<pad>"] = len(vocab)
    with open("vocab.json", "w") as f:
        json.dump(vocab, f, ensure_ascii=False, indent=1)
    os.remove(prefix + ".model"); os.remove(prefix + ".vocab")
    print(f"vocab.json: {len(vocab)} entries (pad = {vocab['<pad>']})")


if __name__ == "__main__":
    main()
