#!/usr/bin/python3
"""The length guard: how many test outputs loop, and what a guard would change.

A test output *loops* when, in its words and punctuation marks (the BLEU
tokenization, regex \\w+|[^\\w\\s]), some 4-gram occurs 3 or more times
(occurrences may overlap), or one token occurs 4 or more times in a row.
The references are measured the same way: the rate natural to the data.

Measured on the test split, unguarded and with each guard:
  greedy                 build/mtserve translate --beam 1 (ids equal to the
                         PyTorch reference's: tests/test_engine.c)
  greedy, no_repeat N    HF's no_repeat_ngram_size on the target ids (a token that
                         would complete an N-gram already in the output is banned),
                         decoded by the PyTorch reference.  mtserve has no such
                         option.  Exact shortcut: an output whose unguarded ids hold
                         no repeated N-gram is the guarded output too (the ban never
                         touched its argmax), so only the others are decoded again.
  greedy, cap A:B        a per-sentence length limit: at most ceil(A x source
                         tokens) + B generated tokens (</s> included), i.e.
                         max_length = that + 1 (HF: the start token counts).  For
                         greedy this is exactly the unguarded ids cut there with
                         </s> forced last (the steps before do not depend on it).
  beam 4, cap A:B        build/mtserve translate --beam 4 --max-length L, one run
                         per distinct L (exact, not a truncation).
  greedy, loops -> no_repeat N
                         only the outputs that loop decoded again with
                         no_repeat_ngram_size N (PyTorch reference): a guard that
                         fires on detection (issue 53).
  greedy, copy guard     only the outputs equal to their source decoded again,
                         the token that would go on copying the source banned
                         while the output is a prefix of it (greedy_no_copy).
The server can set max_length per request, not per sentence of a split text.

Writes the figures under "length_guard" in --out (eval.json; other keys kept).
"""
import argparse, json, math, os, sys, time
from collections import Counter, defaultdict
import torch
sys.path.insert(0, os.path.dirname(__file__))
from evaluate import TOK, bleu, chrf, c_translate, read_split
from load import load_dir
from marian_tok import MarianTok

DEFINITION = ("an output loops when, in its BLEU tokens (regex \\w+|[^\\w\\s]), some 4-gram occurs >= 3 times "
              "(overlapping) or one token occurs >= 4 times in a row")


def loops(text, n=4, times=3, run=4):
    """(4-gram >= 3 times, token run >= 4) for one output."""
    t = TOK.findall(text)
    c = Counter(tuple(t[i:i + n]) for i in range(len(t) - n + 1))
    ng = bool(c) and max(c.values()) >= times
    rn = any(all(t[i + k] == t[i] for k in range(1, run)) for i in range(len(t) - run + 1))
    return ng, rn


def loop_stats(texts):
    k = [loops(x) for x in texts]
    ng, rn, any_ = sum(a for a, _ in k), sum(b for _, b in k), sum(a or b for a, b in k)
    return {"loops": any_, "loops_pct": round(100 * any_ / max(1, len(texts)), 2),
            "ngram3": ng, "run4": rn}


def repeated_ngram(ids, n):
    seen = set()
    for i in range(len(ids) - n + 1):
        g = tuple(ids[i:i + n])
        if g in seen:
            return True
        seen.add(g)
    return False


@torch.no_grad()
def greedy_no_repeat(m, src_ids, max_length, n):
    """Greedy decoding of one sentence with HF's no_repeat_ngram_size = n (the
    n-grams are taken over the decoder input ids, start token included, as HF's
    NoRepeatNGramLogitsProcessor sees them)."""
    src = torch.tensor([src_ids]); sm = torch.ones_like(src)
    cache = m.new_cache(m.encode(src, sm))
    seq, out = [m.pad], []
    for t in range(max_length - 1):
        lg = m.step(torch.tensor([seq[-1]]), t, cache, sm).float()[0]
        lg[m.pad] = -math.inf
        if len(seq) >= n - 1:
            prefix = seq[len(seq) - n + 1:]
            for i in range(len(seq) - n + 1):
                if seq[i:i + n - 1] == prefix:
                    lg[seq[i + n - 1]] = -math.inf
        if t + 1 == max_length - 1:
            lg[:] = -math.inf; lg[m.eos] = 0
        nxt = int(lg.argmax())
        out.append(nxt); seq.append(nxt)
        if nxt == m.eos:
            break
    return out


@torch.no_grad()
def greedy_no_copy(m, src_ids, max_length, copy=None):
    """Greedy decoding that may not give the source back (issue 53's copy guard):
    while the output so far is the source's first tokens (the vocabulary is joint,
    so source and target ids are the same pieces), the token that would go on
    copying it is banned; the next best is taken instead.  copy: other ids to
    ban so (default src_ids; [] = plain greedy)."""
    if copy is not None:
        return _greedy_no_copy(m, src_ids, max_length, copy)
    return _greedy_no_copy(m, src_ids, max_length, src_ids)


@torch.no_grad()
def _greedy_no_copy(m, src_ids, max_length, copy):
    src = torch.tensor([src_ids]); sm = torch.ones_like(src)
    cache = m.new_cache(m.encode(src, sm))
    seq, out = [m.pad], []
    for t in range(max_length - 1):
        lg = m.step(torch.tensor([seq[-1]]), t, cache, sm).float()[0]
        lg[m.pad] = -math.inf
        if out == copy[:len(out)] and len(out) < len(copy):
            lg[copy[len(out)]] = -math.inf
        if t + 1 == max_length - 1:
            lg[:] = -math.inf; lg[m.eos] = 0
        nxt = int(lg.argmax())
        out.append(nxt); seq.append(nxt)
        if nxt == m.eos:
            break
    return out


def cap_of(n_src, a, b):
    return math.ceil(a * n_src) + b          # generated tokens, </s> included


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True); ap.add_argument("--corpus", required=True)
    ap.add_argument("--direction", default="en-fr", choices=["en-fr", "fr-en"])
    ap.add_argument("--out", required=True, help="eval.json to add length_guard to")
    ap.add_argument("--hyp-dir", help="evaluate.py's translations: test.beam4.<tgt> is reused if there")
    ap.add_argument("--split", default="test", help="the corpus files to measure (issue 53: test-ui, test-everyday)")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--no-repeat", default="3,4", help="no_repeat_ngram_size values to try (greedy; '' none)")
    ap.add_argument("--caps", default="1.5:10,2:10,3:10", help="A:B length caps to try on greedy ('' none)")
    ap.add_argument("--beam-cap", default="", help="A:B cap for the beam-4 run (default: 2:10 en-fr, 1.5:10 fr-en; none: no such run)")
    ap.add_argument("--mtserve", default="../build/mtserve")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    sl, tl = a.direction.split("-")
    src, ref = read_split(a.corpus, a.split, a.direction, a.limit)
    tok = MarianTok(a.model)
    N = len(src)

    def row(texts, base=None, **extra):
        r = {"bleu": round(bleu(texts, ref), 2), "chrf": round(chrf(texts, ref), 2), **loop_stats(texts)}
        if base is not None:
            r["changed"] = sum(x != y for x, y in zip(texts, base))
        r.update(extra)
        return r

    res = {"definition": DEFINITION, "test_sentences": N, "references": loop_stats(ref)}
    t0 = time.time()
    g = c_translate(a.mtserve, a.model, src, 1, a.max_length, a.threads, json_out=True)
    g_text = [x["text"] for x in g]
    g_ids = [x["ids"] for x in g]
    n_src = [len(x["source_ids"]) for x in g]
    py_same = sum(tok.decode(i) == t for i, t in zip(g_ids, g_text))
    res["greedy"] = row(g_text, seconds=round(time.time() - t0, 1), decoder="c")
    print("greedy", res["greedy"], f"(python detokenizer equal on {py_same}/{N})", flush=True)
    # a line that is only a placeholder (a URL) comes back as it is, no ids: max(1, ...)
    longest = max(range(N), key=lambda i: len(g_ids[i]) / max(1, n_src[i]))
    res["greedy"]["longest_ratio"] = {"line": longest + 1, "source_tokens": n_src[longest],
                                      "output_tokens": len(g_ids[longest])}

    # no_repeat_ngram_size: the PyTorch reference, only where the ban can bite
    m = None
    for n in [int(x) for x in a.no_repeat.split(",") if x]:
        hit = [i for i in range(N) if repeated_ngram([tok.pad] + g_ids[i], n)]
        if hit and m is None:
            m, _ = load_dir(a.model)
        t0 = time.time()
        texts = list(g_text)
        for i in hit:
            texts[i] = tok.decode(greedy_no_repeat(m, g[i]["source_ids"], a.max_length, n))
        res[f"greedy_no_repeat_{n}"] = row(texts, g_text, decoded_again=len(hit), seconds=round(time.time() - t0, 1),
                                           decoder="torch")
        print(f"no_repeat {n}", res[f"greedy_no_repeat_{n}"], flush=True)

    # issue 53: only the outputs that loop (the definition above) decoded again with
    # no_repeat_ngram_size N, and only the outputs equal to their source decoded
    # again with the copy guard (greedy_no_copy): a guard that fires on detection
    for n in [int(x) for x in a.no_repeat.split(",") if x]:
        hit = [i for i in range(N) if any(loops(g_text[i]))]
        if hit and m is None:
            m, _ = load_dir(a.model)
        texts = list(g_text)
        for i in hit:
            texts[i] = tok.decode(greedy_no_repeat(m, g[i]["source_ids"], a.max_length, n))
        res[f"greedy_loops_no_repeat_{n}"] = row(texts, g_text, decoded_again=len(hit), decoder="torch")
        print(f"loops -> no_repeat {n}", res[f"greedy_loops_no_repeat_{n}"], flush=True)
    hit = [i for i in range(N) if g_text[i].strip() == src[i].strip() and g[i]["source_ids"]]
    if hit and m is None:
        m, _ = load_dir(a.model)
    texts = list(g_text)
    for i in hit:
        texts[i] = tok.decode(greedy_no_copy(m, g[i]["source_ids"], a.max_length))
    res["greedy_copy_guard"] = row(texts, g_text, decoded_again=len(hit), decoder="torch",
                                   untranslated=sum(x.strip() == y.strip() for x, y in zip(texts, src)))
    print("copy guard", res["greedy_copy_guard"], flush=True)

    # length caps on greedy: the unguarded ids cut, </s> forced last
    for spec in [x for x in a.caps.split(",") if x]:
        ca, cb = map(float, spec.split(":"))
        texts, cut = [], 0
        for ids, k, t in zip(g_ids, n_src, g_text):
            c = cap_of(k, ca, int(cb))
            if len(ids) > c:
                cut += 1
                texts.append(tok.decode(ids[:c - 1] + [tok.eos]))
            else:
                texts.append(t)
        res[f"greedy_cap_{spec}"] = row(texts, g_text, cut=cut)
        print(f"greedy cap {spec}", res[f"greedy_cap_{spec}"], flush=True)

    # beam 4, unguarded (evaluate.py's output if it is there) and capped
    bfile = f"{a.hyp_dir}/{a.split}.beam4.{tl}" if a.hyp_dir else None
    if bfile and os.path.exists(bfile) and len(open(bfile).read().splitlines()) == N:
        b_text = open(bfile).read().splitlines()
    else:
        b_text = c_translate(a.mtserve, a.model, src, 4, a.max_length, a.threads)
    res["beam4"] = row(b_text, decoder="c")
    print("beam4", res["beam4"], flush=True)
    spec = a.beam_cap or ("2:10" if a.direction == "en-fr" else "1.5:10")
    if spec != "none":
        ca, cb = map(float, spec.split(":"))
        groups = defaultdict(list)
        for i, k in enumerate(n_src):
            groups[min(cap_of(k, ca, int(cb)) + 1, a.max_length)].append(i)
        t0 = time.time()
        texts = [None] * N
        for L, idx in sorted(groups.items()):
            for i, t in zip(idx, c_translate(a.mtserve, a.model, [src[i] for i in idx], 4, L, a.threads)):
                texts[i] = t
        res[f"beam4_cap_{spec}"] = row(texts, b_text, runs=len(groups), seconds=round(time.time() - t0, 1),
                                       decoder="c")
        print(f"beam4 cap {spec}", res[f"beam4_cap_{spec}"], flush=True)
    ex = [i for i in range(N) if any(loops(g_text[i]))][:3]
    res["examples"] = [{"line": i + 1, "source": src[i][:300], "greedy": g_text[i][:300]} for i in ex]

    ev = json.load(open(a.out)) if os.path.exists(a.out) else {}
    ev["length_guard"] = res
    with open(a.out, "w") as f:
        json.dump(ev, f, indent=2, ensure_ascii=False); f.write("\n")
    print(f"length_guard written to {a.out}")


if __name__ == "__main__":
    main()
