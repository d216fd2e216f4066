#!/usr/bin/python3
"""Train the default en-fr model.  Resumable: a checkpoint is written every few
minutes and on exit; running the same command again continues the run.

Schedule: linear warm-up then inverse square root; label smoothing 0.1;
early stopping on dev loss; a wall-clock budget (total over all resumptions).
Mixed precision: bfloat16 autocast where the CPU supports it, else float32.
"""
import argparse, json, math, os, random, sys, time
import torch
import torch.nn.functional as F
from tqdm import tqdm
sys.path.insert(0, os.path.dirname(__file__))
from model import Marian, default_config
from marian_tok import MarianTok


def load_pairs(corpus, split, tok, max_len, src="en", tgt="fr"):
    with open(f"{corpus}/{split}.{src}") as fs, open(f"{corpus}/{split}.{tgt}") as ft:
        srcs, tgts = fs.read().splitlines(), ft.read().splitlines()
    out = []
    for e, f in tqdm(list(zip(srcs, tgts)), desc=f"tokenize {split} {src}-{tgt}", unit="pair"):
        s, t = tok.encode(e), tok.encode(f, target=True)
        if len(s) <= max_len and len(t) <= max_len:
            out.append((s, t))
    return out


def batches(pairs, max_tokens, rng):
    """Length-bucketed batches of about max_tokens (source + target) tokens."""
    order = sorted(range(len(pairs)), key=lambda i: (len(pairs[i][0]), len(pairs[i][1]), i))
    out, cur, longest = [], [], 0
    for i in order:
        n = len(pairs[i][0]) + len(pairs[i][1])
        if cur and (len(cur) + 1) * max(longest, n) > max_tokens:
            out.append(cur); cur, longest = [], 0
        cur.append(i); longest = max(longest, n)
    if cur:
        out.append(cur)
    rng.shuffle(out)
    return out


def collate(pairs, idx, pad):
    S = max(len(pairs[i][0]) for i in idx); T = max(len(pairs[i][1]) for i in idx)
    src = torch.full((len(idx), S), pad); tin = torch.full((len(idx), T), pad); lab = torch.full((len(idx), T), pad)
    for r, i in enumerate(idx):
        s, t = pairs[i]
        src[r, :len(s)] = torch.tensor(s)
        lab[r, :len(t)] = torch.tensor(t)
        tin[r, 1:len(t)] = torch.tensor(t[:-1])          # decoder input: pad (start) + target shifted right
    return src, (src != pad).long(), tin, lab


def loss_fn(model, batch, smoothing, pad):
    src, sm, tin, lab = batch
    logits = model(src, sm, tin).float()
    logits[..., pad] = -1e4    # pad is never a target: keep it out of the normalizer as at inference
    return F.cross_entropy(logits.view(-1, logits.shape[-1]), lab.view(-1), ignore_index=pad,
                           label_smoothing=smoothing), int((lab != pad).sum())


def bf16_ok():
    try:
        flags = open("/proc/cpuinfo").read()
        return "avx512_bf16" in flags or "amx_bf16" in flags
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True); ap.add_argument("--tok", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--minutes", type=float, default=85)
    ap.add_argument("--max-tokens", type=int, default=6000)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=1500)
    ap.add_argument("--patience", type=int, default=4)
    ap.add_argument("--eval-every", type=int, default=400)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1234)
    # The joint en+fr SentencePiece model serves both directions unchanged.
    ap.add_argument("--direction", default="en-fr", choices=["en-fr", "fr-en"])
    # Warm start from an exported model directory (its model.safetensors): the
    # schedule restarts (fresh Adam state, a new warm-up); the run is new.
    ap.add_argument("--init", help="exported model directory to start from")
    ap.add_argument("--step0", type=int, default=0,
                    help="the schedule goes on from this step of the run that made --init (its lr, not a new "
                         "warm-up), Adam's new moments eased in over 100 steps")
    # Every evaluation also keeps the weights as last-N.pt (N = 0..keep-1, a
    # ring), so the last checkpoints can be averaged (recipe/average.py).
    ap.add_argument("--keep", type=int, default=4)
    a = ap.parse_args()
    src_lang, tgt_lang = a.direction.split("-")
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    os.makedirs(a.out, exist_ok=True)
    tok = MarianTok(a.tok)
    V = len(tok.vocab)
    cfg = default_config(vocab_size=V, decoder_vocab_size=V, pad_token_id=tok.pad, decoder_start_token_id=tok.pad,
                         bad_words_ids=[[tok.pad]], eos_token_id=tok.eos, forced_eos_token_id=tok.eos)
    model = Marian(cfg)
    if a.init and not os.path.exists(f"{a.out}/checkpoint.pt"):
        import safetensors_io
        st0, _ = safetensors_io.read(f"{a.init}/model.safetensors")
        missing, unexpected = model.load_state_dict(st0, strict=False)
        assert not unexpected and all(k == "final_logits_bias" for k in missing), (missing, unexpected)
        print(f"initialized from {a.init}", flush=True)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, betas=(0.9, 0.98), eps=1e-9)
    ck_path = f"{a.out}/checkpoint.pt"
    st = dict(step=0, epoch=0, elapsed=0.0, best=math.inf, bad=0, batch_pos=0)
    if os.path.exists(ck_path):
        ck = torch.load(ck_path)
        model.load_state_dict(ck["model"]); opt.load_state_dict(ck["opt"]); st = ck["state"]
        print(f"resumed at step {st['step']} epoch {st['epoch']} ({st['elapsed']/60:.1f} min done)", flush=True)
    train = load_pairs(a.corpus, "train", tok, a.max_len, src_lang, tgt_lang)
    dev = load_pairs(a.corpus, "dev", tok, a.max_len, src_lang, tgt_lang)
    dev_b = batches(dev, a.max_tokens, random.Random(0))
    use_bf16 = bf16_ok()
    log = open(f"{a.out}/train.log", "a")
    def say(msg):
        print(msg, flush=True); log.write(msg + "\n"); log.flush()
    say(f"{a.direction}: init {a.init or 'random'}, lr {a.lr}, warmup {a.warmup}, threads {a.threads}"
        + (f", schedule from step {a.step0}, seed {a.seed}" if a.step0 else ""))
    say(f"params {sum(p.numel() for p in model.parameters())}, train {len(train)} pairs, dev {len(dev)}, bf16 {use_bf16}")

    def save(path=ck_path):
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "state": st, "config": cfg}, path + ".tmp")
        os.replace(path + ".tmp", path)

    def dev_loss():
        model.eval(); tot = n = 0
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=use_bf16):
            for b in dev_b:
                l, k = loss_fn(model, collate(dev, b, tok.pad), 0.0, tok.pad); tot += float(l) * k; n += k
        model.train(); return tot / n

    if a.init and st["step"] == 0:
        say(f"dev loss at start (from {a.init}): {dev_loss():.4f}")
    t0 = time.time() - st["elapsed"]; last_ck = time.time(); stop = False
    tok_count, tok_t = 0, time.time()
    while not stop:
        ep_batches = batches(train, a.max_tokens, random.Random(a.seed + st["epoch"]))
        bar = tqdm(ep_batches[st["batch_pos"]:], desc=f"epoch {st['epoch']}", unit="batch", mininterval=30)
        for b in bar:
            k = st["step"] + 1 + a.step0
            lr = a.lr * min(k / a.warmup, math.sqrt(a.warmup / k)) * min(1.0, (st["step"] + 1) / (100 if a.step0 else 1))
            for g in opt.param_groups:
                g["lr"] = lr
            batch = collate(train, b, tok.pad)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=use_bf16):
                loss, k = loss_fn(model, batch, 0.1, tok.pad)
            opt.zero_grad(); loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            with torch.no_grad():
                model.model.shared.weight[tok.pad].zero_()
            st["step"] += 1; st["batch_pos"] += 1
            tok_count += int((batch[0] != tok.pad).sum()) + k
            st["elapsed"] = time.time() - t0
            if st["step"] % 100 == 0:
                rate = tok_count / (time.time() - tok_t); tok_count, tok_t = 0, time.time()
                say(f"step {st['step']} epoch {st['epoch']} loss {float(loss):.4f} lr {lr:.2e} tok/s {rate:.0f} min {st['elapsed']/60:.1f}")
            if st["step"] % a.eval_every == 0:
                dl = dev_loss()
                ring = st["step"] // a.eval_every % a.keep
                torch.save({"model": model.state_dict(), "config": cfg, "dev_loss": dl, "step": st["step"]},
                           f"{a.out}/last-{ring}.pt")
                if dl < st["best"]:
                    st["best"], st["bad"] = dl, 0
                    torch.save({"model": model.state_dict(), "config": cfg, "dev_loss": dl, "step": st["step"]}, f"{a.out}/best.pt")
                else:
                    st["bad"] += 1
                say(f"dev step {st['step']} loss {dl:.4f} best {st['best']:.4f} bad {st['bad']}")
                if st["bad"] >= a.patience:
                    say("early stop: dev loss stopped improving"); stop = True; break
            if time.time() - last_ck > 240:
                save(); last_ck = time.time()
            if st["elapsed"] > a.minutes * 60:
                say("time budget reached"); stop = True; break
        else:
            st["epoch"] += 1; st["batch_pos"] = 0
    dl = dev_loss()
    if dl < st["best"]:
        st["best"] = dl
        torch.save({"model": model.state_dict(), "config": cfg, "dev_loss": dl, "step": st["step"]}, f"{a.out}/best.pt")
    save()
    say(f"done: step {st['step']} epoch {st['epoch']} best dev loss {st['best']:.4f} minutes {st['elapsed']/60:.1f}")


if __name__ == "__main__":
    main()
