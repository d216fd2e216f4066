#!/usr/bin/python3
"""Writes tests/fixtures/detect/charlm_ref.jsonl: the log-probability of texts under
the shipped character language models (models/en-fr/en.charlm, models/fr-en/fr.charlm)
as models/recipe/charlm.py's reference scorer computes it from the file, for
tests/test_detect.c to check srv_charlm_log_prob (server/detect/charlm.h) against.

    /usr/bin/python3 tests/gen_charlm_ref.py      # from the repository root

Rerun after the models change.  Texts: hand-written edge cases of the
normalization (separators, case folding of Latin-1 and Latin Extended-A, digits,
other scripts, emoji), the first lines of the held-out English and French, and of
the German/Spanish/Italian negatives.

One JSON object per line: {"model": path, "text": the text, "logp": float, "n": characters}.
"""
import json, os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "recipe"))
import charlm  # noqa: E402

MODELS = ["models/en-fr/en.charlm", "models/fr-en/fr.charlm"]
EDGE = [
    "", " ", "\t\n ", "a", "A", "0", "12 345", "The quick brown fox", "THE QUICK BROWN FOX",
    "  leading and   inner \t spaces\n", "non\u00a0breaking\u202fspaces\u3000and\u2028separators",
    "\u00c9T\u00c9 \u00c0 \u00d4 \u00c7A \u00d7 \u00df \u00de\u00fe", "\u0152UVRE \u0178 \u0130stanbul \u0141\u00f3d\u017a \u0139\u013a \u0179\u017e",
    "\u0105\u0104 \u017f \u0131 \u0138", "documentation pour NTP (Network Time Protocol)", "Generate random integers",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8", "\u0420\u0443\u0441\u0441\u043a\u0438\u0439 \u0442\u0435\u043a\u0441\u0442",
    "emoji \U0001f600 \U0001f680!", "l\u2019\u00e9t\u00e9 \u00ab guillemets \u00bb", "x\u0085y\u009fz\u007fw",
]


def first(path, n):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if 3 <= len(line.split()) <= 10:
                out.append(line)
            if len(out) == n:
                break
    return out


def main():
    texts = list(EDGE)
    texts += first("tests/fixtures/tokenizer/inputs/test.en.txt", 12)
    texts += first("tests/fixtures/tokenizer/inputs/test.fr.txt", 12)
    for lang in ("de", "es", "it"):
        texts += first("tests/fixtures/detect/%s.txt" % lang, 4)
    out = "tests/fixtures/detect/charlm_ref.jsonl"
    with open(out, "w", encoding="utf-8") as f:
        for path in MODELS:
            m = charlm.read(path)
            for t in texts:
                lp, n = m.log_prob(t)
                f.write(json.dumps({"model": path, "text": t, "logp": lp, "n": n}, ensure_ascii=False) + "\n")
    print("%s: %d rows" % (out, len(MODELS) * len(texts)))


if __name__ == "__main__":
    main()
