#!/usr/bin/python3
"""gen_languages.py: the rows server/service/languages.tsv needs for the
languages of NLLB-200 and M2M-100 (engine/tokenizer/nllb_langs.txt,
m2m100_langs.txt), printed for appending to the table by hand.

Names and codes from Debian's iso-codes (/usr/share/iso-codes/json/
iso_639-3.json, 4.15).  A row: ISO 639-1 (empty when the language has none),
ISO 639-3, English name, then the other codes meaning the same language in
these models: NLLB names some languages by an individual code of a
macrolanguage (arb for Arabic, pes for Persian, zsm for Malay ...), M2M-100
one by a code of its own (ns for Northern Sotho).  Rows the table already
has are skipped; their extra codes are printed as a note to add by hand.

`gen_languages.py --scripts` prints server/service/scripts.tsv instead: the
English names of the scripts (ISO 15924, iso-codes' iso_15924.json) that
NLLB-200's codes name ("Latn" in "ace_Latn").  A language NLLB has in two
scripts is named with its script ("Achinese (Latin)", "Achinese (Arabic)":
server/service/pairs.c); a language in one script keeps its plain name.  A
script's name is iso-codes' without its parenthesized part ("Devanagari
(Nagari)" is "Devanagari"), except Han's two variants, named as their
languages' usual names say: "Simplified" and "Traditional" (HAN, below), so
zho_Hant is "Chinese (Traditional)".  Regenerate with
    /usr/bin/python3 tools/gen_languages.py --scripts > server/service/scripts.tsv
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# individual language (as NLLB / M2M-100 name it) -> the code of the row it belongs to
ALIAS = {"arb": "ara", "pes": "fas", "zsm": "msa", "khk": "mon", "lvs": "lav", "npi": "nep", "plt": "mlg",
         "swh": "swa", "uzn": "uzb", "ydd": "yid", "gaz": "orm", "als": "sqi", "azj": "aze", "pbt": "pus",
         "quy": "que", "ayr": "aym", "knc": "kau", "kmr": "kur", "ns": "nso", "ory": "ori", "fuv": "ful"}
# the one override of iso-codes' script names: "Han (Simplified variant)", "Han (Traditional variant)"
HAN = {"Hans": "Simplified", "Hant": "Traditional"}


def langs(path):
    with open(os.path.join(ROOT, path)) as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def scripts():
    iso = {r["alpha_4"]: r for r in json.load(open("/usr/share/iso-codes/json/iso_15924.json"))["15924"]}
    used = sorted({c.split("_")[1] for c in langs("engine/tokenizer/nllb_langs.txt") if "_" in c})
    print("# Scripts NLLB-200's language codes name (ISO 15924; \"Latn\" in \"ace_Latn\"), English name:")
    print("# made by tools/gen_languages.py --scripts from Debian's iso-codes (iso_15924.json).")
    print("# A language a model has in two scripts is named \"Achinese (Latin)\".  Tab-separated.")
    for c in used:
        if c not in iso:
            sys.exit(f"gen_languages.py: script {c} is not in iso-codes")
        print(f"{c}\t{HAN.get(c, iso[c]['name'].split(' (')[0])}")


def main():
    if sys.argv[1:] == ["--scripts"]:
        return scripts()
    iso = {r["alpha_3"]: r for r in json.load(open("/usr/share/iso-codes/json/iso_639-3.json"))["639-3"]}
    by2 = {r["alpha_2"]: r for r in iso.values() if "alpha_2" in r}
    have = {}
    with open(os.path.join(ROOT, "server/service/languages.tsv")) as f:
        for l in f:
            if l.strip() and not l.startswith("#"):
                c = l.rstrip("\n").split("\t")
                have[c[1]] = c
    codes = [c.split("_")[0] for c in langs("engine/tokenizer/nllb_langs.txt")]
    codes += [by2[c]["alpha_3"] if c in by2 else c for c in langs("engine/tokenizer/m2m100_langs.txt")]
    rows, extra = {}, {}
    for c in codes:
        main_code = ALIAS.get(c, c)
        if main_code != c:
            extra.setdefault(main_code, [])
            if c not in extra[main_code]:
                extra[main_code].append(c)
        if main_code in have or main_code in rows:
            continue
        r = iso.get(main_code)
        if not r:
            sys.exit(f"gen_languages.py: {main_code} is not in iso-codes")
        rows[main_code] = [r.get("alpha_2", ""), main_code, r["name"].split(" (")[0]]
    for c3, r in sorted(rows.items(), key=lambda kv: kv[1][2]):
        print("\t".join(r + ([" ".join(extra[c3])] if c3 in extra else [])))
    for c3 in sorted(extra):
        if c3 in have:
            print(f"# existing row {c3}: add {' '.join(extra[c3])}", file=sys.stderr)


if __name__ == "__main__":
    main()
