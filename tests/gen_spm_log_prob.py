#!/usr/bin/python3
"""Writes tests/fixtures/detect/spm_log_prob.jsonl: the best-path score of texts
under SentencePiece models, as Debian's python3-sentencepiece 0.1.97 computes it,
for tests/test_detect.c to check mt_spm_log_prob (engine/tokenizer/spm_api.h)
against.

    /usr/bin/python3 tests/gen_spm_log_prob.py      # from the repository root

The score is NBestEncodeAsImmutableProto(text, nbest_size=2).nbests[0].score:
the Viterbi path's sum of piece scores (an unknown character min_score - 10).
(nbest_size=1 reports 0: the 1-best call does not fill the score.)

Texts (valid UTF-8 only: the Python binding crashes on malformed bytes; the C
test covers those itself): hand-written edge cases, the first 120 lines of
tests/fixtures/tokenizer/inputs/hard.txt that decode as UTF-8, and a few lines
of the held-out English and French and of the German/Spanish/Italian
negatives.  Models: the three the detector may meet (the OPUS-MT English and
French source models, the shipped joint en+fr model) and the three tiny
unigram fixtures with unusual settings (byte fallback and user-defined pieces,
whitespace as suffix, a custom charsmap).

One JSON object per line: {"spm": path, "text": the text, "score": float}.
"""
import json
import sentencepiece as spm

MODELS = [
    "tests/fixtures/opus-mt/en-mg/source.spm",
    "tests/fixtures/opus-mt/tc-big-fr-en/source.spm",
    "models/en-fr/source.spm",
    "tests/fixtures/tokenizer/spm/uni-bytes.spm",
    "tests/fixtures/tokenizer/spm/uni-suffix.spm",
    "tests/fixtures/tokenizer/spm/uni-rules.spm",
]
MAX_BYTES = 4096          # MT_SPM_LOG_PROB_MAX

HAND = [
    "", " ", "a", "x", "é", "Hello world.", "Ce paquet fournit la documentation.",
    "Dieses Paket enthält die Dokumentation.", "  leading and trailing  ", "tab\there",
    "你好世界", "Привет мир", "🙂🙃 emoji", "ﬁ ligature ＡＢＣ full width", "12345 678.90",
    "!!! ??? ...", "e\u0301 combining", "▁▁ already escaped ▁", "<unk> </s> <s> <pad>",
    ">>fra<< Bonjour", "a" * 300, "Le " * 500,
]


def unescape(line):
    """tests/fixtures/tokenizer/README.md's escapes -> bytes."""
    out, i = bytearray(), 0
    b = line.encode("utf-8")
    while i < len(b):
        c = b[i]
        if c == 0x5C and i + 1 < len(b):
            n = b[i + 1]
            if n == 0x78:
                out.append(int(b[i + 2:i + 4], 16))
                i += 4
                continue
            out += {0x5C: b"\\", 0x6E: b"\n", 0x74: b"\t", 0x72: b"\r"}[n]
            i += 2
            continue
        out.append(c)
        i += 1
    return bytes(out)


def texts():
    yield from HAND
    hard = open("tests/fixtures/tokenizer/inputs/hard.txt", encoding="utf-8").read().split("\n")
    k = 0
    for line in hard:
        try:
            t = unescape(line).decode("utf-8")
        except UnicodeDecodeError:
            continue
        yield t
        k += 1
        if k == 120:
            break
    for path, n in [("tests/fixtures/tokenizer/inputs/test.en.txt", 15),
                    ("tests/fixtures/tokenizer/inputs/test.fr.txt", 15),
                    ("tests/fixtures/detect/de.txt", 5), ("tests/fixtures/detect/es.txt", 5),
                    ("tests/fixtures/detect/it.txt", 5)]:
        yield from open(path, encoding="utf-8").read().split("\n")[:n]


def main():
    rows = 0
    with open("tests/fixtures/detect/spm_log_prob.jsonl", "w", encoding="utf-8") as f:
        for m in MODELS:
            sp = spm.SentencePieceProcessor(model_file=m)
            for t in texts():
                if len(t.encode("utf-8")) > MAX_BYTES or "\0" in t:
                    continue
                p = sp.nbest_encode_as_immutable_proto(t, nbest_size=2)
                score = p.nbests[0].score if len(p.nbests) else 0.0
                f.write(json.dumps({"spm": m, "text": t, "score": score}, ensure_ascii=False) + "\n")
                rows += 1
    print(f"tests/fixtures/detect/spm_log_prob.jsonl: {rows} rows")


if __name__ == "__main__":
    main()
