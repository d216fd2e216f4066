#!/usr/bin/python3
"""check_i18n.py: independent readers comparing an i18n resource file with
its translation by mtserve (server/document/doc_json.c, doc_properties.c,
doc_strings.c, doc_android.c).

    /usr/bin/python3 tests/documents/check_i18n.py FORMAT INPUT OUTPUT [TARGET]

FORMAT: json, arb (Python's json), yaml (python3-yaml: Rails, the top key
the language), properties (a reader of Java's
Properties.load rules, below), strings (a reader of Apple's .strings), android
(xml.etree and aapt's escapes).  Checks: the same keys in the same order and
the same structure (nesting, arrays, non-string values, comments not read);
every value that is not translated (ARB "@" metadata, translatable="false",
references, markup, blank values) equal; ARB's "@@locale" equal to TARGET;
each translated value keeps every placeholder of its source the same number
of times (printf %s %1$s %@, {0} {name}, {{x}}).  Prints, as JSON on stdout,
the [source value, translated value] pairs of the translated values (their
whitespace as written) for the caller to compare with POST /translate; the
problems go to stderr, and the exit status is 1 when there are any.
"""
import json
import re
import sys
import xml.etree.ElementTree as ET

import yaml
from collections import Counter

PLACEHOLDER = re.compile(
    r"%%|%\([^)]{0,62}\)[-+#0'I]*[\d*$]*(?:\.[\d*$]*)?[hlLqjzZt]*[diouxXeEfFgGaAcsSpnmr@]"
    r"|%(?:\d+\$)?[-+#0'I]*[\d*$]*(?:\.[\d*$]*)?[hlLqjzZt]*[diouxXeEfFgGaAcsSpnmr@]"
    r"|\{\{[^{}]{0,62}\}\}|\{[^{}\s]{0,62}\}")

problems = []
pairs = []


def problem(msg):
    problems.append(msg)


STRFTIME = re.compile(r"%[-_0^#:]?[A-Za-z]")


def has_words(s):
    """A letter (or any non-ASCII character) outside the placeholders and strftime's conversions."""
    rest = STRFTIME.sub("", PLACEHOLDER.sub("", s))
    return any(c.isascii() and c.isalpha() or not c.isascii() for c in rest)


def value_pair(where, src, out):
    if not has_words(src):
        if src != out:
            problem(f"{where}: a value with nothing to translate changed: {src!r} -> {out!r}")
        return
    if Counter(PLACEHOLDER.findall(src)) != Counter(PLACEHOLDER.findall(out)):
        problem(f"{where}: placeholders {PLACEHOLDER.findall(src)} became {PLACEHOLDER.findall(out)}")
    pairs.append([src, out])


# ---- JSON and ARB ----------------------------------------------------------------------

class Obj(list):
    """An object's members, in order."""


def load_json(path):
    with open(path, encoding="utf-8-sig") as f:
        return json.load(f, object_pairs_hook=Obj)


def json_compare(where, a, b, skip, target, top):
    if type(a) is not type(b):
        problem(f"{where}: {type(a).__name__} became {type(b).__name__}")
        return
    if isinstance(a, Obj):
        if [k for k, _ in a] != [k for k, _ in b]:
            problem(f"{where}: keys {[k for k, _ in a]} became {[k for k, _ in b]}")
            return
        for (k, va), (_, vb) in zip(a, b):
            if top and k == "@@locale" and target is not None:
                if vb != target:
                    problem(f"@@locale is {vb!r}, not {target!r}")
                continue
            json_compare(f"{where}/{k}", va, vb, skip or k.startswith("@"), target, False)
    elif isinstance(a, list):
        if len(a) != len(b):
            problem(f"{where}: {len(a)} items became {len(b)}")
            return
        for i, (va, vb) in enumerate(zip(a, b)):
            json_compare(f"{where}[{i}]", va, vb, skip, target, False)
    elif isinstance(a, str) and not skip:
        value_pair(where, a, b)
    elif a != b:
        problem(f"{where}: {a!r} became {b!r}")


# ---- Rails YAML ----------------------------------------------------------------------------------

def yaml_compare(where, a, b):
    if type(a) is not type(b):
        problem(f"{where}: {type(a).__name__} became {type(b).__name__}")
    elif isinstance(a, dict):
        if list(a) != list(b):
            problem(f"{where}: keys {list(a)} became {list(b)}")
            return
        for k in a:
            yaml_compare(f"{where}/{k}", a[k], b[k])
    elif isinstance(a, list):
        if len(a) != len(b):
            problem(f"{where}: {len(a)} items became {len(b)}")
            return
        for i, (x, y) in enumerate(zip(a, b)):
            yaml_compare(f"{where}[{i}]", x, y)
    elif isinstance(a, str):
        value_pair(where, a, b)
    elif a != b:
        problem(f"{where}: {a!r} became {b!r}")


# ---- Java .properties: Properties.load's rules ------------------------------------------------

def properties(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.splitlines()
    out, i = [], 0
    while i < len(lines):
        line = lines[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        while (len(line) - len(line.rstrip("\\"))) % 2 == 1 and i <= len(lines):
            line = line[:-1] + (lines[i].lstrip(" \t\f") if i < len(lines) else "")
            i += 1
        k = 0
        while k < len(line) and line[k] not in "=: \t\f":
            k += 2 if line[k] == "\\" else 1
        key = line[:k]
        while k < len(line) and line[k] in " \t\f":
            k += 1
        if k < len(line) and line[k] in "=:":
            k += 1
        while k < len(line) and line[k] in " \t\f":
            k += 1
        out.append((unescape_java(key), unescape_java(line[k:])))
    return out


def unescape_java(s):
    r, i = [], 0
    while i < len(s):
        c = s[i]
        if c != "\\" or i + 1 >= len(s):
            r.append(c)
            i += 1
            continue
        e = s[i + 1]
        if e == "u":
            r.append(chr(int(s[i + 2:i + 6], 16)))
            i += 6
            continue
        r.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(e, e))
        i += 2
    # surrogate pairs, as Java's String holds them
    return "".join(r).encode("utf-16", "surrogatepass").decode("utf-16")


# ---- Apple .strings -----------------------------------------------------------------------------

STRINGS_TOKEN = re.compile(r'\s+|/\*.*?\*/|//[^\n]*|"((?:[^"\\]|\\.)*)"|([A-Za-z0-9_$.:/-]+)|([=;])', re.S)


def strings(path):
    with open(path, encoding="utf-8-sig") as f:
        text = f.read()
    toks, pos = [], 0
    while pos < len(text):
        m = STRINGS_TOKEN.match(text, pos)
        if not m:
            problem(f"{path}: cannot read at offset {pos}")
            return []
        pos = m.end()
        if m.group(1) is not None:
            toks.append(("s", unescape_apple(m.group(1))))
        elif m.group(2) is not None:
            toks.append(("s", m.group(2)))
        elif m.group(3) is not None:
            toks.append((m.group(3), None))
    out, i = [], 0
    while i < len(toks):
        if i + 1 < len(toks) and toks[i + 1][0] == ";":
            out.append((toks[i][1], None))
            i += 2
            continue
        out.append((toks[i][1], toks[i + 2][1]))
        i += 4
    return out


def unescape_apple(s):
    r, i = [], 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            r.append(c)
            i += 1
            continue
        e = s[i + 1]
        if e in "Uu":
            r.append(chr(int(s[i + 2:i + 6], 16)))
            i += 6
        else:
            r.append({"n": "\n", "t": "\t", "r": "\r"}.get(e, e))
            i += 2
    return "".join(r).encode("utf-16", "surrogatepass").decode("utf-16")


# ---- Android strings.xml --------------------------------------------------------------------------

def aapt(text):
    """A value as aapt reads it: escapes, quotes keeping whitespace, else whitespace folded."""
    r, quoted, folded, i = [], False, False, 0
    while i < len(text):
        c = text[i]
        was, folded = folded, False
        if c == "\\" and i + 1 < len(text):
            e = text[i + 1]
            if e == "u":
                r.append(chr(int(text[i + 2:i + 6], 16)))
                i += 6
                continue
            r.append({"n": "\n", "t": "\t"}.get(e, e))
            i += 2
        elif c == '"':
            quoted, folded = not quoted, was
            i += 1
        elif not quoted and c in " \t\n\r":
            if not was:
                r.append(" ")
            folded = True
            i += 1
        else:
            r.append(c)
            i += 1
    return "".join(r)


def bare_quotes(text):
    """The double quotes aapt reads as quoting, not text (not after a backslash)."""
    return len(re.findall(r'(?<!\\)(?:\\\\)*"', text))


def android_values(el, where):
    """The (where, element) of every translatable value under <resources>, and the rest."""
    for child in el:
        if child.get("translatable") == "false":
            yield where + "/" + child.get("name", "?"), child, False
            continue
        if child.tag == "string":
            yield where + "/" + child.get("name", "?"), child, True
        elif child.tag in ("string-array", "plurals"):
            for k, item in enumerate(child):
                ok = item.tag == "item" and item.get("translatable") != "false"
                yield f"{where}/{child.get('name', '?')}[{k}]", item, ok
        else:
            yield where + "/" + child.tag, child, False


def android(a_path, b_path):
    a, b = ET.parse(a_path).getroot(), ET.parse(b_path).getroot()
    if a.tag != "resources" or b.tag != "resources":
        problem(f"the roots are <{a.tag}> and <{b.tag}>")
        return
    va, vb = list(android_values(a, "")), list(android_values(b, ""))
    if [(w, e.tag, e.attrib) for w, e, _ in va] != [(w, e.tag, e.attrib) for w, e, _ in vb]:
        problem("the elements or their attributes changed")
        return
    for (w, ea, ok), (_, eb, _) in zip(va, vb):
        text_a = ea.text or ""
        if ok and len(ea):                      # markup: the same elements, the text translated
            if [(e.tag, e.attrib) for e in ea.iter()] != [(e.tag, e.attrib) for e in eb.iter()]:
                problem(f"{w}: the markup changed: {ET.tostring(ea)!r} -> {ET.tostring(eb)!r}")
                continue
            value_pair(w, aapt("".join(ea.itertext())), aapt("".join(eb.itertext())))
            continue
        if not ok or text_a.strip().startswith(("@", "?")):
            if ET.tostring(ea) != ET.tostring(eb):
                problem(f"{w}: an untranslated value changed: {ET.tostring(ea)!r} -> {ET.tostring(eb)!r}")
            continue
        if len(eb):
            problem(f"{w}: the translation has elements")
            continue
        if bare_quotes(text_a) != bare_quotes(eb.text or ""):
            problem(f"{w}: aapt's quotes (whitespace kept between them) changed: {text_a!r} -> {eb.text!r}")
        value_pair(w, aapt(text_a), aapt(eb.text or ""))


def main():
    fmt, a_path, b_path = sys.argv[1:4]
    target = sys.argv[4] if len(sys.argv) > 4 else None
    if fmt in ("json", "arb"):
        json_compare("", load_json(a_path), load_json(b_path), False, target if fmt == "arb" else None, True)
    elif fmt in ("properties", "strings"):
        read = properties if fmt == "properties" else strings
        a, b = read(a_path), read(b_path)
        if [k for k, _ in a] != [k for k, _ in b]:
            problem(f"keys {[k for k, _ in a]} became {[k for k, _ in b]}")
        else:
            for (k, va), (_, vb) in zip(a, b):
                if va is None or vb is None:
                    if va != vb:
                        problem(f"{k}: {va!r} became {vb!r}")
                else:
                    value_pair(k, va, vb)
    elif fmt == "android":
        android(a_path, b_path)
    elif fmt == "yaml":
        with open(a_path, encoding="utf-8") as fa, open(b_path, encoding="utf-8") as fb:
            a, b = yaml.safe_load(fa), yaml.safe_load(fb)
        if not isinstance(a, dict) or not isinstance(b, dict) or len(a) != 1 or len(b) != 1:
            problem("not one language key on top")
        else:
            (ka, va), (kb, vb) = next(iter(a.items())), next(iter(b.items()))
            if target is not None and kb != target:
                problem(f"the top key is {kb!r}, not {target!r}")
            yaml_compare(ka, va, vb)
    else:
        sys.exit(f"unknown format {fmt}")
    json.dump(pairs, sys.stdout, ensure_ascii=False)
    for p in problems:
        print("check_i18n:", p, file=sys.stderr)
    print(f"check_i18n: {fmt}: {len(pairs)} values translated, {len(problems)} problems", file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
