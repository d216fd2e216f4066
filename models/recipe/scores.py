"""BLEU and chrF as the project reports them, without torch (evaluate.py and
bench/glossary_eval.py import them from here).

BLEU: NLTK's corpus_bleu (4-gram, uniform weights, no smoothing) on text
tokenized by the regex \\w+|[^\\w\\s] (words and single punctuation marks),
case-sensitive, one reference per sentence.
chrF: character 6-grams, beta = 2, whitespace removed, averaged over n = 1..6
(the definition sacreBLEU uses), statistics summed over the corpus.
"""
import re
from collections import Counter

from nltk.translate.bleu_score import corpus_bleu

TOK = re.compile(r"\w+|[^\w\s]")


def bleu(hyps, refs):
    return 100 * corpus_bleu([[TOK.findall(r)] for r in refs], [TOK.findall(h) for h in hyps])


def chrf(hyps, refs, n=6, beta=2.0):
    prec, rec = [0.0] * n, [0.0] * n
    match, hyp_tot, ref_tot = [0] * n, [0] * n, [0] * n
    for h, r in zip(hyps, refs):
        h, r = h.replace(" ", ""), r.replace(" ", "")
        for k in range(1, n + 1):
            hc = Counter(h[i:i + k] for i in range(len(h) - k + 1))
            rc = Counter(r[i:i + k] for i in range(len(r) - k + 1))
            match[k - 1] += sum((hc & rc).values())
            hyp_tot[k - 1] += sum(hc.values())
            ref_tot[k - 1] += sum(rc.values())
    for k in range(n):
        prec[k] = match[k] / hyp_tot[k] if hyp_tot[k] else 0.0
        rec[k] = match[k] / ref_tot[k] if ref_tot[k] else 0.0
    p, r = sum(prec) / n, sum(rec) / n
    return 0.0 if p + r == 0 else 100 * (1 + beta ** 2) * p * r / (beta ** 2 * p + r)
