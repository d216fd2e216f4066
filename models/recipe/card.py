#!/usr/bin/python3
"""Write a model card (models/en-fr/README.md or models/fr-en/README.md) from
the recipe's own records: corpus sizes, the training log, pick.json (which
checkpoint was shipped), eval.json (test scores and the length guard), the
fixtures' case count and, for en-fr, the previous model's eval-v1.json.
Every figure in the card comes from those files."""
from export import LENGTH_CAP
import argparse, json, os, re

LANG = {"en": "English", "fr": "French"}


def parse_log(path):
    """The last run in train.log (train.py appends): its header, step and dev lines."""
    lines = open(path).read().splitlines()
    heads = [i for i, l in enumerate(lines) if re.match(r"(en-fr|fr-en): init ", l)]
    # a fresh warm-started run measures its dev loss at the start; a resumption (the same
    # command again after an interruption) does not, and continues the same run
    fresh = [i for i in heads if any(l.startswith("dev loss at start") for l in lines[i + 1:i + 4])]
    start = max(fresh or heads or [0])
    lines = lines[start:]
    r = {"header": lines[0] if lines and re.match(r"(en-fr|fr-en): init ", lines[0]) else "",
         "steps": [l for l in lines if l.startswith("step ")],
         "dev": [(int(re.search(r"step (\d+)", l).group(1)), float(re.search(r"loss ([\d.]+)", l).group(1)))
                 for l in lines if l.startswith("dev step ")],
         "start": None, "stop": "", "done": ""}
    for l in lines:
        m = re.match(r"dev loss at start \(from (.*)\): ([\d.]+)", l)
        if m:
            r["start"] = (m.group(1), float(m.group(2)))
        if l.startswith("early stop") or l.startswith("time budget"):
            r["stop"] = l
        if l.startswith("done: "):
            r["done"] = l
    return r


def training_facts(log):
    last = log["steps"][-1] if log["steps"] else ""
    f = {"minutes": float(re.search(r"min ([\d.]+)", last).group(1)) if last else 0.0,
         "steps": int(re.search(r"step (\d+)", last).group(1)) if last else 0,
         "epochs": int(re.search(r"epoch (\d+)", last).group(1)) if last else 0,
         "tok_s": 0}
    rates = [float(re.search(r"tok/s (\d+)", l).group(1)) for l in log["steps"]]
    f["tok_s"] = sum(rates) / max(1, len(rates))
    m = re.match(r"done: step (\d+) epoch (\d+) best dev loss ([\d.]+) minutes ([\d.]+)", log["done"])
    if m:
        f.update(steps=int(m.group(1)), epochs=int(m.group(2)), minutes=float(m.group(4)))
        # train.py measures dev loss once more when it stops; a new best there is saved as best.pt
        if log["dev"] and float(m.group(3)) < min(l for _, l in log["dev"]) - 5e-5 and \
                log["dev"][-1][0] != int(m.group(1)):
            log["dev"].append((int(m.group(1)), float(m.group(3))))
    h = log["header"]
    f["init"] = re.search(r"init (\S+),", h).group(1) if h else "random"
    f["lr"] = re.search(r"lr ([\d.e-]+),", h).group(1) if h else ""
    f["warmup"] = re.search(r"warmup (\d+)", h).group(1) if h else ""
    m0 = re.search(r"schedule from step (\d+)", h)
    f["step0"] = int(m0.group(1)) if m0 else 0
    dev = log["dev"]
    if dev:
        bi = min(range(len(dev)), key=lambda i: (dev[i][1], i))
        f["best_step"], f["best"] = dev[bi]
        f["after_best"] = len(dev) - 1 - bi
    else:
        f["best_step"], f["best"], f["after_best"] = 0, float("nan"), 0
    return f


def curve(log):
    pts = ([f"start {log['start'][1]:.3f}"] if log["start"] else []) + [f"{s}: {l:.3f}" for s, l in log["dev"]]
    return ", ".join(pts)


def stop_sentence(log, f):
    if "early stop" in log["stop"]:
        why = (f"training stopped early at step {f['steps']}: {f['after_best']} evaluations in a row "
               f"without a lower dev loss")
    elif "time budget" in log["stop"]:
        why = (f"the time budget ended the run at step {f['steps']}" +
               (f", {f['after_best']} evaluation(s) after the best" if f["after_best"] else
                ", with dev loss still falling at the last evaluation"))
    else:
        why = f"the run was stopped at step {f['steps']}" + (
            f", {f['after_best']} evaluation(s) after the best" if f["after_best"] else
            ", with dev loss still falling at the last evaluation")
    return f"Dev loss was lowest at step {f['best_step']} ({f['best']:.4f}); {why}."


def guard_section(ev, name, retrained=False):
    g = ev.get("length_guard")
    if not g:
        return ""
    rows = []
    labels = {"greedy": "greedy (C)", "beam4": "beam 4 (C)"}
    for k, v in g.items():
        if not isinstance(v, dict) or "bleu" not in v:
            continue
        if k in labels:
            label = labels[k]
        elif k.startswith("greedy_loops_no_repeat_"):
            label = (f"greedy, an output that loops decoded again with no_repeat_ngram_size "
                     f"{k.rsplit('_', 1)[1]} (PyTorch reference)")
        elif k == "greedy_copy_guard":
            label = "greedy, an output equal to its source decoded again, banned from copying it (PyTorch reference)"
        elif k.startswith("greedy_no_repeat_"):
            label = f"greedy, no_repeat_ngram_size {k.rsplit('_', 1)[1]} (PyTorch reference)"
        elif k.startswith("greedy_cap_"):
            a, b = k[len("greedy_cap_"):].split(":")
            label = f"greedy, at most ⌈{a} × source⌉ + {b} tokens"
        elif k.startswith("beam4_cap_"):
            a, b = k[len("beam4_cap_"):].split(":")
            label = f"beam 4, at most ⌈{a} × source⌉ + {b} tokens (C)"
        else:
            label = k
        ch = v.get("changed")
        rows.append(f"| {label} | {v['bleu']} | {v['chrf']} | {v['loops']} ({v['loops_pct']}%) | "
                    f"{'' if ch is None else ch} |")
    ref = g["references"]
    n = g["test_sentences"]

    def gain(base, prefix):
        b = g[base]["bleu"]
        best = max(((v["bleu"], k) for k, v in g.items() if k.startswith(prefix) and isinstance(v, dict)),
                   default=None)
        return b, best
    b1, best1 = gain("greedy", "greedy_")
    b4, best4 = gain("beam4", "beam4_")
    helps = [(k, x - b) for b, best in ((b1, best1), (b4, best4)) if best for x, k in [best] if x > b]
    cap = LENGTH_CAP.get(name)
    verdict = ("A guard raised BLEU here: " + "; ".join(f"{k} by {d:.2f}" for k, d in helps) + ". " if helps
               else "No guard raised BLEU here. ")
    if cap:
        verdict += (f"The model ships with the length cap ⌈{cap[0]} × source⌉ + {cap[1]} tokens "
                    "(generation_config.json `max_length_factor` / `max_length_extra`, applied per sentence by "
                    "mtserve unless a request's `max_length_factor` says otherwise): it cost no BLEU on this test "
                    + ("(the table above) and, on the previous weights, on the UI and everyday sets "
                       "(recipe/corpus-notes.md)" if retrained else "and on the UI and everyday sets "
                       "(recipe/corpus-notes.md)") + ". The loop guard (an output that loops "
                    "decoded again with no_repeat_ngram_size 3, request field `loop_no_repeat_ngram_size`) is off "
                    "by default: recipe/guard_eval.py measured it gaining on UI strings but costing up to 0.2 BLEU "
                    "on this test and the everyday sentences" + (" (the previous weights)" if retrained else "")
                    + ".")
    return f"""
## Length guard: outputs that loop

An output *loops* when, in its BLEU tokens, some 4-gram occurs 3 or more
times, or one token occurs 4 or more times in a row. The test references do so
{ref['loops']} times in {n} ({ref['loops_pct']}%: the lists of package
descriptions repeat themselves too). Measured by models/recipe/repeats.py on the {n} test
sentences; "changed" counts outputs that differ from the unguarded ones.

| decoding | BLEU | chrF | outputs that loop | changed |
|---|---:|---:|---:|---:|
{chr(10).join(rows)}

{verdict}
"""


def evalset_rows(old, new):
    """Old-vs-new rows of evalsets.py's figures: BLEU / chrF and untranslated per set."""
    rows = []
    for key, label in (("test-ui", "UI strings"), ("test-ui-tc", "UI strings in Title Case"),
                       ("test-everyday", "everyday sentences"),
                       ("test-everyday-tc", "everyday sentences in Title Case")):
        o, n = old.get(f"{key}.beam1"), new.get(f"{key}.beam1")
        if not (o and n):
            continue
        rows.append((f"{label} ({n['lines']}): BLEU / chrF, greedy", f"{o['bleu']} / {o['chrf']}",
                     f"**{n['bleu']}** / **{n['chrf']}**"))
        rows.append((f"{label}: untranslated", f"{o['untranslated']} ({o['untranslated_pct']}%)",
                     f"{n['untranslated']} ({n['untranslated_pct']}%)"))
    if "examples" in old and "examples" in new:
        rows.append((f"README and demo examples ({new['examples']['sentences']}): untranslated",
                     str(len(old["examples"]["untranslated"])), str(len(new["examples"]["untranslated"]))))
    return rows


def int8_section(ev):
    """--weights int8, measured by int8_quality.py (absent: nothing)."""
    q = ev.get("int8")
    if not q:
        return ""
    rows = "".join(f"| {label} | {q[k]['f32_bleu']} / {q[k]['f32_chrf']} | {q[k]['bleu']} / {q[k]['chrf']} | "
                   f"{q[k]['identical']} ({q[k]['identical_pct']}%) |\n"
                   for label, k in (("greedy", "beam1"), ("beam 4", "beam4")) if k in q)
    return f"""
## INT8 weights (`--weights int8`)

The C engine's INT8 mode ({q['scheme']}; a quarter of the F32 weight bytes per
decode step; kernel here: {q['kernel']}, every kernel gives the same bits) on
the same {ev['test_sentences']} test pairs, both decoded by the C engine
(models/recipe/int8_quality.py):

| decoding | F32 BLEU / chrF | INT8 BLEU / chrF | outputs identical to F32 |
|---|---|---|---|
{rows}"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True); ap.add_argument("--work", required=True)
    ap.add_argument("--direction", default="en-fr", choices=["en-fr", "fr-en"])
    ap.add_argument("--train", help="the training directory (train.log); default <work>/train")
    ap.add_argument("--hyp-dir", help="evaluate.py's translations; default <work>/eval")
    ap.add_argument("--pick", help="pick.json of recipe/pick.py")
    ap.add_argument("--old", help="the previous model's eval.json (with its 'training'), for old vs new")
    ap.add_argument("--fixtures", help="the fixtures directory (tests/fixtures/<model>) for the case count")
    ap.add_argument("--old-name", default="v1", help="what the card calls the previous model")
    ap.add_argument("--corpus", help="the training corpus (train/dev/test); default <work>/corpus")
    ap.add_argument("--deb-stats", help="debcorpus.py's stats.json: the corpus mixes in Debian packages (issue 53)")
    ap.add_argument("--evalsets", help="evalsets.py's figures of this model (UI and everyday sets)")
    ap.add_argument("--evalsets-old", help="evalsets.py's figures of the previous model")
    ap.add_argument("--earlier-name", help="the run this one continued (train.py --step0), between --old-name "
                                           "and this one: what the card calls it (v3)")
    ap.add_argument("--earlier", default="", help="that run in a few words (its minutes, steps, what was shipped)")
    a = ap.parse_args()
    sl, tl = a.direction.split("-")
    S, T = LANG[sl], LANG[tl]
    train_dir = a.train or f"{a.work}/train"
    hyp_dir = a.hyp_dir or f"{a.work}/eval"
    cfg = json.load(open(f"{a.model}/config.json"))
    ev = json.load(open(f"{a.model}/eval.json"))
    log = parse_log(f"{train_dir}/train.log")
    f = training_facts(log)
    corpus = a.corpus or f"{a.work}/corpus"
    n = {k: sum(1 for _ in open(f"{corpus}/{k}.{sl}")) for k in ("train", "dev", "test")}
    words = sum(len(l.split()) for l in open(f"{corpus}/train.{sl}"))
    deb = json.load(open(a.deb_stats)) if a.deb_stats else None
    es = json.load(open(a.evalsets)) if a.evalsets else None
    es_old = json.load(open(a.evalsets_old)) if a.evalsets_old else None
    gen = json.load(open(f"{a.model}/generation_config.json"))
    params = os.path.getsize(f"{a.model}/model.safetensors") // 4
    b1, b4 = ev["beam1"], ev["beam4"]
    same = ""
    tf, cf, pf = f"{hyp_dir}/test.beam1.{tl}", f"{hyp_dir}/c.beam1.{tl}", f"{hyp_dir}/c.plain.beam1.{tl}"
    if os.path.exists(tf) and os.path.exists(pf):
        t, c, p = (open(x).read().splitlines() for x in (tf, cf, pf))
        same = (f" On this test split the C engine's greedy output, decoded as the reference decodes "
                f"(`--no-placeholders --keep-title-case --copy-guard off --loop-no-repeat-ngram-size -1 "
                f"--max-length-factor 1000`), equals the reference's on {sum(x == y for x, y in zip(t, p))} of "
                f"{len(t)} lines; with mtserve's defaults (URLs and the like kept as placeholders, Title Case "
                f"folded, the guards and the length cap on) {sum(x == y for x, y in zip(t, c))} are the same.")
    cases = "the fixture cases"
    if a.fixtures and os.path.exists(f"{a.fixtures}/cases.jsonl"):
        cases = f"{sum(1 for _ in open(f'{a.fixtures}/cases.jsonl'))} fixture cases"
    pick = json.load(open(a.pick)) if a.pick and os.path.exists(a.pick) else None
    old = json.load(open(a.old)) if a.old and os.path.exists(a.old) else None
    warm = f["init"] != "random"

    if pick:
        cand = "; ".join(f"{c['name']} (step{'s' if len(c['steps']) > 1 else ''} "
                         f"{', '.join(map(str, c['steps']))}): {c['bleu']}" for c in pick["candidates"])
        w = pick["picked"]
        shipped = ("the weights of best.pt (lowest dev loss)" if w == "best" else
                   f"the average of the weights of steps {', '.join(map(str, pick['picked_steps']))}")
        ckpt_row = (f"| checkpoint | {shipped}, chosen by greedy BLEU on the {pick['sentences']} {pick['split']} "
                    f"sentences: {cand} |\n")
    else:
        ckpt_row = ""
    schedule = f"Adam, lr {f['lr']}, warm-up {f['warmup']} steps + inverse-sqrt" if f["lr"] else \
        "Adam, warm-up + inverse-sqrt"
    if warm and f["step0"]:
        how = (f"continued from {a.earlier_name} ({a.earlier}): its weights, its learning-rate schedule going on "
               f"from step {f['step0']}, fresh Adam state eased in over 100 steps, batches in a new order; for")
    elif warm:
        how = (f"continued from the previous {a.direction} model (warm restart: its weights, fresh Adam state "
               f"and a new warm-up) for")
    else:
        how = "from random initialization,"
    where = ("by train.py's clock (wall time while it ran, pauses for benchmarks included), one thread beside "
             "the other direction's run" if deb else "on 2 CPU cores")
    training = (f"{how} {f['minutes']:.0f} min {where} (bfloat16 autocast; the machine was shared), "
                f"{f['steps']} steps, {f['epochs']} full epoch{'' if f['epochs'] == 1 else 's'}, ~{f['tok_s']:.0f} tokens/s, label smoothing 0.1, "
                f"{schedule}; best dev loss {f['best']:.3f} at step {f['best_step']}")
    if warm and log["start"]:
        training += f" (from {log['start'][1]:.3f} at the start)"

    if deb:
        title = ("# en-fr: the default mtserve model" if a.direction == "en-fr" else
                 "# fr-en: French→English, beside the default en-fr")
        intro = (f"A small {S}→{T} Transformer (MarianMT layout) trained on this machine from\n"
                 f"Debian's own translations: its package descriptions and the interface strings,\n"
                 f"documentation and lexicon of {deb['packages']} Debian packages taken by name and version\n"
                 f"(models/recipe/corpus-manifest.tsv). It knows software: descriptions, menus,\n"
                 f"buttons, messages, help text, and everyday sentences of the kind those hold.\n"
                 + ("mtserve serves it by default; models/fr-en is the same recipe in the other direction."
                    if a.direction == "en-fr" else "`make run` serves it beside en-fr (the same joint "
                    "SentencePiece model: source.spm = target.spm, one vocab.json)."))
    elif a.direction == "en-fr":
        title = "# en-fr: the default mtserve model"
        intro = ("A small English→French Transformer (MarianMT layout) trained on this machine\n"
                 "from Debian's own translated package descriptions. It knows the French of\n"
                 "software package descriptions, not general French. mtserve serves it by\n"
                 "default; models/fr-en is the same recipe in the other direction.")
    else:
        title = "# fr-en: French→English, beside the default en-fr"
        intro = ("A small French→English Transformer (MarianMT layout) trained on this machine\n"
                 "from Debian's own translated package descriptions, the en-fr recipe in the\n"
                 "other direction (same corpus and split, the same joint SentencePiece model:\n"
                 "source.spm = target.spm, one vocab.json). It knows the English of software\n"
                 "package descriptions, not general English. `make run` serves it beside en-fr.")

    oldnew = ""
    on = a.old_name
    if old:
        ot = old.get("training", {})
        new_steps = (ot.get("steps", 0) + f["steps"]) if warm else f["steps"]
        if old["test_sentences"] == ev["test_sentences"]:
            same_set = f"on the same {ev['test_sentences']} test pairs, corpus, split and tokenizer"
        else:
            same_set = (f"NOT comparable: {on} on {old['test_sentences']} test pairs, this model on the first "
                        f"{ev['test_sentences']} only (a trial run)")
        lg_old, lg_new = old.get("length_guard"), ev.get("length_guard")
        rows = [("test BLEU, greedy", old["beam1"]["bleu"], f"**{b1['bleu']}**"),
                ("test chrF, greedy", old["beam1"]["chrf"], f"**{b1['chrf']}**"),
                ("test BLEU, beam 4", old["beam4"]["bleu"], f"**{b4['bleu']}**"),
                ("test chrF, beam 4", old["beam4"]["chrf"], f"**{b4['chrf']}**")]
        if es and es_old:
            rows += evalset_rows(es_old, es)
        if "best_dev_loss" in ot:
            rows.append(("best dev loss", f"{ot['best_dev_loss']:.3f}", f"{f['best']:.3f}"))
        if lg_old and lg_new:
            rows.append(("test outputs that loop, greedy / beam 4 (see below)",
                         f"{lg_old['greedy']['loops_pct']}% / {lg_old['beam4']['loops_pct']}%",
                         f"{lg_new['greedy']['loops_pct']}% / {lg_new['beam4']['loops_pct']}%"))
        if ot:
            rows.append(("training", f"{ot.get('minutes', 0)} min, {ot.get('steps', 0)} steps, {ot.get('epochs', 0)} "
                         "epochs from random init",
                         f"{on + ' + ' if warm else ''}{f['minutes']:.0f} min, {f['steps']} steps, {f['epochs']} "
                         f"epoch{'' if f['epochs'] == 1 else 's'}{f' ({new_steps} steps in all)' if warm else ''}"))
        elif warm:
            mid = f"{a.earlier_name} ({a.earlier}) + " if a.earlier_name else ""
            rows.append(("training", "(its own card, at the commit of models/Makefile's V2_COMMIT)",
                         f"{on} + {mid}{f['minutes']:.0f} min, {f['steps']} steps"))
        table = "\n".join(f"| {k} | {x} | {y} |" for k, x, y in rows)
        sets = ""
        if es and es_old:
            sets = ("\n\nUI strings and everyday sentences: the held-out packages' test sets of\n"
                    "recipe/evalsets.py, greedy, decoded by the C engine with each model's defaults;\n"
                    "\"Title Case\": the same sources in Title Case, the references as written;\n"
                    "\"untranslated\": outputs equal to their source (every reference differs from\n"
                    "its source, so a copy is always wrong).")
        oldnew = f"""
## Old and new

The model before this one ({on}, its figures kept in eval-{on}.json) and this one,
{same_set}:{sets}

| | {on} | this model |
|---|---:|---:|
{table}
"""
    stop = stop_sentence(log, f)
    if deb:
        sp = deb["splits"]
        data = (f"Debian 12 (bookworm) DDTP package descriptions (Translation-en / Translation-fr, paired by "
                f"Description-md5, twice) and {sp['train']['pairs']} pairs from the gettext catalogues, l10n "
                f"resources, documentation and lexicon of {deb['packages']} packages "
                f"(models/recipe/debcorpus.py), with Title Case and ALL CAPS copies of short pairs "
                f"(recipe/mixcorpus.py): {n['train']} train / {n['dev']} dev / {n['test']} test pairs; "
                f"{words} {S} words in train; split by package name, the UI and everyday test sets from "
                f"packages held out")
        domain = "- Domain: software and its documentation. Literature, news or dialogue come out poorly.\n"
        run, init = ("train4", "init4") if f["step0"] else ("train3", "init")
        rebuild = (f"`make -C models corpus mix {run}-{a.direction}` then `make -C models finish-{a.direction} "
                   f"TRN=work/{run}-{a.direction} CORP=work/mix-{a.direction} TOKD=work/{init}-{a.direction}` "
                   f"(Debian's /usr/bin/python3 with python3-torch 1.13, python3-sentencepiece, python3-nltk, "
                   f"python3-tqdm; the packages of recipe/corpus-manifest.tsv are downloaded by name and version and "
                   f"checked against their sha256): pick the checkpoint, export, evaluate, measure the guards, "
                   f"write the fixtures, check the C engine on them and write this card "
                   f"(models/recipe/corpus-notes.md has every step).\n"
                   f"The corpus is byte-for-byte reproducible (`make -C models corpus-check`); training resumes "
                   f"from its checkpoint if interrupted; its warm start reads the previous model and tokenizer "
                   f"from git (models/Makefile's " + ("V3_COMMIT: v3, itself continued from V2_COMMIT's v2 by "
                   f"train3-{a.direction})." if f["step0"] else "V2_COMMIT)."))
    else:
        data = (f"Debian 12 (bookworm) DDTP Translation-en / Translation-fr, paired by Description-md5; {n['train']} "
                f"train / {n['dev']} dev / {n['test']} test pairs (sentences where both sides split alike, else "
                f"paragraphs); {words} {S} words in train; split by package name")
        domain = (f"- Domain: package descriptions (\"This package provides…\" / \"Ce paquet fournit…\").\n"
                  f"  Everyday {T}, dialogue or literature come out poorly.\n")
        rebuild = (f"`make -C models corpus tokenizer train-{a.direction} finish-{a.direction}` (Debian's /usr/bin/python3\n"
                   f"with python3-torch 1.13, python3-sentencepiece, python3-nltk, python3-tqdm):\n"
                   f"train, then pick the checkpoint, export, evaluate, measure the length guard,\n"
                   f"write the fixtures, check the C engine on them and write this card.\n"
                   f"The corpus and tokenizer are byte-for-byte reproducible; training resumes from\n"
                   f"its checkpoint if interrupted."
                   + (" Its warm start reads the previous model from git (models/en-fr at commit b516e3a); see "
                      "models/Makefile." if warm else ""))
    limits = (domain + "- Small: 8k-piece vocabulary, a few million parameters, a short CPU training run.\n"
              "- Long inputs: trained on pieces of at most 128 tokens; the server splits text\n"
              "  into sentences first.")
    defaults = ""
    if deb:
        parts = (["on (generation_config.json `copy_guard`: an output equal to its source is decoded again, "
                  "banned from copying it; a request turns it off with `\"copy_guard\": false`)"]
                 if gen.get("copy_guard") else ["off. A request turns it on with `\"copy_guard\": true`"])
        if os.path.exists(f"{a.model}/copy_gate.txt"):
            parts.append("Its gate, copy_gate.txt (the words the training corpus translates: recipe/copy_gate.py), "
                         "arms it only for a sentence holding such a word, so names, numbers and codes stay as they "
                         "are (none of the 97 of recipe/right-copies.txt changes; ungated, most of them did: "
                         "\"12345\" → \"8345\", \"Linux\" → \"– Linux\")")
        if not gen.get("copy_guard"):
            parts.append("It stays off because what it writes instead of a copy is mostly not a translation either "
                         "(\"Avril\" → \"Sww\", \"Buddhism\" → \"Banc\"): on the UI strings it lowers the "
                         "untranslated count, but most of the lines it changes score lower than the copy did "
                         "(models/recipe/corpus-notes.md, \"The copy guard's gate\")")
        cg = ". ".join(parts)
        defaults = f"""
## Defaults that shape what a user sees

- Title Case input (\"Restore From Trash\") is folded to sentence case before the
  model reads it (README, \"Title Case\"), and the translation is the model's, in
  sentence case; the figures above in Title Case are with that fold, mtserve's default.
- A lone word in sentence case (\"Alarm\") is read lowercased and its translation
  capitalized (\"Alarme\"), by the same default: the figures above are with it.
- The copy guard is {cg}.
- The length cap and the loop guard: below.
"""
    card = f"""{title}

{intro}

| | |
|---|---|
| architecture | MarianMT encoder-decoder, post-norm, swish FFN, sinusoidal positions, tied embeddings |
| size | d_model {cfg['d_model']}, {cfg['encoder_layers']}+{cfg['decoder_layers']} layers, {cfg['encoder_attention_heads']} heads, FFN {cfg['encoder_ffn_dim']}, vocab {cfg['vocab_size']} (joint en+fr SentencePiece unigram), about {params/1e6:.1f}M parameters, float32 |
| data | {data} |
| training | {training} |
{ckpt_row}| test BLEU, greedy | **{b1['bleu']}** |
| test chrF, greedy | **{b1['chrf']}** |
| test BLEU, beam 4 | **{b4['bleu']}** |
| test chrF, beam 4 | **{b4['chrf']}** |

Scores: {ev['test_sentences']} held-out test pairs from packages never seen in
training ({S} source, {T} reference). BLEU is NLTK's corpus_bleu on text tokenized by the regex
`\\w+|[^\\w\\s]`, case-sensitive; chrF uses character 6-grams, beta 2,
whitespace removed. Greedy: decoded by the PyTorch reference
(models/recipe/model.py, {b1.get('decoder', 'torch')}); beam 4: decoded by
{'the C engine (build/mtserve translate)' if b4.get('decoder') == 'c' else 'the PyTorch reference'},
which tests/test_engine.c proves identical to the reference (greedy and all
beam-4 hypotheses on {cases}).{same}
{oldnew}{defaults}
## Training: where dev loss stopped improving

{stop} Dev loss (label smoothing off) every {(log['dev'][1][0] - log['dev'][0][0]) if len(log['dev']) > 1 else 400} steps
({train_dir}/train.log): {curve(log)}.
{guard_section(ev, a.direction, retrained=bool(deb))}{int8_section(ev)}
## Limits
{limits}

## Rebuild
{rebuild}
"""
    with open(f"{a.model}/README.md", "w") as fh:
        fh.write(card)
    print(card)


if __name__ == "__main__":
    main()
