#!/usr/bin/python3
"""Multilingual text from this machine's gettext catalogues (/usr/share/locale/
LOCALE/LC_MESSAGES/*.mo, read with Python's gettext), six scripts and more, for
the SentencePiece BPE tests (tests/spm_bpe/README.md).

    corpus.py OUT_DIR

writes OUT_DIR/train.txt (every line, for spm_train) and OUT_DIR/test.txt
(a sample of TEST_PER_SCRIPT lines of each script, plus hard lines), and
prints the counts.  Deterministic: catalogues sorted, a seeded shuffle."""
import gettext
import glob
import os
import random
import sys

# script -> the locales whose catalogues supply it
SCRIPTS = {
    "Latin": ["fr", "de", "es", "pl", "vi", "tr"],
    "Cyrillic": ["ru", "uk", "bg"],
    "Greek": ["el"],
    "Arabic": ["ar", "fa"],
    "CJK": ["zh_CN", "ja", "ko"],
    "Devanagari": ["hi", "mr", "ne"],
}
TEST_PER_SCRIPT = 1000
PER_SCRIPT_MAX = 12000

# Lines no catalogue gives: whitespace runs, characters outside any training
# text (unknown pieces, byte fallback), NFKC cases, scripts not trained on.
HARD = [
    "", " ", "  leading and trailing  ", "tabs\tand\u3000ideographic space", "a  b   c",
    "emoji \U0001F600\U0001F680 and \u2603", "ﬁ ligature, ｆｕｌｌｗｉｄｔｈ, ①②, ㍻", "é vs e\u0301",
    "ᚠᚢᚦᚨᚱᚲ runes", "ሰላም ዓለም", "שלום עולם", "สวัสดีชาวโลก", "\u200b zero width \u200d",
    "x" * 300, "Ω≈ç√∫˜µ≤≥÷", "∮ E⋅da = Q", "<s> </s> <unk> <pad> eng_Latn __en__",
    "日本語とEnglishとРусскийとहिन्दी", "٠١٢٣ ۴۵۶", "1234567890 3.14159 1e-9",
]


def catalogue_lines(locale):
    out = []
    for path in sorted(glob.glob(f"/usr/share/locale/{locale}/LC_MESSAGES/*.mo")):
        try:
            with open(path, "rb") as f:
                cat = gettext.GNUTranslations(f)._catalog
        except Exception:            # a broken or foreign .mo: skipped
            continue
        for key, val in cat.items():
            if not isinstance(val, str) or key == "" or (isinstance(key, str) and key == ""):
                continue
            for line in val.split("\n"):
                line = line.strip()
                if len(line) >= 2 and not line.startswith(("Project-Id", "Content-", "Plural-")):
                    out.append(line)
    return out


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(49)
    train, test = [], []
    for script, locales in SCRIPTS.items():
        lines = sorted({l for loc in locales for l in catalogue_lines(loc)})
        rng.shuffle(lines)
        lines = lines[:PER_SCRIPT_MAX]
        if len(lines) < TEST_PER_SCRIPT * 2:
            sys.exit(f"corpus.py: only {len(lines)} {script} lines on this machine")
        half = TEST_PER_SCRIPT // 2
        train += lines[half:]                       # the first half of the test lines held out of training
        test += lines[:half] + lines[-half:]        # held out, then seen in training
        print(f"{script}: {len(lines)} lines ({', '.join(locales)})")
    rng.shuffle(train)
    with open(os.path.join(out_dir, "train.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(train) + "\n")
    with open(os.path.join(out_dir, "test.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(HARD + test) + "\n")
    print(f"train {len(train)} lines, test {len(HARD) + len(test)} lines")


if __name__ == "__main__":
    main()
