#!/usr/bin/python3
"""Renders LibreTranslate's released web front end into this directory, as
LibreTranslate's own server would serve it, for tests/e2e/libretranslate.mjs.

    /usr/bin/python3 tests/e2e/libretranslate/render.py LIBRETRANSLATE_GIT_DIR [--ref v1.9.6]

LIBRETRANSLATE_GIT_DIR is a clone of LibreTranslate's repository (a bare one
will do: files are read with `git show REF:PATH`, nothing is checked out).
Needs Debian's python3-jinja2 (and its python3-markupsafe).

What is written (every file is LibreTranslate's, AGPL-3.0; see README.md):
  index.html   libretranslate/templates/index.html rendered with the variables
               LibreTranslate's app.py index() passes, at their defaults
  js/app.js    libretranslate/templates/app.js.template rendered as app.py's
               appjs() does (url_prefix "", no API secret, not under attack)
  static/...   the stylesheets, scripts, logo and icon font (woff2, the one
               format chromium asks for) those two name; favicon.ico (268 KB)
               and the other font formats are left out
  LICENSE      LibreTranslate's licence
The English strings are kept (gettext is the identity, as for the "en"
locale), and escaped as LibreTranslate's helpers _h (HTML) and _e (a JSON
string for the scripts) escape them.
"""
import argparse
import json
import os
import subprocess
import sys

import jinja2
from markupsafe import Markup, escape

HERE = os.path.dirname(os.path.abspath(__file__))
STATIC = [
    "css/main.css", "css/material-icons.css", "css/materialize.min.css", "css/prism.min.css",
    "js/vue@2.js", "js/materialize.min.js", "js/prism.min.js",
    "icon.svg", "fonts/MaterialIcons-Regular.woff2",
]


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, stdout=subprocess.PIPE).stdout


# LibreTranslate's locales.py helpers over Flask-Babel, for the "en" locale:
# gettext(text, **variables) is text % variables.
def gettext(text, **variables):
    return text % variables if variables else text


def gettext_escaped(text, **variables):           # locales.py gettext_escaped: for scripts
    return json.dumps(gettext(text, **variables))


def gettext_html(text, **variables):              # locales.py gettext_html: HTML-escaped
    s = str(escape(gettext(text)))
    v = {}
    for k in variables:
        v[k] = variables[k].unescape() if hasattr(variables[k], "unescape") else Markup(variables[k])
    return Markup(s if not v else s % v)


def url_for(endpoint, filename=None):
    if endpoint == "static":
        return "/static/" + filename
    if endpoint == "Main app.index":
        return "/"
    raise KeyError(endpoint)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repo", help="a clone of LibreTranslate's repository")
    ap.add_argument("--ref", default="v1.9.6", help="the release tag (default v1.9.6)")
    a = ap.parse_args()
    commit = git(a.repo, "rev-parse", a.ref + "^{commit}").decode().strip()
    version = a.ref.lstrip("v")

    def source(path):
        return git(a.repo, "show", f"{commit}:{path}")

    # Flask autoescapes .html templates, not app.js.template
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(lambda name: source("libretranslate/templates/" + name).decode()),
        autoescape=lambda name: name is not None and name.endswith(".html"))
    env.globals.update(_=gettext, _lazy=gettext, _e=gettext_escaped, _h=gettext_html, url_for=url_for)

    outputs = {}
    # app.py index(), every variable at LibreTranslate's default (default_values.py)
    outputs["index.html"] = env.get_template("index.html").render(
        frontendTimeout=500, api_keys=False, get_api_key_link="", web_version=False, version=version,
        swagger_url="/docs", available_locales=[{"code": "en", "name": "English"}], current_locale="en",
        alternate_locales=[], under_attack=False, hide_api=False, frontend_title="").encode()
    # app.py appjs(), without --require-api-key-secret
    outputs["js/app.js"] = env.get_template("app.js.template").render(
        url_prefix="", get_api_key_link="", api_secret="", bogus_api_secret="", under_attack=False).encode()
    for path in STATIC:
        outputs["static/" + path] = source("libretranslate/static/" + path)
    outputs["LICENSE"] = source("LICENSE")

    for path, data in outputs.items():
        dest = os.path.join(HERE, path)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "wb") as f:
            f.write(data)
    print(f"LibreTranslate {a.ref} ({commit}): {len(outputs)} files in {HERE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
