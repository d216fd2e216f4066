#!/usr/bin/python3
"""Tests of tools/deps.py on tiny fake trees (stdlib unittest).

    /usr/bin/python3 tools/test_deps.py      (run by make check-deps)
"""
import io
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import deps  # noqa: E402

LAYERS = """\
# unit\trank\tjob
lib/low\t0\tleaves
lib/high\t1\tabove the leaves
lib/side\t1\tbeside high
lib/api.h\t1\tthe library's public header
app\t2\tthe program
search\tlib\tapp
private\tlib/high/secret.h\tlib/high
public\tlib\tlib/api.h\tlib/low/*.h
"""

# A layered tree with no violation: every later test adds one fault to it.
CLEAN = {
    "lib/low/a.h": '#include <stddef.h>\nint low_a(void);\n',
    "lib/low/a.c": '#include "a.h"\nint low_a(void) { return 1; }\n',
    "lib/low/b.h": '#include "a.h"\nint low_b(void);\n',
    "lib/low/b.c": '#include "b.h"\n#include "low/a.h"\nint low_b(void) { return low_a(); }\n',
    "lib/high/secret.h": '#include "low/a.h"\nstruct secret { int x; };\n',
    "lib/high/y.h": '#include "secret.h"\nint high_fn(void);\n',
    "lib/high/y.c": textwrap.dedent("""\
        #include "y.h"
        /* #include "app/main.h" is a comment, not an include */
        static int helper(void) { return low_b(); }
        int high_fn(void) { return helper() + low_a(); }
        """),
    "lib/api.h": '#include "low/a.h"\nint high_fn(void);\n',
    "app/main.c": textwrap.dedent("""\
        #include "api.h"
        #include "low/b.h"
        #define CALL() high_fn()
        int main(void) { const char *s = "#include \\"high/secret.h\\""; (void)s; return CALL() + low_b(); }
        """),
}


def readmes(files):
    """A README.md for every folder of files that names each file and folder in it
    (what the docs rule asks), so a tree's only faults are the ones a test adds."""
    entries = {}
    for path in files:
        parts = path.split("/")
        for k in range(1, len(parts)):
            folder = "/".join(parts[:k])
            name = parts[k] + ("/" if k < len(parts) - 1 else "")
            if name != "README.md":
                entries.setdefault(folder, set()).add(name)
    return {folder + "/README.md": "# %s\n\n%s\n" % (folder, "\n".join("- %s: what it holds" % n for n in sorted(names)))
            for folder, names in entries.items()}


def write_tree(root, files):
    for path, text in files.items():
        if text is None:                # a file a test takes away
            continue
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)


class DepsTest(unittest.TestCase):
    def check(self, extra=None, layers=LAYERS, mode=None, overview=None):
        """Runs deps.run on CLEAN + extra, with every folder's README.md naming what the
        folder holds unless extra gives it (None: no such file); returns (status, stdout
        lines, stderr text)."""
        with tempfile.TemporaryDirectory() as root:
            files = dict(CLEAN)
            files.update({k: v for k, v in (extra or {}).items() if v is not None})
            files = dict(readmes(files), **files)
            files.update(extra or {})
            write_tree(root, files)
            with open(os.path.join(root, "layers.tsv"), "w") as f:
                f.write(layers)
            out, err = io.StringIO(), io.StringIO()
            rc = deps.run(root, os.path.join(root, "layers.tsv"), mode, out, err, overview)
            return rc, out.getvalue().splitlines(), err.getvalue()

    def violations(self, lines, kind):
        return [ln for ln in lines if ln.startswith(kind + ":")]

    def test_clean_tree_passes(self):
        rc, lines, _ = self.check()
        self.assertEqual(rc, 0, lines)
        self.assertEqual(lines, ["deps: 9 files, 10 includes, 0 violations"])

    def test_circle(self):
        rc, lines, _ = self.check({"lib/low/a.h": '#include "b.h"\nint low_a(void);\n'})
        self.assertEqual(rc, 1)
        circ = self.violations(lines, "circle")
        self.assertEqual(len(circ), 1, lines)
        self.assertIn("lib/low/a.h:1 -> lib/low/b.h", circ[0])
        self.assertRegex(circ[0], r"lib/low/b\.[ch]:\d -> lib/low/a\.h")
        self.assertTrue(lines[-1].endswith(" 1 violations"), lines)

    def test_circle_through_a_c_file(self):
        # a.c includes b.h and b.h includes a.h: modules a and b (a.c + a.h) form a circle
        rc, lines, _ = self.check({"lib/low/a.c": '#include "a.h"\n#include "b.h"\nint low_a(void) { return 1; }\n'})
        self.assertEqual(rc, 1)
        circ = self.violations(lines, "circle")
        self.assertEqual(len(circ), 1, lines)
        self.assertIn("lib/low/a.c:2 -> lib/low/b.h", circ[0])

    def test_upward_include(self):
        rc, lines, _ = self.check({"lib/low/c.c": '#include "high/y.h"\n'})
        self.assertEqual(rc, 1)
        up = self.violations(lines, "up")
        self.assertEqual(len(up), 1, lines)
        self.assertIn("lib/low/c.c:1 includes lib/high/y.h", up[0])
        # and high/secret.h reached that way is private too
        self.assertEqual(len(lines), 2, lines)

    def test_same_rank_needs_a_peer_row(self):
        extra = {"lib/side/s.c": '#include "high/y.h"\n'}
        rc, lines, _ = self.check(extra)
        self.assertEqual(rc, 1)
        self.assertIn("lib/side/s.c:1 includes lib/high/y.h", self.violations(lines, "up")[0])
        rc, lines, _ = self.check(extra, LAYERS + "peer\tlib/side\tlib/high\n")
        self.assertEqual(rc, 0, lines)

    def test_private_header(self):
        rc, lines, _ = self.check({"app/main.c": '#include "high/secret.h"\nint main(void) { return 0; }\n'})
        self.assertEqual(rc, 1)
        priv = self.violations(lines, "private")
        self.assertEqual(len(priv), 2, lines)        # private to lib/high, and not a public header of lib
        self.assertTrue(all("app/main.c:1 includes lib/high/secret.h" in p for p in priv), priv)
        self.assertIn("private to lib/high", " ".join(priv))

    def test_non_public_header(self):
        rc, lines, _ = self.check({"app/other.c": '#include "high/y.h"\n'})
        self.assertEqual(rc, 1)
        priv = self.violations(lines, "private")
        self.assertEqual(len(priv), 1, lines)
        self.assertIn("app/other.c:1 includes lib/high/y.h", priv[0])

    def test_upward_call(self):
        extra = {"lib/low/c.c": textwrap.dedent("""\
            int high_fn(void);                       /* a declaration is no use */
            int low_c(void) { return high_fn(); }
            """)}
        rc, lines, _ = self.check(extra)
        self.assertEqual(rc, 1)
        calls = self.violations(lines, "calls-up")
        self.assertEqual(len(calls), 1, lines)
        self.assertIn("lib/low/c.c calls high_fn() of lib/high/y.c", calls[0])

    def test_static_and_declared_functions_are_no_calls(self):
        extra = {"lib/low/c.c": textwrap.dedent("""\
            int high_fn(void);
            static int helper(void) { return 2; }
            int low_c(void) { return helper(); }
            """)}
        rc, lines, _ = self.check(extra)
        self.assertEqual(rc, 0, lines)

    def test_cc_files_are_checked_like_c(self):
        # a .cc is listed and its includes are checked: here one climbs
        rc, lines, _ = self.check({"lib/low/c.cc": '#include <vector>\n#include "high/y.h"\n'})
        self.assertEqual(rc, 1)
        up = self.violations(lines, "up")
        self.assertEqual(len(up), 1, lines)
        self.assertIn("lib/low/c.cc:2 includes lib/high/y.h", up[0])
        self.assertTrue(lines[-1].startswith("deps: 10 files, 11 includes"), lines)
        # and its calls: a .cc of lib/low using lib/high's function
        rc, lines, _ = self.check({"lib/low/c.cc": textwrap.dedent("""\
            namespace n { int g(int x) { return x; } }
            extern "C" int low_c(void) { return n::g(high_fn()); }
            """)})
        self.assertEqual(rc, 1)
        calls = self.violations(lines, "calls-up")
        self.assertEqual(len(calls), 1, lines)
        self.assertIn("lib/low/c.cc calls high_fn() of lib/high/y.c", calls[0])

    def test_cc_defines_functions(self):
        # functions a .cc defines, one by one, in an extern "C" block or a namespace,
        # are called-up when a lower unit uses them; declarations in extern "C" { }
        # of a header are no use
        cc = textwrap.dedent("""\
            #include "y.h"
            extern "C" int high_one(void) { return 1; }
            extern "C" {
            int high_two(void) { return 2; }
            }
            namespace impl {
            int high_three(void) { return 3; }
            }
            """)
        header = '#ifdef __cplusplus\nextern "C" {\n#endif\nint high_one(void);\n#ifdef __cplusplus\n}\n#endif\n'
        for name in ("high_one", "high_two", "high_three"):
            rc, lines, _ = self.check({
                "lib/high/z.cc": cc,
                "lib/high/z.h": header,
                "lib/low/c.c": "int %s(void);\nint low_c(void) { return %s(); }\n" % (name, name),
            })
            self.assertEqual(rc, 1, name)
            calls = self.violations(lines, "calls-up")
            self.assertEqual(len(calls), 1, lines)
            self.assertIn("lib/low/c.c calls %s() of lib/high/z.cc" % name, calls[0])
        rc, lines, _ = self.check({"lib/high/z.cc": cc, "lib/high/z.h": header})
        self.assertEqual(rc, 0, lines)
        # a .cc and the .h of its basename are one module: z.cc <-> z.h is no circle
        rc, lines, _ = self.check({"lib/high/z.cc": cc, "lib/high/z.h": '#include "y.h"\n' + header})
        self.assertEqual(rc, 0, lines)

    def test_unplaced_and_unresolved(self):
        rc, lines, _ = self.check({"lib/stray/z.c": '#include "nowhere.h"\n'})
        self.assertEqual(rc, 1)
        self.assertEqual(len(self.violations(lines, "unplaced")), 1, lines)
        unres = self.violations(lines, "unresolved")
        self.assertEqual(len(unres), 1, lines)
        self.assertIn('lib/stray/z.c:1 includes "nowhere.h"', unres[0])

    def test_docs_complete_tree_passes(self):
        # the folders' READMEs name every file and unit: nothing to say, with an
        # overview naming every unit too
        files = readmes(CLEAN)
        self.assertIn("- high/: what it holds", files["lib/README.md"])
        self.assertIn("- api.h: what it holds", files["lib/README.md"])
        overview = {"docs/ARCHITECTURE.md": "app\nlib/high, lib/side; lib/api.h\nlib/low\n"}
        rc, lines, _ = self.check(overview, overview="docs/ARCHITECTURE.md")
        self.assertEqual(rc, 0, lines)
        self.assertEqual(lines, ["deps: 9 files, 10 includes, 0 violations"])

    def test_docs_file_missing_from_its_folder_readme(self):
        # b.c and b.h left out; a.c named only inside another word is not named
        rc, lines, _ = self.check({"lib/low/README.md": "# lib/low\n- a.h: one\n- xa.c, a.cc: two\n"})
        self.assertEqual(rc, 1)
        docs = self.violations(lines, "docs")
        self.assertEqual(docs, [
            'docs: lib/low/README.md does not mention a.c: add a line for lib/low/a.c, e.g. "- a.c: what it holds"',
            'docs: lib/low/README.md does not mention b.c: add a line for lib/low/b.c, e.g. "- b.c: what it holds"',
            'docs: lib/low/README.md does not mention b.h: add a line for lib/low/b.h, e.g. "- b.h: what it holds"',
            "docs: lib/low/README.md:3 names xa.c, which is no file of the tree: rename it to the file that "
            "holds this now, or drop it",
            "docs: lib/low/README.md:3 names a.cc, which is no file of the tree: rename it to the file that "
            "holds this now, or drop it",
        ], lines)
        self.assertTrue(lines[-1].endswith(" 5 violations"), lines)
        # a new file in a documented folder needs its line too
        rc, lines, _ = self.check({"lib/low/c.c": "int low_c(void) { return 3; }\n",
                                   "lib/low/README.md": readmes(CLEAN)["lib/low/README.md"]})
        self.assertEqual(rc, 1)
        self.assertEqual(self.violations(lines, "docs"), [
            'docs: lib/low/README.md does not mention c.c: add a line for lib/low/c.c, e.g. "- c.c: what it holds"'])

    def test_docs_unit_missing_from_the_readme_above(self):
        # lib/README.md without high/ nor api.h: each named with the line to add
        text = "# lib\n- low/: leaves\n- see low/a.h and lib/low/b.h\n"
        rc, lines, _ = self.check({"lib/README.md": text})
        self.assertEqual(rc, 1)
        self.assertEqual(self.violations(lines, "docs"), [
            'docs: lib/README.md does not mention high/: add a line for lib/high, '
            'e.g. "- high/ (1): above the leaves"',
            'docs: lib/README.md does not mention api.h: add a line for lib/api.h, '
            'e.g. "- api.h (1): the library\'s public header"',
        ], lines)
        # the folder's path named in full counts; a unit not in the tree (lib/side) needs no line
        rc, lines, _ = self.check({"lib/README.md": text + "- lib/high/ and api.h\n"})
        self.assertEqual(rc, 0, lines)

    def test_docs_missing_readmes(self):
        rc, lines, _ = self.check({"lib/high/README.md": None, "lib/README.md": None})
        self.assertEqual(rc, 1)
        docs = self.violations(lines, "docs")
        self.assertIn("docs: lib/high/README.md is missing: create it, with a line for each file: "
                      "secret.h, y.c, y.h", docs)
        self.assertIn('docs: lib/README.md is missing: create it, with a line for lib/low, '
                      'e.g. "- low/ (0): leaves"', docs)
        self.assertEqual(len(docs), 4, docs)          # low/, high/, api.h above; high's files
        # a unit at the root (app) is named in no README: the repository's is not read
        self.assertFalse([d for d in docs if "app" in d], docs)

    def test_docs_overview_names_every_unit(self):
        text = "app -> lib/api.h -> lib/high -> low/a.c\nlib/lowest, high/y.c, tests/t.c\n"
        rc, lines, _ = self.check({"docs/ARCHITECTURE.md": text}, overview="docs/ARCHITECTURE.md")
        self.assertEqual(rc, 1)
        self.assertEqual(self.violations(lines, "docs"), [
            "docs: docs/ARCHITECTURE.md does not mention lib/low: add it to the diagram of the layers (rank 0), "
            "and to a request's path where one passes through it",
            "docs: docs/ARCHITECTURE.md:2 names tests/t.c, which is no file of the tree: rename it to the "
            "file that holds this now, or drop it",
        ], lines)
        rc, lines, _ = self.check(overview="docs/ARCHITECTURE.md")
        self.assertEqual(self.violations(lines, "docs"), ["docs: docs/ARCHITECTURE.md is missing"])

    def test_dot_and_list(self):
        rc, lines, err = self.check({"lib/low/c.c": '#include "high/y.h"\n'}, mode="dot")
        self.assertEqual(rc, 1)
        self.assertEqual(lines[0], "digraph deps {")
        self.assertEqual(lines[-1], "}")
        self.assertIn('  "lib/low/c.c" -> "lib/high/y.h" [color=red, penwidth=2];', lines)
        self.assertIn("up: lib/low/c.c:1", err)           # the report goes to stderr
        rc, lines, _ = self.check(mode="list")
        self.assertEqual(rc, 0)
        self.assertIn("lib/low  rank 0: leaves", lines)
        self.assertIn("  b.c", "\n".join(lines))

    def test_command_line_exit_status(self):
        with tempfile.TemporaryDirectory() as root:
            files = dict(CLEAN, **{"lib/low/c.c": '#include "high/y.h"\n'})
            write_tree(root, dict(readmes(files), **files))
            with open(os.path.join(root, "layers.tsv"), "w") as f:
                f.write(LAYERS)
            cmd = [sys.executable, os.path.join(HERE, "deps.py"), "--root", root,
                   "--layers", os.path.join(root, "layers.tsv")]
            p = subprocess.run(cmd, capture_output=True, text=True)
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            self.assertIn("lib/low/c.c:1 includes lib/high/y.h", p.stdout)
            os.remove(os.path.join(root, "lib/low/c.c"))
            p = subprocess.run(cmd, capture_output=True, text=True)
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)      # its README still names c.c
            self.assertIn("lib/low/README.md:7 names c.c, which is no file of the tree", p.stdout)
            write_tree(root, {"lib/low/README.md": readmes(CLEAN)["lib/low/README.md"]})
            p = subprocess.run(cmd, capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            # docs/ARCHITECTURE.md, when the tree has one, is the overview by default
            write_tree(root, {"docs/ARCHITECTURE.md": "app, lib/api.h, lib/high\n"})
            p = subprocess.run(cmd, capture_output=True, text=True)
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            self.assertIn("docs: docs/ARCHITECTURE.md does not mention lib/low:", p.stdout)
            p = subprocess.run(cmd + ["--overview", "lib/README.md"], capture_output=True, text=True)
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            self.assertIn("docs: lib/README.md does not mention app:", p.stdout)


if __name__ == "__main__":
    unittest.main()
