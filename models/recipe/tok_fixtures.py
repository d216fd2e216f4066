#!/usr/bin/python3
"""Generate the expected tokenizer outputs that tests/test_tokenizer.c checks.

Run once with Debian's python3-sentencepiece (0.1.97), from the repository root:

    /usr/bin/python3 models/recipe/tok_fixtures.py [--corpus models/work/corpus] [--ours DIR]

Writes tests/fixtures/tokenizer/ (format: tests/fixtures/tokenizer/README.md):
  inputs/<set>.txt      one escaped input per line (corpus splits + generated hard cases)
  spm/*.spm             tiny models trained here: a BPE model (must be refused) and
                        unigram models exercising byte fallback, user-defined, control
                        and UNUSED pieces, whitespace-as-suffix, a custom charsmap
  <model>/<set>.txt     expected outputs, one line per input line
Everything is deterministic (fixed seed, one training thread).
"""
import argparse, json, os, random, shutil, struct, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sentencepiece as spm          # noqa: E402
from marian_tok import MarianTok      # noqa: E402

OUT = "tests/fixtures/tokenizer"
OPUS = "tests/fixtures/opus-mt"
SPLITS = ["test.en", "test.fr", "dev.en", "dev.fr"]
N_HARD = 3600
SEED = 20240611


# ---- fixture line format ------------------------------------------------------

def escape(b: bytes) -> str:
    """Bytes -> one fixture line: \\\\ \\n \\t \\r, \\xHH for control bytes, C1 controls
    and bytes that are not valid UTF-8; everything else literal UTF-8."""
    out, i = [], 0
    while i < len(b):
        c = b[i]
        if c == 0x5C:
            out.append("\\\\"); i += 1; continue
        if c in (0x0A, 0x09, 0x0D):
            out.append({0x0A: "\\n", 0x09: "\\t", 0x0D: "\\r"}[c]); i += 1; continue
        if c < 0x20 or c == 0x7F:
            out.append("\\x%02x" % c); i += 1; continue
        if c < 0x80:
            out.append(chr(c)); i += 1; continue
        n = 2 if 0xC2 <= c <= 0xDF else 3 if 0xE0 <= c <= 0xEF else 4 if 0xF0 <= c <= 0xF4 else 0
        try:
            ch = b[i:i + n].decode("utf-8") if n else None
        except UnicodeDecodeError:
            ch = None
        if ch is None or len(ch) != 1 or 0x80 <= ord(ch) <= 0x9F:
            out.append("".join("\\x%02x" % x for x in b[i:i + (n if ch else 1)])); i += n if ch else 1
            continue
        out.append(ch); i += n
    return "".join(out)


def unescape(s: str) -> bytes:
    out, i, raw = bytearray(), 0, s.encode("utf-8")
    while i < len(raw):
        if raw[i] != 0x5C:
            out.append(raw[i]); i += 1; continue
        c = chr(raw[i + 1])
        if c == "x":
            out.append(int(raw[i + 2:i + 4], 16)); i += 4
        else:
            out.append({"\\": 0x5C, "n": 0x0A, "t": 0x09, "r": 0x0D}[c]); i += 2
    return bytes(out)


def fnv1a64(b: bytes) -> str:
    h = 0xCBF29CE484222325
    for x in b:
        h = ((h ^ x) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


MAX_IDS_CHARS = {"ours": 64}   # longer id lists become "#" + hash (default 40 chars)


LIMIT = [40]


def ids_field(ids):
    """Space-separated ids, or "#<hash of that string>" when it would be long."""
    s = " ".join(map(str, ids))
    return s if len(s) <= LIMIT[0] else "#" + fnv1a64(s.encode())


def pieces_hash(pieces):
    """Pieces as bytes, each length-prefixed ("3:abc") so the encoding is unambiguous."""
    return fnv1a64(b"".join(b"%d:%s" % (len(p), p) for p in pieces))


# ---- inputs ------------------------------------------------------------------------

POOLS = {
    "emoji": ["😀", "😂", "🤖", "👍🏽", "❤️", "❤️‍🔥", "👨‍👩‍👧‍👦", "🇫🇷", "🇲🇬", "🏳️‍🌈", "✨", "🎉", "🙏🏿", "🦄", "💩", "☕", "⚽️"],
    "cjk": list("你好世界中文字符日本語のテキストカタカナひらがな한국어텍스트東京北京語言") + ["ｶﾀｶﾅ", "ﾊﾟﾝ", "ｶﾞ"],
    "combining": ["e\u0301", "a\u0308", "n\u0303", "o\u0302\u0323", "\u0301", "A\u030a", "c\u0327", "i\u0307",
                  "\u0308\u0308", "Z\u0335", "g\u035c"],
    "fullwidth": list("ＡＢＣｘｙｚ０１２３！？（）［］＂＇，．：；＄＠"),
    "ligature": list("ﬁﬂﬀﬃﬄﬅﬆĲĳŉǄǅǆǇǈǉ") + ["œ", "Æ", "æ", "ß", "ẞ"],
    "space": [" ", "\u00a0", "\u1680", "\u2000", "\u2001", "\u2002", "\u2003", "\u2004", "\u2005", "\u2006",
              "\u2007", "\u2008", "\u2009", "\u200a", "\u200b", "\u200c", "\u200d", "\u2028", "\u2029",
              "\u202f", "\u205f", "\u3000", "\ufeff", "\t", "\n", "\r", "\x0b", "\x0c", "\x85", "\u180e"],
    "control": [chr(c) for c in list(range(0, 0x20)) + [0x7F] + list(range(0x80, 0xA0))],
    "digit": ["0", "7", "42", "2024", "3.14159", "1,000,000", "١٢٣", "०१२", "①", "②", "⑩", "²", "³", "¹",
              "½", "¼", "¾", "Ⅻ", "ⅻ", "㉑", "𝟘𝟙", "0x1F", "-12.5e-3", "10%", "1st", "2ème"],
    "punct": list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~¡¿«»“”‘’„‚‹›…–—·•§¶†‡‰′″") + ["...", "--", "?!", "''", "``"],
    "script": ["مرحبا", "بالعالم", "שלום", "עולם", "Привет", "мир", "Καλημέρα", "κόσμε", "नमस्ते", "สวัสดี",
               "Բարեւ", "გამარჯობა", "ሰላም", "Manao", "ahoana", "Ελλάδα", "ქართული", "ខ្មែរ", "ᠮᠣᠩᠭᠣᠯ",
               "𐌰𐌱", "ꦗꦮ", "Ängström", "Øresund", "İstanbul", "ışık", "Straße", "naïve", "façade"],
    "special": ["▁", "▁▁", "<unk>", "</s>", "<pad>", "<s>", ">>fr<<", "\ufffd", "\U0001d400", "\ue000",
                "\U0010fffd", "K", "Å", "Ω", "ﷺ", "㍿", "㎏", "™", "℡", "||", "|", "\\", "\\n", "⁇", "<0x41>",
                "<sep>", "@@", "<ctl>"],
}


def corpus_words(lines):
    words = []
    for b in lines:
        words.extend(b.decode("utf-8").split())
    return sorted(set(words))


def fixed_cases():
    """Hand-written edge cases (str) and malformed byte strings (bytes)."""
    s = [
        "", " ", "   ", "\t", "\n", "\r\n", " \t \n ", "\u3000", "\u200b", "\u00a0", "\ufeff", "\u3000\u3000a\u3000\u3000",
        "  The  quick\tbrown fox  ", "ＡＢＣ full-width ① ﬁ", "a\u00a0b\u200bc\u3000d", "It's a test…", "ｶﾀｶﾅ",
        "\x01ctrl", "Hello world.", "你好 world", "I am a small frog", "I am a small frog <pad>", "||",
        ">>fr<< Don't spend so much time watching TV.", ">>fr<<", ">>fr<<Bonjour", ">> fr << x", ">>xx<< unknown code",
        ">><<", ">>", "<<", ">>>fr<<<", "a >>fr<< b", ">>fr<< >>de<< two codes", ">>", ">>\u3000<< odd",
        "▁", "▁▁▁", "▁ ▁", " ▁a▁ ", "a▁b", "<unk>", "</s>", "<s>", "<pad>", "<unk><unk>", "x</s>y",
        "\ufffd", "e\u0301 vs é", "Å vs A\u030a", "ǅemal", "ﬃ ﬄ", "Ĳsselmeer", "½ ⅓ ¼", "x² + y² = z²",
        "K Å Ω", "ﷺ", "㍿ ㎏ ™", "\U0001d400\U0001d401", "🇫🇷🇲🇬", "👨‍👩‍👧‍👦", "ÆØÅ", "ÆØ ÆØ ÆØ",
        "ǅǆǄ", "\x00", "a\x00b", "\x7f", "\x85", "\u2028", "\u2029", "\x1c\x1d\x1e\x1f", " \x1c ", "\x0b\x0c",
        "tab\tseparated\tvalues", "line\nbreak", "cr\rlf", "back\\slash", "\\x41 not an escape",
        "0123456789", "1234567890" * 50, "3.141592653589793238462643383279", "-0.0", "1e100",
        "!!!", "?!?!", "...", "…", "—", "«»", "\"''\"", "()[]{}<>", "@#$%^&*", "-" * 300, "." * 1000,
        "a" * 3000, "ab" * 1500, "Supercalifragilisticexpialidocious" * 40, "é" * 1000, "你" * 1000,
        "😀" * 500, "\u3000" * 200, " " * 500, "x" + " " * 500 + "y",
        "Ça va très bien…", "Où est la bibliothèque ? À gauche !", "l'été dernier, c'était « génial »",
        "Mixed: English, français, русский, 日本語, العربية, עברית, हिन्दी, ไทย.",
        "İstanbul'da ışık ıISSI", "Straße STRASSE ß ẞ", "ﬁnancial ﬂow", "Ｈｅｌｌｏ　Ｗｏｒｌｄ！",
        "ℌℑℜ ℕℤℚ", "Ⅰ Ⅱ Ⅲ Ⅳ Ⅻ", "① ② ⑩ ⑳", "㈱ ㈲ ㋿", "¼ ½ ¾ ⅐", "ℓ ㎞ ㎡ ㏄",
        "\ud7ff\ue000\uf8ff\U000f0000", "\U0010ffff", "\u0378\u0379", "\ufdd0\ufffe",
    ]
    bad = [b"\x80", b"abc\x80def", b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xe0\x9f\xbf", b"\xed\xa0\x80",
           b"\xed\xbf\xbf", b"\xf0\x80\x80\x80", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xf8\x88\x80\x80\x80",
           b"\xfc\x84\x80\x80\x80\x80", b"\xff", b"\xfe\xff", b"caf\xc3", b"\xe2\x82", b"\xf0\x9f\x98",
           b"ok \xc3\xa9 \xc3", b"\xc3\x28", b"a\xa0b", b"\xe9t\xe9", b"\xbf\xbf\xbf", b"x\xc3\xa9\x80y",
           b"\xe2\x96", b" \xe2\x96\x81\xe2\x96", b"\xef\xbb\xbf\xff"]
    return [x.encode("utf-8") for x in s] + bad


def random_case(rng, words):
    cats = ["word"] * 10 + list(POOLS)
    parts = []
    for _ in range(rng.randint(0, 16)):
        c = rng.choice(cats)
        if c == "word":
            w = rng.choice(words)
            if rng.random() < 0.1:
                w = w.upper()
            parts.append(w)
        else:
            parts.append("".join(rng.choice(POOLS[c]) for _ in range(rng.randint(1, 5))))
    seps = [" "] * 12 + ["", "  ", "\t", "\u00a0", "\u3000", "\u200b", " \n ", "\u2009", "   "]
    line = "".join(p + rng.choice(seps) for p in parts)
    r = rng.random()
    if r < 0.05:
        line = ">>" + rng.choice(["fr", "en", "mg", "de", "xx", "fra"]) + "<< " + line
    elif r < 0.1:
        line = rng.choice([" ", "  ", "\t", "\u3000"]) + line
    return line.encode("utf-8")


def read_lines(path):
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def write_inputs(corpus):
    os.makedirs(f"{OUT}/inputs", exist_ok=True)
    sets = {}
    for name in SPLITS:
        sets[name] = read_lines(f"{corpus}/{name}")
    rng = random.Random(SEED)
    words = corpus_words(sets["test.en"] + sets["test.fr"])
    hard = fixed_cases()
    while len(hard) < N_HARD:
        hard.append(random_case(rng, words))
    sets["hard"] = hard
    for name, lines in sets.items():
        with open(f"{OUT}/inputs/{name}.txt", "w", encoding="utf-8", newline="\n") as f:
            for b in lines:
                f.write(escape(b) + "\n")
    # the escaping must round-trip
    for name, lines in sets.items():
        with open(f"{OUT}/inputs/{name}.txt", encoding="utf-8", newline="\n") as f:
            back = [unescape(l[:-1]) for l in f]
        assert back == lines, name
    return sets


# ---- tiny spm models ------------------------------------------------------------------

def pb_varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def pb_fields(buf):
    """Split a message into [(field, wire, raw_value_bytes_or_int)]."""
    i, out = 0, []
    while i < len(buf):
        k = 0; s = 0
        while True:
            b = buf[i]; i += 1; k |= (b & 0x7F) << s; s += 7
            if not b & 0x80:
                break
        f, w = k >> 3, k & 7
        if w == 0:
            v = 0; s = 0
            while True:
                b = buf[i]; i += 1; v |= (b & 0x7F) << s; s += 7
                if not b & 0x80:
                    break
        elif w == 2:
            n = 0; s = 0
            while True:
                b = buf[i]; i += 1; n |= (b & 0x7F) << s; s += 7
                if not b & 0x80:
                    break
            v = buf[i:i + n]; i += n
        elif w == 5:
            v = buf[i:i + 4]; i += 4
        elif w == 1:
            v = buf[i:i + 8]; i += 8
        else:
            raise ValueError("group")
        out.append((f, w, v))
    return out


def pb_join(fields):
    out = bytearray()
    for f, w, v in fields:
        out += pb_varint(f << 3 | w)
        if w == 0:
            out += pb_varint(v)
        elif w == 2:
            out += pb_varint(len(v)) + v
        else:
            out += v
    return bytes(out)


def pb_set(fields, f, w, v):
    """Replace (or append) field f of a message."""
    fields = [x for x in fields if x[0] != f]
    return fields + [(f, w, v)]


def train(name, lines, **kw):
    tmp = tempfile.mkdtemp()
    try:
        inp = os.path.join(tmp, "in.txt")
        with open(inp, "wb") as f:
            f.write(b"\n".join(lines) + b"\n")
        spm.SentencePieceTrainer.train(input=inp, model_prefix=os.path.join(tmp, "m"), num_threads=1,
                                       input_sentence_size=0, shuffle_input_sentence=False, minloglevel=2,
                                       **kw)
        with open(os.path.join(tmp, "m.model"), "rb") as f:
            m = f.read()
    finally:
        shutil.rmtree(tmp)
    # The proto records the (random) temporary paths: make them fixed so that the
    # files are byte-for-byte reproducible.
    top = pb_fields(m)
    for k, (f, w, v) in enumerate(top):
        if f == 2:                                   # TrainerSpec: input, model_prefix
            t = pb_set(pb_set(pb_fields(v), 1, 2, b"in.txt"), 2, 2, b"m")
            top[k] = (f, w, pb_join(t))
        elif f == 3:                                 # NormalizerSpec: normalization_rule_tsv
            t = pb_fields(v)
            if any(x[0] == 6 for x in t):
                top[k] = (f, w, pb_join(pb_set(t, 6, 2, b"rules.tsv")))
    return pb_join(top)


def tiny_models(sets):
    """Small spm files with the features the OPUS models lack."""
    os.makedirs(f"{OUT}/spm", exist_ok=True)
    text = sets["test.en"][:800] + sets["test.fr"][:800]
    models = {}
    models["bpe"] = train("bpe", text[:300], model_type="bpe", vocab_size=300, normalization_rule_name="identity",
                          hard_vocab_limit=False)
    # unigram with byte fallback, user-defined and control symbols; then some pieces marked UNUSED
    # and a custom unk_surface, by rewriting the proto.
    m = train("bytes", text, model_type="unigram", vocab_size=700, byte_fallback=True, split_digits=True,
              character_coverage=0.99, normalization_rule_name="identity",
              user_defined_symbols=["<sep>", "@@", "ab", "3.14", "<0x41>x"], control_symbols=["<ctl>", "<2fr>"])
    top = pb_fields(m)
    n = 0
    for k, (f, w, v) in enumerate(top):
        if f == 1:
            piece = pb_fields(v)
            if n in (300, 301, 302, 450, 451):          # NORMAL pieces -> UNUSED
                top[k] = (f, w, pb_join(pb_set(piece, 3, 0, 5)))
            n += 1
        elif f == 2:
            top[k] = (f, w, pb_join(pb_set(pb_fields(v), 44, 2, " <?> ".encode())))
    models["uni-bytes"] = pb_join(top)
    models["uni-suffix"] = train("suffix", text, model_type="unigram", vocab_size=500,
                                 treat_whitespace_as_suffix=True, remove_extra_whitespaces=False,
                                 normalization_rule_name="identity", user_defined_symbols=["<sep>"])
    # a custom charsmap (rules TSV) with overlapping multi-character keys, no dummy prefix,
    # and (by rewriting) escape_whitespaces = false
    tmp = tempfile.mkdtemp()
    try:
        rules = os.path.join(tmp, "rules.tsv")
        with open(rules, "w") as f:
            f.write("41\t61\n41 42\t58\n41 42 43\t59 5A\nFB01\t66 69\n3000\t20\n9\t20\n200B\t\nFF21\t41\n"
                    "E9\t65 301\n2581\t5F\n2E 2E 2E\t2026\n20 20\t20\nA0\t20 20\n61 62 63 64\t64\n")
        m = train("rules", text, model_type="unigram", vocab_size=500, normalization_rule_tsv=rules,
                  add_dummy_prefix=False)
    finally:
        shutil.rmtree(tmp)
    top = pb_fields(m)
    for k, (f, w, v) in enumerate(top):
        if f == 3:
            top[k] = (f, w, pb_join(pb_set(pb_fields(v), 5, 0, 0)))
    models["uni-rules"] = pb_join(top)
    # uni-suffix also gets a denormalizer (applied by decode): the rules charsmap as a
    # plain character mapping, with the flags spm's trainer writes for denormalizers
    charsmap = [v for f, w, v in pb_fields([v for f, w, v in top if f == 3][0]) if f == 2][0]
    denorm = pb_join([(1, 2, b"rules-denorm"), (2, 2, charsmap), (3, 0, 0), (4, 0, 0), (5, 0, 0)])
    models["uni-suffix"] = pb_join(pb_fields(models["uni-suffix"]) + [(5, 2, denorm)])
    for name, blob in models.items():
        with open(f"{OUT}/spm/{name}.spm", "wb") as f:
            f.write(blob)
    return sorted(k for k in models if k != "bpe")


# ---- expected outputs --------------------------------------------------------------------

def spm_fields(sp, b):
    """(ids field, pieces field, ids).  The pieces field is "-" when no piece is unknown:
    then every piece is the model's string for its id and the ids say it all."""
    ids = sp.encode(b)                               # bytes in: malformed UTF-8 -> U+FFFD like C++
    pieces = sp.encode(b, out_type=str)             # bytes pieces, as the input is bytes
    assert len(pieces) == len(ids)
    has_unk = any(sp.is_unknown(i) for i in ids)
    if not has_unk:
        assert all(p == sp.id_to_piece(i).encode() for p, i in zip(pieces, ids))
    return ids_field(ids), pieces_hash(pieces) if has_unk else "-", ids


def write_expected(model, fields, sets, row):
    LIMIT[0] = MAX_IDS_CHARS.get(model, 40)
    os.makedirs(f"{OUT}/{model}", exist_ok=True)
    for name, lines in sets.items():
        with open(f"{OUT}/{model}/{name}.txt", "w", encoding="utf-8", newline="\n") as f:
            f.write("# fields: " + "\t".join(fields) + "\n")
            for b in lines:
                vals = row(b)
                assert len(vals) == len(fields)
                f.write("\t".join(vals) + "\n")


def marian_row(tok, b, target=False):
    """(hash of MarianTok ids, hash of decode) or "!" when the input is not valid UTF-8."""
    try:
        s = b.decode("utf-8")
    except UnicodeDecodeError:
        return "!", "!"
    ids = tok.encode(s, target)
    return ids_field(ids), fnv1a64(tok.decode(ids).encode("utf-8"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="models/work/corpus")
    ap.add_argument("--ours", default=None, help="our model dir (default: models/en-fr if it has source.spm, "
                                                  "else tests/fixtures/tokenizer/ours)")
    a = ap.parse_args()
    ours = a.ours or ("models/en-fr" if os.path.exists("models/en-fr/source.spm") else f"{OUT}/ours")
    assert spm.__version__ == "0.1.97", spm.__version__
    sets = write_inputs(a.corpus)

    # our joint model: source.spm == target.spm
    tok = MarianTok(ours)
    def row_ours(b):
        ids, ph, _ = spm_fields(tok.src, b)
        return [ids, ph, *marian_row(tok, b)]
    write_expected("ours", ["spm", "pieces", "marian", "decode"], sets, row_ours)

    tok = MarianTok(f"{OPUS}/en-mg")
    def row_enmg(b):
        ids, ph, _ = spm_fields(tok.src, b)
        tids, tph, _ = spm_fields(tok.tgt, b)
        m, d = marian_row(tok, b)
        mt, _ = marian_row(tok, b, target=True)
        return [ids, ph, tids, tph, m, d, mt]
    write_expected("en-mg", ["spm", "pieces", "spm_tgt", "pieces_tgt", "marian", "decode", "marian_tgt"],
                   sets, row_enmg)

    tok = MarianTok(f"{OPUS}/tc-big-fr-en")
    def row_fren(b):
        ids, ph, _ = spm_fields(tok.src, b)
        return [ids, ph, *marian_row(tok, b)]
    write_expected("tc-big-fr-en", ["spm", "pieces", "marian", "decode"], sets, row_fren)

    for name in tiny_models(sets):
        sp = spm.SentencePieceProcessor(model_file=f"{OUT}/spm/{name}.spm")
        def row_tiny(b, sp=sp):
            ids, ph, raw = spm_fields(sp, b)
            return [ids, ph, fnv1a64(sp.decode(raw).encode("utf-8"))]
        write_expected(name, ["spm", "pieces", "spm_decode"], {"hard": sets["hard"]}, row_tiny)

    total = 0
    for root, _, files in os.walk(OUT):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    print(f"{OUT}: {total / 1e6:.2f} MB; ours = {ours}")


if __name__ == "__main__":
    main()
