"""Marian tokenization in Python (the reference the C tokenizer is checked against):
SentencePiece pieces mapped through vocab.json, unknown pieces -> <unk>, </s> appended."""
import json, re
import sentencepiece as spm


class MarianTok:
    def __init__(self, model_dir):
        self.src = spm.SentencePieceProcessor(model_file=f"{model_dir}/source.spm")
        self.tgt = spm.SentencePieceProcessor(model_file=f"{model_dir}/target.spm")
        with open(f"{model_dir}/vocab.json") as f:
            self.vocab = json.load(f)
        self.inv = {i: p for p, i in self.vocab.items()}
        self.eos, self.unk, self.pad = self.vocab["</s>"], self.vocab["<unk>"], self.vocab["<pad>"]

    def pieces(self, text, target=False):
        sp = self.tgt if target else self.src
        code = []
        if text.startswith(">>") and "<<" in text:
            end = text.find("<<") + 2
            code, text = [text[:end]], text[end:]
        return code + sp.encode(text, out_type=str)

    def encode(self, text, target=False):
        return [self.vocab.get(p, self.unk) for p in self.pieces(text, target)] + [self.eos]

    def decode(self, ids):
        special = {self.eos, self.unk, self.pad}
        pieces = [self.inv.get(i, "<unk>") for i in ids if i not in special]
        return self.tgt.decode_pieces(pieces).strip() if pieces else ""
