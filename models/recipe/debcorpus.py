#!/usr/bin/python3
"""Build an English-French corpus of interface strings and sentences from Debian
packages named in a manifest (issue 53), beside the DDTP corpus of corpus.py.

    /usr/bin/python3 recipe/debcorpus.py --manifest recipe/corpus-manifest.tsv \\
        --debs work/deb --out work/debcorpus          # make -C models corpus

The manifest (TSV, '#' comments) lists every package whose text is used: name,
version, the sha256 of its .deb, the kind of text it gives, the split it goes
to (train, dev, test: split by package; dev and test packages are held out) and
the pairs it gave.  Each .deb is fetched with `apt-get download name=version`
into --debs (kept there: a rerun downloads nothing), its sha256 checked against
the manifest (a mismatch stops the run), unpacked with `dpkg -x`.  Nothing else
is read: no installed file, no package outside the manifest.  --write-manifest
fills in the sha256 and pair columns instead of checking them (used when a
package is added).

Kinds (what a package gives):
  mo       every French gettext catalogue in it (*/fr/LC_MESSAGES/*.mo, the
           LibreOffice resource/fr ones too): msgid -> msgstr, and a plural
           entry's msgid -> msgstr[0] and msgid_plural -> msgstr[1].  A .mo holds
           no fuzzy entry (msgfmt leaves them out); the header and entries with
           an empty msgstr are dropped.  Catalogues of codes and names listed in
           SKIP_DOMAINS are left out (ISO 3166-2 subdivisions, 3166-3 former
           countries, 639-3/5 rare languages, 15924 scripts: 10,000 names of no use
           to an interface model).
  xpi-fr, xpi-en
           a Mozilla language pack pair (firefox-esr-l10n-fr with
           firefox-esr-l10n-en-gb): the Fluent (.ftl) messages and attributes
           and the .properties strings of the two packs, paired by file and key.
           The English side is the British pack: its spellings are mapped to
           US ones by a word list learnt from the en_GB catalogues of the mo
           packages (en_GB msgstr against its US msgid, words that differ in
           otherwise equal strings, seen twice and never contradicted).
  html-fr, html-en
           a DocBook manual built in both languages (debian-reference-fr with
           debian-reference-en): each chapter's HTML blocks (p, headings, table
           cells, list items; pre left out) paired in order when both pages hold
           the same blocks; paragraphs split into sentences as help pages are.
           Its untranslated paragraphs go by filter 6.
  pak      Chromium's locale packs (chromium-l10n: fr.pak and en-GB.pak, paired by
           resource id; en-GB mapped to US spelling as above).
  dict     dict-freedict-eng-fra: each headword with the first translation of its
           first sense (a lexicon of single words and short phrases).

Filters, in order, on every pair (both sides):
  1. placeholders out, as the .po path of server/document sees a msgid
     (doc_po.c: text/placeholders.h with SRV_PH_MARKUP is never shown to the
     model): printf %s %5.2f %1$s %%, %(name)s, %{name}, Qt %1, {0} {name}
     {{x}}, ${x}, :name, URLs, e-mail addresses; Chromium's $1 and Fluent
     { $var } likewise, LibreOffice's $(ARG1), $name$ and %NAME (its
     %PRODUCTNAME made "LibreOffice", what a user sees); an ICU/Fluent select
     or plural message is dropped;
  2. markup: block tags (p, br, div, li, para ...) and line breaks split a
     string into units as html.h does (a pair whose two sides split into
     different numbers of units is dropped, else unit i pairs with unit i),
     inline tags removed with their text kept, entities decoded;
  3. accelerators removed: '_' and '~' before a letter at a word's start
     ("_Open", "Save _As", LibreOffice's "~Open"), '&' before a letter ("&File";
     "&&" is a literal '&'), a trailing "(_X)";
  4. whitespace runs made one space, trimmed; empty quotes or brackets left by a
     placeholder ("“”", "« »", "()") removed;
  5. kept only when each side has two letters in a row (not "V:132, I:208"), at
     most MAX_WORDS words, and
     (len(fr) + 5) / (len(en) + 5) within [1/3, 3] (length ratio);
  6. language check: a side of 4 words or more is dropped when it holds more of
     the other language's function words (EN_STOP / FR_STOP) than of its own;
     a pair whose two sides are equal is kept only up to 2 words ("Description",
     "Zoom": a label French writes alike), else it is an untranslated entry;
  7. duplicates and near-duplicates: a pair is keyed by both sides case-folded,
     digits made 0, punctuation and spaces removed; one pair per key (the first
     of the sorted pairs), at most 3 French variants per English key;
  8. held out: a train pair whose English or French key occurs in dev or test is
     dropped, and a dev pair that is in test too (as corpus.py does).

Test sets (from the test packages' pairs, sources without a placeholder,
markup or line break, and reference != source):
  test-ui        strings of 1-8 words that are not full sentences (labels,
                 menu items, buttons, short messages), at most 1500 picked by
                 the md5 of the English side;
  test-everyday  full sentences: 5-30 words, a capital first, ending in . ! or
                 ?, no '/', '=' or '_' (paths, options, identifiers), at most 1000
                 picked the same way: help texts, messages and descriptions
                 written as plain English.
Outputs (sorted, deterministic): train, dev, test, test-ui, test-everyday
(.en/.fr), train.origin (the package of each train line), stats.json, SHA256SUMS.
"""
import argparse, collections, glob, gzip, hashlib, html, json, os, re, shutil, struct, subprocess, sys, zipfile

import polib

SKIP_DOMAINS = {"iso_3166-2", "iso_3166_2", "iso_3166-3", "iso_639-3", "iso_639_3", "iso_639-5", "iso_639_5", "iso_15924"}
MAX_WORDS = 60
EN_STOP = set("the of and to is are was were be been this that with for from by you your it its not have has "
              "will would can could should which what when there their they we our or an as at on if".split())
FR_STOP = set("le la les des du un une est sont été être ce cette avec pour par vous votre il elle ne pas "
              "nous notre ou au aux sur si dans qui que quand leur leurs se sa son ses été".split())
TEST_UI_MAX, TEST_EVERYDAY_MAX = 1500, 1000

# ---- the manifest --------------------------------------------------------------

COLS = ["package", "version", "sha256", "kind", "split", "pairs", "note"]


def read_manifest(path):
    head, rows = [], []
    for line in open(path, encoding="utf-8").read().splitlines():
        if line.startswith("#") or not line.strip():
            head.append(line)
            continue
        f = line.split("\t")
        if f[0] == "package":
            continue
        rows.append(dict(zip(COLS, f + [""] * (len(COLS) - len(f)))))
    return head, rows


def write_manifest(path, head, rows):
    with open(path, "w", encoding="utf-8") as f:
        for line in head:
            f.write(line + "\n")
        f.write("\t".join(COLS) + "\n")
        for r in rows:
            f.write("\t".join(str(r[c]) for c in COLS) + "\n")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def fetch(row, debs, write):
    """The .deb of a manifest row in debs (downloaded when absent), checked."""
    name, ver = row["package"], row["version"]
    pat = f"{debs}/{name}_{ver.replace(':', '%3a')}_*.deb"
    found = sorted(glob.glob(pat))
    if not found:
        r = subprocess.run(["apt-get", "download", f"{name}={ver}"], cwd=debs, capture_output=True, text=True)
        found = sorted(glob.glob(pat))
        if r.returncode or not found:
            sys.exit(f"{name}={ver}: apt-get download failed ({r.stderr.strip()[-300:]}); the version may have "
                     f"left the archive: fetch it from snapshot.debian.org into {debs}")
    got = sha256(found[0])
    if write:
        row["sha256"] = got
    elif got != row["sha256"]:
        sys.exit(f"{found[0]}: sha256 {got}, the manifest says {row['sha256']}")
    return found[0]


def unpack(deb, root):
    d = f"{root}/{os.path.basename(deb)[:-4]}"
    if not os.path.isdir(d):
        subprocess.run(["dpkg", "-x", deb, d + ".tmp"], check=True)
        os.rename(d + ".tmp", d)
    return d

# ---- cleaning: what the model sees of a string ----------------------------------

_PH = re.compile("|".join([
    r"\$\(ARG\d\)", r"\$[A-Za-z_]+\$", r"%[A-Z][A-Z0-9_]{2,}\b",     # LibreOffice's
    r"%%",
    r"%\(\w+\)[-+ 0#]*\d*(?:\.\d+)?[a-zA-Z]",                      # python %(name)s
    r"%\{\w+\}", r"%<\w+>[a-zA-Z]",                                 # ruby
    r"%(?:\d+\$)?[-+0#']*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|q|j|z|t|I64|I32|I)?[diouxXeEfFgGaAcspnSC@]",
    r"%\d+(?![a-zA-Z])",                                            # Qt %1
    r"\{\{\s*[\w.]+\s*\}\}",
    r"\{[^{}\s]{0,64}\}",                                           # {0} {name} {}
    r"\$\{[^}\n]{1,64}\}", r"\$t\([^)\n]{1,128}\)",
    r"\$\d\b",                                                      # Chromium $1
    r"(?:\b[a-zA-Z][a-zA-Z0-9+.-]*://|\bwww\.)[^\s\"'<>\u0080-\U0010ffff]*[^\s\"'<>\u0080-\U0010ffff.,;:!?')\]]",
    r"\b[\w.%+-]{1,64}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+",
    r"(?<![\w:/]):[A-Za-z_]\w+",                                     # Laravel :name
]))
_ICU = re.compile(r"\{\s*\$?\w+\s*(?:,\s*(?:plural|select|selectordinal)|->)")
_TAG = re.compile(r"</?([A-Za-z][\w:-]*)(?:\s[^<>]{0,250})?/?>")
BLOCK = {"p", "br", "div", "li", "ul", "ol", "para", "table", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6",
         "html", "body", "head", "blockquote", "pre", "nl", "list", "item", "title", "dl", "dt", "dd", "hr"}
_ACCEL = [
    (re.compile(r"\s*\(_[A-Za-z0-9]\)"), ""),                      # "(_X)" after a translation
    (re.compile(r"(?<![\w&])[_~](?=\w)"), ""),                     # _Open, Save _As, ~Open
    (re.compile(r"&&"), "\0"),
    (re.compile(r"&(?!#?\w+;)(?=\w)"), ""),                        # &File (not &amp;)
    (re.compile("\0"), "&"),
]
_EMPTY = re.compile(r"“\s*”|‘\s*’|«\s*»|\"\s*\"|'\s*'|\(\s*\)|\[\s*\]|„\s*“")
_TRAIL = re.compile(r"\s+([,.;!?)])")


def has_ph(s):
    return bool(_PH.search(s) or _TAG.search(s) or "\n" in s)


def units(s):
    """A string as the model sees it: its units (None: a select/plural message)."""
    if _ICU.search(s):
        return None
    s = s.replace("%PRODUCTNAME", "LibreOffice")
    s = _PH.sub(" \x01 ", s)
    s = s.replace("\\n", "\n")
    s = _TAG.sub(lambda m: "\n" if m.group(1).lower() in BLOCK else " \x01 ", s)
    for rx, rep in _ACCEL:
        s = rx.sub(rep, s)
    s = html.unescape(s)
    out = []
    for u in re.split(r"[\n\r\u2028]+", s):
        u = " ".join(u.replace("\x01", " ").split())
        u = _EMPTY.sub(" ", u)
        u = _TRAIL.sub(r"\1", " ".join(u.split())).strip()
        if u:
            out.append(u)
    return out


def words(s):
    return s.split()


def lang_ok(s, own, other):
    w = [x.strip(".,;:!?()«»\"'").lower() for x in words(s)]
    if len(w) < 4:
        return True
    return sum(x in other for x in w) <= sum(x in own for x in w)


def key(s):
    s = re.sub(r"\d", "0", s.casefold())
    return re.sub(r"[\W_]+", "", s)


def clean_pair(en, fr):
    """The unit pairs of one raw pair that pass filters 1-6 (list of (en, fr))."""
    ue, uf = units(en), units(fr)
    if not ue or not uf or len(ue) != len(uf):
        return []
    out = []
    for e, f in zip(ue, uf):
        if not re.search(r"[^\W\d_]{2}", e) or not re.search(r"[^\W\d_]{2}", f):
            continue
        if len(words(e)) > MAX_WORDS or len(words(f)) > MAX_WORDS:
            continue
        r = (len(f) + 5) / (len(e) + 5)
        if not (1 / 3 <= r <= 3):
            continue
        if not lang_ok(e, EN_STOP, FR_STOP) or not lang_ok(f, FR_STOP, EN_STOP):
            continue
        if e == f and len(words(e)) > 2:
            continue
        out.append((e, f))
    return out

# ---- extractors: raw (en, fr) pairs of a package ---------------------------------


def mo_pairs(root):
    out = []
    for path in sorted(glob.glob(f"{root}/**/fr/LC_MESSAGES/*.mo", recursive=True)):
        if os.path.basename(path)[:-3] in SKIP_DOMAINS:
            continue
        for e in polib.mofile(path):
            if not e.msgid:
                continue
            if e.msgid_plural:
                p = e.msgstr_plural
                if p.get(0):
                    out.append((e.msgid, p[0]))
                if p.get(1):
                    out.append((e.msgid_plural, p[1]))
            elif e.msgstr:
                out.append((e.msgid, e.msgstr))
    return out


_HELP_BLOCKS = {"title", "subtitle", "desc", "p", "cite"}
_HELP_SKIP = {"info", "code", "screen", "media", "synopsis"}


def help_blocks(path):
    """[(tag, text)] of a Mallard page's text blocks in document order, <info>
    and code left out; a block holding another block is not one."""
    import xml.etree.ElementTree as ET
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return None
    out = []
    def walk(el):
        tag = el.tag.rsplit("}", 1)[-1]
        if tag in _HELP_SKIP:
            return
        if tag in _HELP_BLOCKS and not any(c.tag.rsplit("}", 1)[-1] in _HELP_BLOCKS | {"list", "steps", "note"}
                                           for c in el.iter() if c is not el):
            out.append((tag, " ".join("".join(el.itertext()).split())))
            return
        for c in el:
            walk(c)
    walk(root)
    return out


def help_pairs(root):
    """Mallard help pages in English (help/C) and French (help/fr), paired block by
    block when the two pages have the same blocks (itstool keeps the structure);
    a paragraph whose two sides split into as many sentences gives sentence pairs."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from corpus import sentences
    out = []
    for fr in sorted(glob.glob(f"{root}/usr/share/help/fr/**/*.page", recursive=True)):
        en = fr.replace("/help/fr/", "/help/C/")
        if not os.path.exists(en):
            continue
        be, bf = help_blocks(en), help_blocks(fr)
        if not be or not bf or [t for t, _ in be] != [t for t, _ in bf]:
            continue
        for (_, e), (_, f) in zip(be, bf):
            se, sf = sentences(e), sentences(f)
            out.extend(zip(se, sf) if len(se) == len(sf) and len(se) > 1 else [(e, f)])
    return out


class _Blocks(__import__("html.parser").parser.HTMLParser):
    """The text blocks of an HTML page in order: (tag, text); pre and code blocks out."""
    TAGS = {"p", "h1", "h2", "h3", "h4", "td", "th", "dt", "li", "title"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out, self.cur, self.tag, self.skip = [], None, None, 0

    def flush(self):
        if self.cur is not None:
            self.out.append((self.tag, " ".join("".join(self.cur).split())))
        self.cur = None

    def handle_starttag(self, t, attrs):
        if t == "pre":
            self.flush(); self.skip += 1
        elif t in self.TAGS:
            self.flush(); self.cur, self.tag = [], t

    def handle_endtag(self, t):
        if t == "pre":
            self.skip = max(0, self.skip - 1)
        elif t in self.TAGS:
            self.flush()

    def handle_data(self, d):
        if self.cur is not None and not self.skip:
            self.cur.append(d)


def html_pairs(fr_root, en_root):
    """A DocBook manual built in both languages (debian-reference-fr against -en):
    each chapter's blocks paired in order when the two pages hold the same blocks
    (po4a keeps the structure); sentences as help_pairs does."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from corpus import sentences
    out = []
    for fr in sorted(glob.glob(f"{fr_root}/usr/share/*/*.fr.html")):
        rel = os.path.relpath(fr, fr_root)[:-len(".fr.html")] + ".en.html"
        en = f"{en_root}/{rel}"
        if not os.path.exists(en):
            continue
        a, b = _Blocks(), _Blocks()
        a.feed(open(en, encoding="utf-8").read()); b.feed(open(fr, encoding="utf-8").read())
        if [t for t, _ in a.out] != [t for t, _ in b.out]:
            continue
        for (_, e), (_, f) in zip(a.out, b.out):
            if not e or not f:
                continue
            se, sf = sentences(e), sentences(f)
            out.extend(zip(se, sf) if len(se) == len(sf) and len(se) > 1 else [(e, f)])
    return out


def gb_words(roots):
    """en_GB -> en_US word map from the en_GB catalogues (msgstr en_GB, msgid US)."""
    seen = collections.defaultdict(collections.Counter)
    for root in roots:
        for path in sorted(glob.glob(f"{root}/**/en_GB/LC_MESSAGES/*.mo", recursive=True)):
            for e in polib.mofile(path):
                if not e.msgid or not e.msgstr or e.msgid_plural:
                    continue
                a, b = re.findall(r"\w+", e.msgid), re.findall(r"\w+", e.msgstr)
                if len(a) != len(b):
                    continue
                diff = [(y, x) for x, y in zip(a, b) if x != y]
                if len(diff) == 1 and diff[0][0].lower() != diff[0][1].lower() and diff[0][0][:3] == diff[0][1][:3]:
                    seen[diff[0][0]][diff[0][1]] += 1
    return {gb: us.most_common(1)[0][0] for gb, us in seen.items()
            if len(us) == 1 and sum(us.values()) >= 2}


def us_spelling(s, gbmap):
    return re.sub(r"\w+", lambda m: gbmap.get(m.group(0), m.group(0)), s)


def ftl_messages(text):
    """{id or id.attr: value} of a Fluent file; terms kept as -id."""
    msgs, cur, attr = {}, None, None
    for line in text.split("\n"):
        if not line.strip() or line.startswith("#"):
            if not line.strip() and cur:
                continue
            cur = None
            continue
        m = re.match(r"^(-?[A-Za-z][\w-]*)\s*=\s?(.*)$", line)
        if m and not line[0].isspace():
            cur, attr = m.group(1), None
            msgs[cur] = m.group(2).strip()
            continue
        m = re.match(r"^\s+\.([\w-]+)\s*=\s?(.*)$", line)
        if m and cur:
            attr = f"{cur}.{m.group(1)}"
            msgs[attr] = m.group(2).strip()
            continue
        if cur and line[0].isspace():
            k = attr or cur
            msgs[k] = (msgs[k] + " " + line.strip()).strip()
    return msgs


_FTL_SKIP_ATTR = re.compile(r"\.(accesskey|key|commandkey|style|width|height|buttonaccesskey\w*|macos\w*)$", re.I)


def ftl_resolve(v, terms):
    if "->" in v:
        return None
    def term(m):
        t = terms.get(m.group(1))
        return t if t is not None and "{" not in t else "\x02"
    v = re.sub(r"\{\s*(-[\w-]+)(?:\.[\w-]+)?(?:\([^)]*\))?\s*\}", term, v)
    if "\x02" in v:
        return None
    v = re.sub(r"\{\s*\"([^\"]*)\"\s*\}", r"\1", v)
    return re.sub(r"\{[^{}]*\}", " ", v)


def properties(text):
    out, buf = {}, ""
    for line in text.split("\n"):
        line = buf + line.strip() if buf else line.strip()
        if line.endswith("\\") and not line.endswith("\\\\"):
            buf = line[:-1]
            continue
        buf = ""
        if not line or line[0] in "#!":
            continue
        m = re.match(r"^([^=:\s]+)\s*[=:]\s*(.*)$", line)
        if m:
            v = re.sub(r"\\u([0-9a-fA-F]{4})", lambda x: chr(int(x.group(1), 16)), m.group(2))
            out[m.group(1)] = v.replace("\\n", "\n").replace("\\", "")
    return out


def xpi_strings(xpi, lang):
    """{(file, key): text} of a language pack, locale directories made LL."""
    z = zipfile.ZipFile(xpi)
    raw, terms = {}, {}
    for n in sorted(z.namelist()):
        norm = n.replace(f"/{lang}/", "/LL/")
        if n.endswith(".ftl"):
            for k, v in ftl_messages(z.read(n).decode("utf-8", "replace")).items():
                if k.startswith("-"):
                    terms[k.split(".")[0]] = v
                elif not _FTL_SKIP_ATTR.search(k):
                    raw[(norm, k)] = v
        elif n.endswith(".properties"):
            for k, v in properties(z.read(n).decode("utf-8", "replace")).items():
                if not re.search(r"(accesskey|\.key|commandkey)$", k, re.I) and ";" not in v:
                    raw[(norm, k)] = v
    out = {}
    for k, v in raw.items():
        r = ftl_resolve(v, terms) if k[0].endswith(".ftl") else v
        if r is not None:
            out[k] = r
    return out


def xpi_pairs(fr_root, en_root, gbmap):
    fx = glob.glob(f"{fr_root}/**/langpack-fr@*.xpi", recursive=True)
    ex = glob.glob(f"{en_root}/**/langpack-en-GB@*.xpi", recursive=True)
    f, e = xpi_strings(fx[0], "fr"), xpi_strings(ex[0], "en-GB")
    return [(us_spelling(e[k], gbmap), f[k]) for k in sorted(set(e) & set(f))]


def pak_read(path):
    d = open(path, "rb").read()
    ver, = struct.unpack_from("<I", d, 0)
    if ver != 5:
        sys.exit(f"{path}: pak version {ver}, not 5")
    n, _ = struct.unpack_from("<HH", d, 8)
    ents = [struct.unpack_from("<HI", d, 12 + 6 * i) for i in range(n + 1)]
    out = {}
    for (rid, off), (_, nxt) in zip(ents, ents[1:]):
        try:
            out[rid] = d[off:nxt].decode("utf-8")
        except UnicodeDecodeError:
            pass
    return out


def pak_pairs(root, gbmap):
    loc = glob.glob(f"{root}/**/locales/fr.pak", recursive=True)[0]
    f, e = pak_read(loc), pak_read(loc.replace("/fr.pak", "/en-GB.pak"))
    return [(us_spelling(e[k], gbmap), f[k]) for k in sorted(set(e) & set(f))]


def dict_pairs(root):
    B = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    def b64(s):
        v = 0
        for c in s:
            v = v * 64 + B.index(c)
        return v
    idx = glob.glob(f"{root}/**/freedict-eng-fra.index", recursive=True)[0]
    data = gzip.open(idx[:-6] + ".dict.dz").read()
    out = []
    for line in open(idx, encoding="utf-8").read().splitlines():
        head, off, n = line.split("\t")
        if head.startswith("00"):
            continue
        body = data[b64(off):b64(off) + b64(n)].decode("utf-8").split("\n")
        first = re.sub(r"^\d+\.\s*", "", body[1]).split(",")[0].strip() if len(body) > 1 else ""
        if first:
            out.append((head, first))
    return out

# ---- the corpus -----------------------------------------------------------------


def pick(pairs, n):
    return sorted(pairs, key=lambda p: (hashlib.md5(p[0].encode()).hexdigest(), p))[:n]


def sentence(e):
    w = words(e)
    return (5 <= len(w) <= 30 and e[0].isupper() and e[-1] in ".!?" and not re.search(r"[/=_]", e))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--debs", required=True, help="where the .debs are downloaded (kept)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--write-manifest", action="store_true", help="fill in sha256 and pairs instead of checking")
    a = ap.parse_args()
    head, rows = read_manifest(a.manifest)
    os.makedirs(a.debs, exist_ok=True)
    root = f"{a.debs}/x"
    os.makedirs(root, exist_ok=True)
    dirs = {}
    for r in rows:
        dirs[r["package"]] = unpack(fetch(r, a.debs, a.write_manifest), root)
    gbmap = gb_words([dirs[r["package"]] for r in rows if r["kind"] == "mo"])
    # raw pairs of each package, then filters 1-6
    split_of = {r["package"]: r["split"] for r in rows}
    per = collections.OrderedDict()
    raw_n = {}
    for r in rows:
        p, k = r["package"], r["kind"]
        if k == "mo":
            raw = mo_pairs(dirs[p]) + help_pairs(dirs[p])
        elif k == "xpi-fr":
            en = [x["package"] for x in rows if x["kind"] == "xpi-en" and x["note"] == r["note"]][0]
            raw = xpi_pairs(dirs[p], dirs[en], gbmap)
        elif k == "html-fr":
            en = [x["package"] for x in rows if x["kind"] == "html-en" and x["note"] == r["note"]][0]
            raw = html_pairs(dirs[p], dirs[en])
        elif k == "pak":
            raw = pak_pairs(dirs[p], gbmap)
        elif k == "dict":
            raw = dict_pairs(dirs[p])
        elif k in ("xpi-en", "html-en"):
            continue
        else:
            sys.exit(f"{p}: unknown kind {k}")
        raw_n[p] = len(raw)
        got = []
        for e, f in raw:
            for u in clean_pair(e, f):
                got.append(u + (not has_ph(e),))
        per[p] = got
    # filter 7: one pair per key, at most 3 French variants per English key; first package wins
    # held-out packages first: a string in a test package and a train one stays in test
    seen, variants = set(), collections.Counter()
    splits = {"train": [], "dev": [], "test": []}
    order = {"test": 0, "dev": 1, "train": 2}
    for p, got in sorted(per.items(), key=lambda x: order[split_of[x[0]]]):
        for e, f, plain in sorted(set(got)):
            ke, kf = key(e), key(f)
            if (ke, kf) in seen or variants[ke] >= 3 or not ke or not kf:
                continue
            seen.add((ke, kf)); variants[ke] += 1
            splits[split_of[p]].append((e, f, p, plain))
    # filter 8: held-out keys out of train, test pairs out of dev
    held = set()
    for s in ("dev", "test"):
        for e, f, _, _ in splits[s]:
            held.add(key(e)); held.add(key(f))
    splits["train"] = [x for x in splits["train"] if key(x[0]) not in held and key(x[1]) not in held]
    test_keys = {(key(e), key(f)) for e, f, _, _ in splits["test"]}
    test_side = {key(e) for e, _, _, _ in splits["test"]}
    splits["dev"] = [x for x in splits["dev"] if (key(x[0]), key(x[1])) not in test_keys and key(x[0]) not in test_side]
    os.makedirs(a.out, exist_ok=True)
    stats = {"packages": len(rows), "raw_pairs": raw_n, "splits": {}, "by_package": {}, "gb_us_words": len(gbmap)}

    def write(name, items):
        items = sorted(set((e, f) for e, f, *_ in items))
        with open(f"{a.out}/{name}.en", "w") as fe, open(f"{a.out}/{name}.fr", "w") as ff:
            for e, f in items:
                fe.write(e + "\n"); ff.write(f + "\n")
        stats["splits"][name] = {"pairs": len(items), "en_words": sum(len(words(e)) for e, _ in items),
                                 "fr_words": sum(len(words(f)) for _, f in items)}
        return items

    for s in ("train", "dev", "test"):
        write(s, splits[s])
    origin = {}
    for e, f, p, _ in splits["train"]:
        origin.setdefault((e, f), p)
    with open(f"{a.out}/train.origin", "w") as fo:
        for e, f in sorted(origin):
            fo.write(origin[(e, f)] + "\n")
    cands = [(e, f) for e, f, _, plain in splits["test"] if plain and e != f]
    every = pick([x for x in cands if sentence(x[0])], TEST_EVERYDAY_MAX)
    ui = pick([x for x in cands if not sentence(x[0]) and len(words(x[0])) <= 8], TEST_UI_MAX)
    write("test-everyday", every)
    write("test-ui", ui)
    count = collections.Counter(p for s in splits.values() for _, _, p, _ in s)
    for r in rows:
        half = r["kind"] in ("xpi-en", "html-en")
        n = count.get(r["package"], 0) if not half else 0
        stats["by_package"][r["package"]] = n
        if a.write_manifest:
            r["pairs"] = n
        elif not half and str(n) != r["pairs"]:
            sys.exit(f"{r['package']}: {n} pairs, the manifest says {r['pairs']}")
    with open(f"{a.out}/stats.json", "w") as f:
        json.dump(stats, f, indent=1, sort_keys=True); f.write("\n")
    sums = []
    for n in sorted(os.listdir(a.out)):
        if n != "SHA256SUMS" and os.path.isfile(f"{a.out}/{n}"):
            sums.append(f"{sha256(f'{a.out}/{n}')}  {n}")
    open(f"{a.out}/SHA256SUMS", "w").write("\n".join(sums) + "\n")
    if a.write_manifest:
        write_manifest(a.manifest, head, rows)
    for k, v in stats["splits"].items():
        print(f"{k}: {v['pairs']} pairs, {v['en_words']} English words")


if __name__ == "__main__":
    main()
