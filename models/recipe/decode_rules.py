"""The reference for the engine's decoding features (issue 14): Hugging Face's
logits processors and warpers written out in PyTorch (transformers is not
installed here), and greedy / beam search with a target prefix on top of
model.py's Marian.step.  The C engine (engine/constraints.c, sampling.c,
generate.c) must give the same ids, log-probs and alignments.

Rules, in HF's order, on the logits of a row whose output so far is `hist`
(the target prefix included; the decoder start token left out: it is pad,
never generated, so no n-gram holding it can recur):
  repetition_penalty  RepetitionPenaltyLogitsProcessor: the logit x of every id
                      in hist becomes x / p (x > 0) or x * p (x < 0), once per id
  no_repeat_ngram     NoRepeatNGramLogitsProcessor: ids completing an n-gram
                      already in hist get -inf
  min_length          MinLengthLogitsProcessor: </s> gets -inf while the decoder
                      length (start token included) is below min_length
They act on the logits before the log-softmax, for greedy and beam alike
(CTranslate2's order; HF's beam search applies them to log-probs instead).
Prefix steps are forced and exempt from the rules; a forced id's log-prob is
that of the raw logits.  Pad is never a candidate (model.logprobs).
Sampling warpers: TemperatureLogitsWarper, TopKLogitsWarper (ties with the
k-th kept), TopPLogitsWarper (min_tokens_to_keep 1).
"""
import math
import torch


def apply_rules(logits, hist, eos, rep_pen=1.0, ngram=0, min_length=0):
    """logits [V] (float32, a copy is returned) after the three rules."""
    lg = logits.clone()
    if rep_pen != 1.0 and hist:
        idx = torch.tensor(hist, dtype=torch.long)
        x = lg.gather(0, idx)
        lg.scatter_(0, idx, torch.where(x < 0, x * rep_pen, x / rep_pen))
    if ngram > 0 and len(hist) + 1 >= ngram:
        k = ngram - 1
        window = tuple(hist[len(hist) - k:]) if k else ()
        for i in range(len(hist) - k):
            if tuple(hist[i:i + k]) == window:
                lg[hist[i + k]] = -math.inf
    if len(hist) + 1 < min_length:
        lg[eos] = -math.inf
    return lg


def warp(logits, pad, temperature=1.0, top_k=0, top_p=1.0):
    """The sampling distribution [V] of ruled logits: HF's warpers, then softmax."""
    lg = logits.clone().float()
    lg[pad] = -math.inf
    lg = lg / temperature
    if top_k > 0:
        k = min(top_k, int((lg > -math.inf).sum()))
        kth = torch.topk(lg, k)[0][-1]
        lg[lg < kth] = -math.inf
    if top_p < 1.0:
        sorted_lg, sorted_idx = torch.sort(lg, descending=False)
        cum = sorted_lg.softmax(-1).cumsum(-1)
        remove = cum <= (1 - top_p)
        remove[-1] = False                         # min_tokens_to_keep = 1
        lg[sorted_idx[remove]] = -math.inf
    return torch.softmax(lg, -1)


def _logprobs(m, lg):
    return m.logprobs(lg)


@torch.no_grad()
def greedy(m, src_ids, max_length, prefix=(), rep_pen=1.0, ngram=0, min_length=0):
    """One sentence, greedy.  Returns (ids, token log-probs, score, margin): margin
    is the smallest gap between the two best ruled logits over the argmax steps."""
    src = torch.tensor([src_ids]); sm = torch.ones_like(src)
    cache = m.new_cache(m.encode(src, sm))
    tok = torch.tensor([m.pad]); ids, lps, margin = [], [], math.inf
    for t in range(max_length - 1):
        lg = m.step(tok, t, cache, sm)[0].float()
        if t + 1 == max_length - 1:
            nxt, lp = m.eos, 0.0
        elif t < len(prefix):
            nxt = prefix[t]
            lp = float(_logprobs(m, lg)[nxt])
        else:
            r = apply_rules(lg, ids, m.eos, rep_pen, ngram, min_length)
            lpr = _logprobs(m, r)
            top2 = torch.topk(lpr, 2)[0]
            margin = min(margin, float(top2[0] - top2[1]))
            nxt = int(lpr.argmax())
            lp = float(lpr[nxt])
        ids.append(nxt); lps.append(lp)
        if nxt == m.eos:
            break
        tok = torch.tensor([nxt])
    return ids, lps, float(sum(lps)), margin


@torch.no_grad()
def beam(m, src_ids, num_beams, max_length, length_penalty=1.0, prefix=(), rep_pen=1.0, ngram=0, min_length=0):
    """model.py's beam (HF v4.50+ rules, early_stopping=False) with a prefix and the
    rules.  Returns the finished hypotheses [(score, ids, token log-probs)], best first."""
    Bm, K = num_beams, 2 * num_beams
    src = torch.tensor([src_ids]); sm = torch.ones_like(src)
    enc = m.encode(src, sm).expand(Bm, -1, -1)
    sm = sm.expand(Bm, -1)
    cache = m.new_cache(enc)
    seqs = [[] for _ in range(Bm)]
    seq_lp = [[] for _ in range(Bm)]
    run = torch.full((Bm,), -1e9); run[0] = 0.0
    fin = [(-1e9, None, None)] * Bm
    unsatisfied = True
    cur = 1
    last = torch.full((Bm,), m.pad, dtype=torch.long)
    while cur < max_length:
        logits = m.step(last, cur - 1, cache, sm).float()            # [Bm,V]
        V = logits.shape[1]
        t = cur - 1
        if cur == max_length - 1:
            lp = torch.full((Bm, V), -math.inf); lp[:, m.eos] = 0
        elif t < len(prefix):
            raw = _logprobs(m, logits)
            lp = torch.full((Bm, V), -math.inf)
            lp[:, prefix[t]] = raw[:, prefix[t]]
        else:
            lp = torch.stack([_logprobs(m, apply_rules(logits[b], seqs[b], m.eos, rep_pen, ngram, min_length))
                              for b in range(Bm)])
        tot = (lp + run[:, None]).view(-1)
        top, idx = torch.topk(tot, K)
        beam_i, tok_i = idx // V, idx % V
        tok_lp = [float(lp[int(beam_i[k]), int(tok_i[k])]) for k in range(K)]
        stop = (tok_i == m.eos) | (cur + 1 >= max_length)
        cand = list(fin)
        for r in range(Bm):
            if stop[r] and unsatisfied:
                sc = float(top[r]) / (cur ** length_penalty)
                b = int(beam_i[r])
                cand.append((sc, seqs[b] + [int(tok_i[r])], seq_lp[b] + [tok_lp[r]]))
        cand.sort(key=lambda x: -x[0])
        fin = cand[:Bm]
        alive = top + stop.float() * -1e9
        run, order = torch.topk(alive, Bm)
        sel = beam_i[order]
        seqs = [seqs[int(beam_i[o])] + [int(tok_i[o])] for o in order]
        seq_lp = [seq_lp[int(beam_i[o])] + [tok_lp[int(o)]] for o in order]
        last = tok_i[order]
        m.reorder(cache, sel)
        cur += 1
        best_possible = float(run[0]) / ((cur - 1) ** length_penalty)
        all_fin = all(s is not None for _, s, _ in fin)
        worst = min(s for s, _, _ in fin) if all_fin else -1e9
        unsatisfied = unsatisfied and best_possible > worst
        if not unsatisfied or bool(stop.all()):
            break
    return [(s, ids, lps) for s, ids, lps in fin if ids is not None]


@torch.no_grad()
def alignments(m, src_ids, ids, layer=-1, heads=0):
    """Hard alignment of output ids: teacher-forced cross-attention of `layer`
    (-1 = last), the mean of its first `heads` heads (0 = all), argmax over the
    source positions (</s> included) for each output position.  Returns
    (align, margin): margin[t] is the gap between the two largest averaged weights."""
    src = torch.tensor([src_ids]); sm = torch.ones_like(src)
    tin = torch.tensor([[m.pad] + list(ids[:-1])])
    cap = {"encoder": [], "decoder": [], "cross": []}
    m.decode_full(tin, m.encode(src, sm), sm, capture=cap)
    w = cap["cross"][layer][0]                                      # [H,T,S]
    k = heads or w.shape[0]
    avg = w[:k].mean(0)                                             # [T,S]
    al = [int(a) for a in avg.argmax(-1)]
    if avg.shape[1] > 1:
        top2 = torch.topk(avg, 2, dim=-1)[0]
        margin = [float(x) for x in (top2[:, 0] - top2[:, 1])]
    else:
        margin = [1.0] * len(al)
    return al, margin
