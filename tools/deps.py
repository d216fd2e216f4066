#!/usr/bin/python3
"""deps.py: the include graph of engine/ and server/, checked against tools/layers.tsv.

    /usr/bin/python3 tools/deps.py            check; one line per violation, then a summary
    /usr/bin/python3 tools/deps.py --list     each unit's files and what they include
    /usr/bin/python3 tools/deps.py --dot      the graph in Graphviz dot (violations in red)

Violations (the process exits 1 when there is any):
  circle    a cycle among modules; a module is a .c (or C++ .cc) and the .h of
            the same basename in the same folder (x.c including x.h is no cycle)
  up        an include of a higher unit, or of another unit of the same rank
            (layers.tsv: lower ranks may be included by higher ranks)
  calls-up  the same for a call: a file uses a function defined (not static)
            in a .c or .cc of a unit it could not include
  private   an include of a header private to other units, or of an engine
            file that is not one of the engine's public headers
  unplaced  a source file in no unit of layers.tsv
  unresolved  an #include "..." found nowhere (beside the file or on the search path)
  docs      a README that does not name what it holds: a unit's folder README.md must
            name each of the unit's source files (x.c, x.h: the bare file name); the
            README.md of the folder above must name each unit (a folder as "name/", a
            file unit as its file name); docs/ARCHITECTURE.md (when the tree has one)
            must name each unit by its path.  The repository's own README is not read.
            And no README.md under engine/ and server/, nor the overview, may name a
            source file (x.c, x.h, x.cc, or a path such as markup/html.h) that is not
            in the tree: a path resolves beside the README, from the repository or
            from a search folder; a bare name anywhere in the repository.

Only the standard library; the C is read with a small tokenizer (comments,
strings and preprocessor lines other than #define are skipped), not compiled.
A .cc file (the few lines of C++ behind a C header) is read the same way; the
braces of its extern "C" { } and namespace blocks open no scope.
"""
import argparse
import fnmatch
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


class Layers:
    """tools/layers.tsv: units with ranks, and the rules beyond ranks."""

    def __init__(self, path):
        self.path = path
        self.units = {}          # unit -> (rank, job), in file order
        self.search = []
        self.private = []        # (header, [units])
        self.public = []         # (dir, [globs])
        self.peers = set()       # (from unit, to unit)
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                line = line.rstrip("\n")
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                fields = [x for x in line.split("\t") if x != ""]
                kw = fields[0]
                if kw == "search":
                    self.search += fields[1:]
                elif kw == "private" and len(fields) >= 3:
                    self.private.append((fields[1], fields[2:]))
                elif kw == "public" and len(fields) >= 3:
                    self.public.append((fields[1].rstrip("/"), fields[2:]))
                elif kw == "peer" and len(fields) == 3:
                    self.peers.add((fields[1], fields[2]))
                elif len(fields) >= 2 and re.fullmatch(r"-?\d+", fields[1]):
                    self.units[fields[0].rstrip("/")] = (int(fields[1]), fields[2] if len(fields) > 2 else "")
                else:
                    raise SystemExit("%s:%d: cannot read this row" % (path, n))
        if not self.search:
            self.search = sorted({u.split("/")[0] for u in self.units})

    def unit_of(self, f):
        """The unit of a root-relative file path: the file itself, else its folder; None if none."""
        if f in self.units:
            return f
        d = os.path.dirname(f)
        return d if d in self.units else None

    def rank(self, unit):
        return self.units[unit][0]

    def may_include(self, src_unit, dst_unit):
        if src_unit == dst_unit:
            return True
        rs, rd = self.rank(src_unit), self.rank(dst_unit)
        return rd < rs or (rd == rs and (src_unit, dst_unit) in self.peers)


# ---- reading C -----------------------------------------------------------------------

INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]', re.M)
TOKEN_RE = re.compile(r"[A-Za-z_]\w*|\S")


def strip_c(text):
    """Comments, string and character literals blanked (newlines kept, so line numbers hold)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * max(0, j - i - 2) + (c if j - i >= 2 else ""))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def includes_of(text):
    """[(line, '"' or '<', name)] of a file's #include lines (comments skipped)."""
    res = []
    # strip comments only (an include's "name" is a string literal)
    bare = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    bare = re.sub(r"//[^\n]*", "", bare)
    for m in INCLUDE_RE.finditer(bare):
        res.append((bare.count("\n", 0, m.start()) + 1, m.group(1), m.group(2)))
    return res


def code_tokens(text):
    """(code, macro) tokens of a file: code without comments, literals or preprocessor
    lines; macro holds the tokens of the #define bodies."""
    lines = strip_c(text).split("\n")
    code, macro, cont, define = [], [], False, False
    for ln in lines:
        directive = not cont and ln.lstrip().startswith("#")
        if directive:
            define = re.match(r"\s*#\s*define\b", ln) is not None
            if define:
                macro.append(re.sub(r"^\s*#\s*define\s+\w+", " ", ln))
        elif cont:
            if define:
                macro.append(ln)
        else:
            code.append(ln)
        cont = ln.rstrip().endswith("\\")
    return unwrap_blocks(TOKEN_RE.findall("\n".join(code))), TOKEN_RE.findall("\n".join(macro))


def unwrap_blocks(tokens):
    """tokens with the braces of C++'s extern "C" { ... } and namespace N { ... } made
    ';' (with their literal blanked, "C" is the tokens '"' '"'): what they hold stays at
    file scope, where a function definition is found and a declaration is no use."""
    out, stack = list(tokens), []
    for k, t in enumerate(tokens):
        if t == "{":
            linkage = tokens[max(0, k - 3):k] == ["extern", '"', '"']
            named = k >= 2 and tokens[k - 2] == "namespace" and re.fullmatch(r"[A-Za-z_]\w*", tokens[k - 1])
            space = (k >= 1 and tokens[k - 1] == "namespace") or bool(named)
            stack.append(linkage or space)
            if stack[-1]:
                out[k] = ";"
        elif t == "}" and stack:
            if stack.pop():
                out[k] = ";"
    return out


def used_names(code, macro):
    """Identifiers a file uses: inside braces (function bodies, initializers) and in macros;
    a declaration at file scope is no use."""
    used, depth = set(macro), 0
    for t in code:
        if t == "{":
            depth += 1
        elif t == "}":
            depth = max(0, depth - 1)
        elif depth:
            used.add(t)
    return used


def defined_functions(tokens):
    """Names of the non-static functions a .c or .cc defines (a name(...) {...} at file scope)."""
    names, depth, decl = [], 0, []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t == "{":
            if depth == 0:
                name = function_name(decl)
                if name:
                    names.append(name)
                decl = []
            depth += 1
        elif t == "}":
            depth = max(0, depth - 1)
            decl = []
        elif depth == 0:
            if t == ";":
                decl = []
            else:
                decl.append(t)
        i += 1
    return names


def function_name(decl):
    if "static" in decl or "=" in decl or "typedef" in decl:
        return None
    k = 0
    while k < len(decl):
        if decl[k] in ("__attribute__", "__declspec", "__asm__", "asm", "alignas", "_Alignas"):
            k = skip_parens(decl, k + 1)
            continue
        if decl[k] == "(":
            prev = decl[k - 1] if k else ""
            if re.fullmatch(r"[A-Za-z_]\w*", prev) and prev not in ("struct", "union", "enum"):
                return prev
            return None
        k += 1
    return None


def skip_parens(toks, k):
    if k >= len(toks) or toks[k] != "(":
        return k
    depth = 0
    while k < len(toks):
        if toks[k] == "(":
            depth += 1
        elif toks[k] == ")":
            depth -= 1
            if depth == 0:
                return k + 1
        k += 1
    return k


# ---- the graph -------------------------------------------------------------------------

class Graph:
    def __init__(self, root, layers):
        self.root, self.layers = root, layers
        self.files = []          # root-relative paths of every .c / .cc / .h under the search dirs
        self.includes = {}       # file -> [(line, target file)]
        self.unresolved = []     # (file, line, name)
        self.calls = {}          # file -> {name: [defining files]}
        for d in layers.search:
            top = os.path.join(root, d)
            for dp, dn, fn in os.walk(top):
                dn.sort()
                for f in sorted(fn):
                    if f.endswith((".c", ".cc", ".h")):
                        self.files.append(os.path.relpath(os.path.join(dp, f), root).replace(os.sep, "/"))
        self.files.sort()
        fileset = set(self.files)
        texts = {}
        for f in self.files:
            with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                texts[f] = fh.read()
        for f in self.files:
            inc = []
            for line, kind, name in includes_of(texts[f]):
                cands = ([os.path.normpath(os.path.join(os.path.dirname(f), name))] if kind == '"' else [])
                cands += [os.path.normpath(os.path.join(d, name)) for d in layers.search]
                hit = next((c.replace(os.sep, "/") for c in cands if c.replace(os.sep, "/") in fileset), None)
                if hit:
                    inc.append((line, hit))
                elif kind == '"':
                    self.unresolved.append((f, line, name))
            self.includes[f] = inc
        # functions: who defines each one, who names it
        tokens = {f: code_tokens(texts[f]) for f in self.files}
        definers = {}
        for f in self.files:
            if f.endswith((".c", ".cc")):
                for name in defined_functions(tokens[f][0]):
                    definers.setdefault(name, []).append(f)
        for f in self.files:
            used = {}
            for t in used_names(*tokens[f]):
                for g in definers.get(t, ()):
                    if g != f:
                        used.setdefault(t, []).append(g)
            self.calls[f] = used

    @staticmethod
    def module(f):
        base, _ = os.path.splitext(f)
        return base

    def n_includes(self):
        return sum(len(v) for v in self.includes.values())

    def check(self):
        L, out = self.layers, []
        bad_edges = set()
        for f in self.files:
            if L.unit_of(f) is None:
                out.append("unplaced: %s is in no unit of %s" % (f, os.path.basename(L.path)))
        for f, line, name in self.unresolved:
            out.append('unresolved: %s:%d includes "%s", found nowhere' % (f, line, name))
        for f in self.files:
            su = L.unit_of(f)
            for line, g in self.includes[f]:
                du = L.unit_of(g)
                where = "%s:%d includes %s" % (f, line, g)
                if su and du and not L.may_include(su, du):
                    out.append("up: %s (%s rank %d may not include %s rank %d)"
                               % (where, su, L.rank(su), du, L.rank(du)))
                    bad_edges.add((f, g))
                for header, allowed in L.private:
                    if g == header and su not in allowed:
                        out.append("private: %s (private to %s)" % (where, ", ".join(allowed)))
                        bad_edges.add((f, g))
                for d, globs in L.public:
                    if g.startswith(d + "/") and not f.startswith(d + "/") \
                            and not any(fnmatch.fnmatchcase(g, p) for p in globs):
                        out.append("private: %s (outside %s/ only %s may be included)"
                                   % (where, d, ", ".join(globs)))
                        bad_edges.add((f, g))
        for f in self.files:
            su = L.unit_of(f)
            for name in sorted(self.calls[f]):
                for g in self.calls[f][name]:
                    du = L.unit_of(g)
                    if su and du and not L.may_include(su, du):
                        out.append("calls-up: %s calls %s() of %s (%s rank %d may not use %s rank %d)"
                                   % (f, name, g, su, L.rank(su), du, L.rank(du)))
                        bad_edges.add((f, g))
        for cyc in self.cycles():
            steps = "; ".join("%s:%d -> %s" % e for e in cyc)
            mods = sorted({self.module(e[0]) for e in cyc})
            out.append("circle: %s (modules %s)" % (steps, ", ".join(mods)))
            bad_edges.update((e[0], e[2]) for e in cyc)
        self.bad_edges = bad_edges
        return out

    def cycles(self):
        """One cycle of include edges [(file, line, target)] per strongly connected set of modules."""
        edges = {}
        for f in self.files:
            for line, g in self.includes[f]:
                a, b = self.module(f), self.module(g)
                if a != b:
                    edges.setdefault(a, {}).setdefault(b, (f, line, g))
        mods = sorted({self.module(f) for f in self.files})
        index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

        def strong(v):          # Tarjan, iterative
            work = [(v, iter(sorted(edges.get(v, {}))))]
            index[v] = low[v] = counter[0]
            counter[0] += 1
            stack.append(v)
            on.add(v)
            while work:
                node, it = work[-1]
                nxt = next(it, None)
                if nxt is None:
                    work.pop()
                    if work:
                        low[work[-1][0]] = min(low[work[-1][0]], low[node])
                    if low[node] == index[node]:
                        comp = []
                        while True:
                            w = stack.pop()
                            on.discard(w)
                            comp.append(w)
                            if w == node:
                                break
                        if len(comp) > 1:
                            sccs.append(sorted(comp))
                elif nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, {})))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])

        for m in mods:
            if m not in index:
                strong(m)
        res = []
        for comp in sorted(sccs):
            inside = set(comp)
            start = comp[0]
            prev, queue, seen = {}, [start], {start}
            found = None
            while queue and found is None:      # shortest way back to start
                nq = []
                for v in queue:
                    for w in sorted(edges.get(v, {})):
                        if w not in inside:
                            continue
                        if w == start:
                            found = v
                            break
                        if w not in seen:
                            seen.add(w)
                            prev[w] = v
                            nq.append(w)
                    if found is not None:
                        break
                queue = nq
            path = [found]
            while path[-1] != start:
                path.append(prev[path[-1]])
            path.reverse()                      # start ... found
            path.append(start)
            res.append([edges[a][b] for a, b in zip(path, path[1:])])
        return res

    # ---- output ----
    def listing(self):
        L, lines = self.layers, []
        by_unit = {}
        for f in self.files:
            by_unit.setdefault(L.unit_of(f), []).append(f)
        order = sorted(L.units, key=lambda u: (L.rank(u), list(L.units).index(u)))
        for u in order + ([None] if None in by_unit else []):
            if u is None:
                lines.append("(no unit)")
            else:
                lines.append("%s  rank %d: %s" % (u, L.rank(u), L.units[u][1]))
            for f in by_unit.get(u, []):
                inc = [g for _, g in self.includes[f]]
                lines.append("  %-34s %s" % (f if u is None or u == f else os.path.basename(f),
                                             ", ".join(inc) if inc else "-"))
        return "\n".join(lines)

    def dot(self):
        L = self.layers
        out = ["digraph deps {", "  rankdir=BT;", '  node [shape=box, fontname="monospace", fontsize=10];']
        by_unit = {}
        for f in self.files:
            by_unit.setdefault(L.unit_of(f), []).append(f)
        for k, u in enumerate(sorted(by_unit, key=lambda u: (L.rank(u) if u else 99, u or ""))):
            label = "%s (%d)" % (u, L.rank(u)) if u else "(no unit)"
            out.append('  subgraph "cluster_%d" {' % k)
            out.append('    label="%s";' % label)
            for f in by_unit[u]:
                out.append('    "%s" [label="%s"];' % (f, os.path.basename(f)))
            out.append("  }")
        for f in self.files:
            for _, g in self.includes[f]:
                attr = ' [color=red, penwidth=2]' if (f, g) in self.bad_edges else ""
                out.append('  "%s" -> "%s"%s;' % (f, g, attr))
            for g in sorted({g for gs in self.calls[f].values() for g in gs}):
                if (f, g) in self.bad_edges and g not in [h for _, h in self.includes[f]]:
                    out.append('  "%s" -> "%s" [color=red, style=dashed, label="calls"];' % (f, g))
        out.append("}")
        return "\n".join(out)


# ---- the READMEs -----------------------------------------------------------------------

def mentions(text, name, prefix=""):
    """Whether text names name as a word of its own: "html.c" is not named by
    "doc_html.c" nor "spm.c" by "spm.cc"; a folder name ends with "/" and may be
    followed by anything.  prefix (a folder path) may stand before the name."""
    pre = "(?:%s/)?" % re.escape(prefix) if prefix else ""
    tail = "" if name.endswith("/") else r"(?![\w])"
    return re.search(r"(?<![\w./-])%s%s%s" % (pre, re.escape(name), tail), text) is not None


def read_text(root, rel):
    path = os.path.join(root, rel)
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def check_docs(root, layers, files, overview=None):
    """The "docs" violations: each unit named in the README.md above it, each source
    file of a folder unit in the folder's README.md, each unit in the overview
    (root-relative, e.g. docs/ARCHITECTURE.md) when given.  Every message says what
    to add, and where."""
    out = []
    by_unit = {}
    for f in files:
        u = layers.unit_of(f)
        if u is not None and u != f:
            by_unit.setdefault(u, []).append(os.path.basename(f))
    for unit, (rank, job) in layers.units.items():
        is_dir = os.path.isdir(os.path.join(root, unit))
        if not is_dir and not os.path.isfile(os.path.join(root, unit)):
            continue                        # a unit not in this tree (yet): nothing to document
        parent, base = os.path.dirname(unit), os.path.basename(unit)
        name = base + "/" if is_dir else base
        line = '"- %s (%d): %s"' % (name, rank, job) if job else '"- %s (%d)"' % (name, rank)
        if parent:                          # the repository's README is not ours to check
            readme = parent + "/README.md"
            text = read_text(root, readme)
            if text is None:
                out.append("docs: %s is missing: create it, with a line for %s, e.g. %s" % (readme, unit, line))
            elif not mentions(text, name, parent):
                out.append("docs: %s does not mention %s: add a line for %s, e.g. %s" % (readme, name, unit, line))
        if is_dir and by_unit.get(unit):
            readme = unit + "/README.md"
            text = read_text(root, readme)
            if text is None:
                out.append("docs: %s is missing: create it, with a line for each file: %s"
                           % (readme, ", ".join(sorted(by_unit[unit]))))
            else:
                for b in sorted(by_unit[unit]):
                    if not mentions(text, b):
                        out.append('docs: %s does not mention %s: add a line for %s/%s, e.g. "- %s: what it holds"'
                                   % (readme, b, unit, b, b))
    docs = []
    for d in layers.search:
        for dp, dn, fn in os.walk(os.path.join(root, d)):
            dn.sort()
            if "README.md" in fn:
                docs.append(os.path.relpath(os.path.join(dp, "README.md"), root).replace(os.sep, "/"))
    if overview:
        text = read_text(root, overview)
        if text is None:
            out.append("docs: %s is missing" % overview)
        else:
            docs.append(overview)
            for unit in layers.units:
                there = os.path.exists(os.path.join(root, unit))
                if there and not re.search(r"(?<![\w./-])%s(?![\w.-])" % re.escape(unit), text):
                    out.append("docs: %s does not mention %s: add it to the diagram of the layers (rank %d), "
                               "and to a request's path where one passes through it"
                               % (overview, unit, layers.rank(unit)))
    out += stale_names(root, layers, docs)
    return out


SOURCE_NAME_RE = re.compile(r"(?<![\w./*-])((?:[\w.-]+/)*[\w-]+\.(?:c|cc|h))(?!\w)")


def stale_names(root, layers, docs):
    """ "docs" violations for the source files these documents name and the tree lacks."""
    names = set()
    for dp, dn, fn in os.walk(root):
        dn[:] = [d for d in dn if not d.startswith((".", "build")) and d != "node_modules"]
        names.update(fn)
    out = []
    for doc in docs:
        text = read_text(root, doc)
        here = os.path.dirname(doc)
        seen = set()
        for m in SOURCE_NAME_RE.finditer(text):
            name = m.group(1)
            if name in seen:
                continue
            seen.add(name)
            if "/" in name:
                ok = any(os.path.isfile(os.path.join(root, base, name)) for base in [here, ""] + layers.search)
            else:
                ok = name in names
            if not ok:
                line = text.count("\n", 0, m.start()) + 1
                out.append("docs: %s:%d names %s, which is no file of the tree: rename it to the file "
                           "that holds this now, or drop it" % (doc, line, name))
    return out


def run(root, layers_path, mode=None, out=sys.stdout, err=sys.stderr, overview=None):
    """Check the tree at root; returns the exit status (0 clean, 1 violations).
    overview: a root-relative document that must name every unit (docs/ARCHITECTURE.md)."""
    layers = Layers(layers_path)
    g = Graph(root, layers)
    violations = g.check() + check_docs(root, layers, g.files, overview)
    if mode == "list":
        print(g.listing(), file=out)
    elif mode == "dot":
        print(g.dot(), file=out)
    report = err if mode == "dot" else out
    for v in violations:
        print(v, file=report)
    print("deps: %d files, %d includes, %d violations" % (len(g.files), g.n_includes(), len(violations)),
          file=report)
    return 1 if violations else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(HERE), help="the repository (default: tools/..)")
    ap.add_argument("--layers", help="the layer table (default: ROOT/tools/layers.tsv)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--list", action="store_const", const="list", dest="mode",
                   help="print each unit's files and what they include")
    g.add_argument("--dot", action="store_const", const="dot", dest="mode",
                   help="print the graph in Graphviz dot (violations and the summary go to stderr)")
    ap.add_argument("--overview", help="a document that must name every unit "
                    "(default: ROOT/docs/ARCHITECTURE.md when it exists)")
    a = ap.parse_args(argv)
    layers = a.layers or os.path.join(a.root, "tools", "layers.tsv")
    overview = a.overview
    if overview is None and os.path.isfile(os.path.join(a.root, "docs", "ARCHITECTURE.md")):
        overview = "docs/ARCHITECTURE.md"
    return run(a.root, layers, a.mode, overview=overview)


if __name__ == "__main__":
    sys.exit(main())
