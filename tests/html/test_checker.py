#!/usr/bin/python3
"""tests/html/test_checker.py: tests check_html.py itself against tests/html/fake_server.py
(on the generated snippets without the broken-markup cases, which the fake's html.parser
does not parse as HTML5 does): with no fault every check passes; with each --fault the
checker fails, and through the check that guards the broken guarantee.  Also the
generator's determinism (two runs, same bytes).  Prints one line per case and `test_checker: N passed,
M failed`; exits 1 on a failure."""
import filecmp
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"

# fault -> the check name(s) that must report it
FAULTS = {
    "": None,
    "drop-em": ["elements"],
    "href": ["elements"],
    "script": ["notranslate"],
    "notranslate": ["notranslate", "units"],
    "comment": ["notranslate"],
    "lead-ws": ["units"],
    "wrong-text": ["units"],
    "escape": ["parses", "elements", "units"],
    "title": ["attributes"],
    "wrap": ["fragment"],
    "deep": ["bad input"],
}


def start_fake(fault):
    p = subprocess.Popen([PY, os.path.join(HERE, "fake_server.py"), "--port", "0"] + (["--fault", fault] if fault else []),
                         stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    m = re.search(r"listening on (\d+)", line)
    if not m:
        p.kill()
        raise RuntimeError("fake server did not start: %r" % line)
    return p, int(m.group(1))


def main():
    tmpdir = tempfile.TemporaryDirectory()
    snippets = os.path.join(tmpdir.name, "snippets.jsonl")
    subprocess.run([PY, os.path.join(HERE, "gen_snippets.py"), "--no-broken", snippets], check=True, capture_output=True)
    passed = failed = 0
    for fault, expect in FAULTS.items():
        p, port = start_fake(fault)
        try:
            r = subprocess.run([PY, os.path.join(HERE, "check_html.py"), "http://127.0.0.1:%d" % port, snippets],
                               capture_output=True, text=True, timeout=600)
        finally:
            p.terminate()
            p.wait()
        last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr[-300:]
        checks = re.search(r"failures by check: (.*)", r.stdout)
        seen = checks.group(1) if checks else ""
        if expect is None:
            ok = r.returncode == 0
        else:
            ok = r.returncode == 1 and any(re.search(r"(^|, )(lt )?%s \d" % re.escape(e), seen) for e in expect)
        print("%s fault %-12s -> exit %d, %s; %s" % ("ok  " if ok else "FAIL", fault or "(none)", r.returncode, last, seen))
        passed += ok
        failed += not ok

    with tempfile.TemporaryDirectory() as tmp:
        a, b = os.path.join(tmp, "a.jsonl"), os.path.join(tmp, "b.jsonl")
        for out in (a, b):
            subprocess.run([PY, os.path.join(HERE, "gen_snippets.py"), out], check=True, capture_output=True)
        ok = filecmp.cmp(a, b, shallow=False)
        print("%s generator deterministic" % ("ok  " if ok else "FAIL"))
        passed += ok
        failed += not ok
    print("test_checker: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
