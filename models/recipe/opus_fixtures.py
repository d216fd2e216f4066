#!/usr/bin/python3
"""Random-weight OPUS-MT models of the real published configurations, and what
the PyTorch reference makes of them (tests/fixtures/opus-mt/README.md).

The models themselves are never committed: tests/gen_opus.c regenerates them
at build time, in every file form (safetensors F32 and F16, pytorch_model.bin,
Marian's model.npz), from one deterministic formula that this file implements
identically in numpy.  What this recipe writes, and the repository keeps:

  tests/fixtures/opus-mt/<model>/expected.json   the reference's outputs
  tests/fixtures/opus-mt/<model>/pt/             torch.save's small members
                                                  (data.pkl, version) and a
                                                  manifest of its storages
  tests/fixtures/opus-mt/<model>/gen.json        what gen_opus changes in the
                                                  published config (layers)
  tests/fixtures/opus-mt/variants/*              the synthetic third model's
                                                  config and vocabularies

Run from the repository root with Debian's python3 (torch 1.13, numpy,
sentencepiece, yaml):

    /usr/bin/python3 models/recipe/opus_fixtures.py [--models en-mg,...] [--no-verify]
    /usr/bin/python3 models/recipe/opus_fixtures.py --pt-only DIR [--work W]   (only DIR/pt/, see --help)

It then builds and runs build/tests/gen_opus and checks every file it writes
against this formula (torch.load, numpy, yaml), and that pytorch_model.bin
and model.npz are byte for byte what torch.save and numpy.savez write.

THE FORMULA.  For a tensor called N (its Hugging Face name) and the flat
row-major index i of an element (HF layout: [out][in] for Linear weights):

    x = splitmix64(fnv1a64(N) + i)            (uint64 arithmetic, wrapping)
    u = (float)((int64)(x >> 40) - 2^23) * 2^-23      exact, in [-1, 1)
    value = offset + (float)(u * gain)         float32 products and sums

fnv1a64: offset basis 0xcbf29ce484222325, prime 0x100000001b3, over N's
bytes.  splitmix64(s): z = s + 0x9e3779b97f4a7c15; z = (z ^ z>>30) *
0xbf58476d1ce4e5b9; z = (z ^ z>>27) * 0x94d049bb133111eb; z ^ z>>31.
gain (a float32, computed in double then rounded) and offset by kind:

    token tables, lm_head           gain 0.1
    final_logits_bias               gain 0.2
    Linear weight [out][in]         gain 5/sqrt(in)
    Linear bias                     gain 0.01
    LayerNorm weight                offset 1, gain 0.1
    LayerNorm bias                  gain 0.01

The last row of every vocabulary-sized tensor (token tables, lm_head) and the
last entry of final_logits_bias are 0: that is the <pad> row, last in every
vocabulary here, which Marian's files do not have (convert_marian_to_pytorch
appends it as zeros).  Positions are never stored.

Why 5/sqrt(in): with calmer Linear weights (0.5/sqrt(in) ... 3/sqrt(in)) the
sublayers are small against the residual stream, the decoder state barely
depends on the step or the source, and with tied embeddings every source
decodes to one token repeated; beam candidates then tie to 1e-5.  At
5/sqrt(in) the outputs depend on the source and change from step to step.

MARGINS.  Every kept source sentence has, under every weight set, a greedy
top-1/top-2 gap above MIN_GREEDY_GAP and a margin above MIN_BEAM_MARGIN for
every comparison that decides the beam search (beam_trace), both relative to
max(1, max |logit|) of the step; the reference's own float32 error against
float64 (f64_error) is logged beside them, and the tolerance of the logits
comparison is 20 times it (at least 1e-4).
"""
import argparse, collections, json, math, os, shutil, struct, subprocess, sys, tempfile, time, zipfile
import numpy as np
import torch
import sentencepiece as spm
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Marian   # noqa: E402

FIX = "tests/fixtures/opus-mt"
MODELS = ["en-mg", "tc-big-fr-en", "variants"]
MAX_LENGTH = 24
NUM_BEAMS = 4
N_CASES = 4
MIN_GREEDY_GAP = 1e-3       # greedy top-1/top-2 logit gap, relative to max(1, max |logit|) of the step
MIN_BEAM_MARGIN = 3e-4      # beam decisions (sums of log-probs), relative to the same scale
PT_PREFIX = "pytorch_model"

# Source sentences tried in order; the first N_CASES whose every decision
# (greedy and beam, every weight set) has a margin above the thresholds above are kept.
SOURCES = {
    "en": ["The weather is nice today, so we are going to the beach.",
           "This package provides the documentation for the library.",
           "Where is the nearest railway station?",
           "She bought three apples and a loaf of bread at the market.",
           "Please restart the computer after installing the update.",
           "The children were playing football in the park.",
           "I would like a cup of coffee, please.",
           "Madagascar is a large island in the Indian Ocean.",
           "Rice is the most important food in many countries.",
           "The meeting has been moved to Thursday afternoon.",
           "He reads a book every evening before going to sleep.",
           "Water boils at 100 degrees Celsius.",
           "Can you help me carry these boxes upstairs?",
           "The museum opens at nine o'clock in the morning.",
           "Farmers need more rain this year.",
           "Thank you very much for your kind letter.",
           "The road to the village was closed after the storm.",
           "My sister works as a nurse in the capital.",
           "We planted mango trees behind the school.",
           "The bus leaves every twenty minutes.",
           "Do not forget to close the window when you leave.",
           "The doctor said that I should drink more water.",
           "Our team won the match by two goals.",
           "This program converts images into text files.",
           "The river is very wide near the town.",
           "They are building a new bridge over the valley.",
           "Grandmother tells us stories about the old days.",
           "How much does this shirt cost?",
           "The library is closed on Sundays.",
           "A small boat was waiting at the harbour.",
           "Students must register before the end of the month.",
           "The soup is too hot to eat right now.",
           "He forgot his umbrella on the train.",
           "Lemurs live only on the island of Madagascar.",
           "The price of vanilla rose sharply last year.",
           "Turn left at the second traffic light.",
           "The new version fixes several security problems.",
           "I have been learning to play the guitar.",
           "The market is busy on Friday mornings.",
           "Please write your name at the top of the page.",
           "The cat is sleeping under the table.",
           "It rained all night, and the streets are flooded.",
           "She sent me a photograph of the mountains.",
           "The factory employs more than five hundred people.",
           "We will visit our cousins during the holidays.",
           "This tool checks the spelling of a document.",
           "The baby started to cry when the lights went out.",
           "Fresh fish is sold near the beach every morning."],
    "fr": ["Il fait beau aujourd'hui, nous allons donc à la plage.",
           "Ce paquet fournit la documentation de la bibliothèque.",
           "Où est la gare la plus proche ?",
           "Elle a acheté trois pommes et une baguette au marché.",
           "Veuillez redémarrer l'ordinateur après la mise à jour.",
           "Les enfants jouaient au football dans le parc.",
           "Je voudrais une tasse de café, s'il vous plaît.",
           "Madagascar est une grande île de l'océan Indien.",
           "Le riz est l'aliment le plus important dans de nombreux pays.",
           "La réunion a été déplacée à jeudi après-midi.",
           "Il lit un livre chaque soir avant de dormir.",
           "L'eau bout à 100 degrés Celsius.",
           "Peux-tu m'aider à porter ces cartons à l'étage ?",
           "Le musée ouvre à neuf heures du matin.",
           "Les agriculteurs ont besoin de plus de pluie cette année.",
           "Merci beaucoup pour votre aimable lettre.",
           "La route du village a été fermée après la tempête.",
           "Ma sœur travaille comme infirmière dans la capitale.",
           "Nous avons planté des manguiers derrière l'école.",
           "Le bus part toutes les vingt minutes.",
           "N'oublie pas de fermer la fenêtre en partant.",
           "Le médecin a dit que je devrais boire plus d'eau.",
           "Notre équipe a gagné le match par deux buts.",
           "Ce programme convertit les images en fichiers texte.",
           "La rivière est très large près de la ville.",
           "Ils construisent un nouveau pont au-dessus de la vallée.",
           "Grand-mère nous raconte des histoires d'autrefois.",
           "Combien coûte cette chemise ?",
           "La bibliothèque est fermée le dimanche.",
           "Un petit bateau attendait au port.",
           "Les étudiants doivent s'inscrire avant la fin du mois.",
           "La soupe est trop chaude pour être mangée maintenant.",
           "Il a oublié son parapluie dans le train.",
           "Les lémuriens ne vivent que sur l'île de Madagascar.",
           "Le prix de la vanille a fortement augmenté l'an dernier.",
           "Tournez à gauche au deuxième feu.",
           "La nouvelle version corrige plusieurs problèmes de sécurité.",
           "J'apprends à jouer de la guitare.",
           "Le marché est animé le vendredi matin.",
           "Veuillez écrire votre nom en haut de la page.",
           "Le chat dort sous la table.",
           "Il a plu toute la nuit et les rues sont inondées.",
           "Elle m'a envoyé une photo des montagnes.",
           "L'usine emploie plus de cinq cents personnes.",
           "Nous rendrons visite à nos cousins pendant les vacances.",
           "Cet outil vérifie l'orthographe d'un document.",
           "Le bébé s'est mis à pleurer quand la lumière s'est éteinte.",
           "Du poisson frais est vendu près de la plage chaque matin."],
}
SOURCE_LANG = {"en-mg": "en", "tc-big-fr-en": "fr", "variants": "en"}

# ---- the formula ---------------------------------------------------------------------------
M64 = (1 << 64) - 1


def fnv1a64(name):
    h = 0xCBF29CE484222325
    for b in name.encode("utf-8"):
        h = ((h ^ b) * 0x100000001B3) & M64
    return h


def formula(name, n, gain, offset=0.0, start=0):
    """Elements start .. start+n-1 of tensor `name` (float32)."""
    with np.errstate(over="ignore"):
        z = np.arange(start, start + n, dtype=np.uint64) + np.uint64(fnv1a64(name))
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    u = ((z >> np.uint64(40)).astype(np.int64) - (1 << 23)).astype(np.float32) * np.float32(2.0 ** -23)
    v = u * np.float32(gain)
    if offset:
        v = np.float32(offset) + v
    return v.astype(np.float32)


def gain_of(kind, shape):
    """(gain, offset) of a tensor kind, the gain rounded to float32 as in C."""
    if kind in ("table", "head"):
        return np.float32(0.1), 0.0
    if kind == "logits_bias":
        return np.float32(0.2), 0.0
    if kind == "linear":
        return np.float32(5.0 / math.sqrt(shape[1])), 0.0
    if kind == "bias":
        return np.float32(0.01), 0.0
    if kind == "ln_weight":
        return np.float32(0.1), 1.0
    if kind == "ln_bias":
        return np.float32(0.01), 0.0
    raise ValueError(kind)


def generate(name, kind, shape):
    gain, offset = gain_of(kind, shape)
    n = int(np.prod(shape))
    out = np.empty(n, dtype=np.float32)
    step = 1 << 22
    for s in range(0, n, step):
        out[s:s + step] = formula(name, min(step, n - s), gain, offset, s)
    out = out.reshape(shape)
    if kind in ("table", "head"):
        out[-1, :] = 0
    elif kind == "logits_bias":
        out[0, -1] = 0
    return out


# ---- the tensors of a config -----------------------------------------------------------------
def dims(cfg):
    shared = cfg.get("share_encoder_decoder_embeddings", True)
    V = cfg["vocab_size"]
    return dict(d=cfg["d_model"], V=V, Vt=V if shared else cfg.get("decoder_vocab_size", V), shared=shared,
                tied=cfg.get("tie_word_embeddings", True), ln_emb=cfg.get("normalize_embedding", False))


def _attn(prefix, d):
    out = []
    for p in ("k_proj", "v_proj", "q_proj", "out_proj"):          # HF's registration order
        out += [(f"{prefix}.{p}.weight", "linear", (d, d)), (f"{prefix}.{p}.bias", "bias", (d,))]
    return out


def _ln(prefix, d):
    return [(f"{prefix}.weight", "ln_weight", (d,)), (f"{prefix}.bias", "ln_bias", (d,))]


def _ffn(prefix, d, f):
    return [(f"{prefix}.fc1.weight", "linear", (f, d)), (f"{prefix}.fc1.bias", "bias", (f,)),
            (f"{prefix}.fc2.weight", "linear", (d, f)), (f"{prefix}.fc2.bias", "bias", (d,))]


def tensor_specs(cfg):
    """The generated tensors in Hugging Face's state_dict order: [(name, kind, shape)]."""
    k = dims(cfg)
    d = k["d"]
    out = [("final_logits_bias", "logits_bias", (1, k["Vt"]))]
    if k["shared"]:
        out.append(("model.shared.weight", "table", (k["V"], d)))
    else:
        out.append(("model.encoder.embed_tokens.weight", "table", (k["V"], d)))
    for i in range(cfg["encoder_layers"]):
        p = f"model.encoder.layers.{i}"
        out += _attn(p + ".self_attn", d) + _ln(p + ".self_attn_layer_norm", d) + \
            _ffn(p, d, cfg["encoder_ffn_dim"]) + _ln(p + ".final_layer_norm", d)
    if k["ln_emb"]:
        out += _ln("model.encoder.layernorm_embedding", d)
    if not k["shared"]:
        out.append(("model.decoder.embed_tokens.weight", "table", (k["Vt"], d)))
    for i in range(cfg["decoder_layers"]):
        p = f"model.decoder.layers.{i}"
        out += _attn(p + ".self_attn", d) + _ln(p + ".self_attn_layer_norm", d) + \
            _attn(p + ".encoder_attn", d) + _ln(p + ".encoder_attn_layer_norm", d) + \
            _ffn(p, d, cfg["decoder_ffn_dim"]) + _ln(p + ".final_layer_norm", d)
    if k["ln_emb"]:
        out += _ln("model.decoder.layernorm_embedding", d)
    if not k["tied"]:
        out.append(("lm_head.weight", "head", (k["Vt"], d)))
    return out


def build_tensors(cfg):
    return collections.OrderedDict((n, generate(n, kind, shape)) for n, kind, shape in tensor_specs(cfg))


def hf_aliases(cfg):
    """Names HF's state_dict() also holds for the shared tensors: alias -> generated name."""
    k = dims(cfg)
    out = {}
    if k["shared"]:
        out["model.encoder.embed_tokens.weight"] = "model.shared.weight"
        out["model.decoder.embed_tokens.weight"] = "model.shared.weight"
    if k["tied"]:
        out["lm_head.weight"] = "model.shared.weight" if k["shared"] else "model.decoder.embed_tokens.weight"
    return out


# ---- configs and vocabularies ------------------------------------------------------------
def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f, object_pairs_hook=collections.OrderedDict)


def model_config(name, fixture=None):
    """The config gen_opus writes: the fixture's config.json with gen.json's layers
    (fixture: another fixture directory than FIX/name, e.g. --pt-only's)."""
    d = fixture or f"{FIX}/{name}"
    cfg = load_json(f"{d}/config.json")
    gen = load_json(f"{d}/gen.json")
    if "layers" in gen:
        for key in ("encoder_layers", "decoder_layers", "num_hidden_layers"):
            cfg[key] = gen["layers"]
    return cfg


def spm_dir(name):
    gen = load_json(f"{FIX}/{name}/gen.json")
    return os.path.normpath(os.path.join(FIX, name, gen.get("spm_dir", ".")))


class Tok:
    """MarianTokenizer (v4 rules, as models/recipe/marian_tok.py) with separate
    vocabularies: source pieces -> vocab.json, target ids -> target_vocab.json."""

    def __init__(self, name):
        d, s = f"{FIX}/{name}", spm_dir(name)
        self.src = spm.SentencePieceProcessor(model_file=f"{s}/source.spm")
        self.tgt = spm.SentencePieceProcessor(model_file=f"{s}/target.spm")
        self.vocab = load_json(f"{d}/vocab.json")
        tv = f"{d}/target_vocab.json"
        self.tvocab = load_json(tv) if os.path.exists(tv) else self.vocab
        self.inv = {i: p for p, i in self.tvocab.items()}
        self.unk, self.eos = self.vocab["<unk>"], self.vocab["</s>"]
        self.t_special = {self.tvocab[t] for t in ("</s>", "<unk>", "<pad>")}

    def encode(self, text):
        return [self.vocab.get(p, self.unk) for p in self.src.encode(text, out_type=str)] + [self.eos]

    def decode(self, ids):
        pieces = [self.inv.get(i, "<unk>") for i in ids if i not in self.t_special]
        return self.tgt.decode_pieces(pieces).strip() if pieces else ""


def write_variants():
    """tests/fixtures/opus-mt/variants: en-mg's widths and spm models, separate
    vocabularies of different sizes, untied lm_head, gelu, normalize_embedding,
    no embedding scale, 1024 positions."""
    out = f"{FIX}/variants"
    os.makedirs(out, exist_ok=True)
    joint = load_json(f"{FIX}/en-mg/vocab.json")

    def vocab_of(spm_path):
        # The pieces of one spm model that the published joint vocabulary has (those its
        # training data produced), in spm order: </s> 0, <unk> 1, ..., <pad> last.
        sp = spm.SentencePieceProcessor(model_file=spm_path)
        v = collections.OrderedDict([("</s>", 0), ("<unk>", 1)])
        for i in range(sp.get_piece_size()):
            p = sp.id_to_piece(i)
            if p not in v and p in joint:
                v[p] = len(v)
        v["<pad>"] = len(v)
        return v

    src = vocab_of(f"{FIX}/en-mg/source.spm")
    tgt = vocab_of(f"{FIX}/en-mg/target.spm")
    assert len(src) != len(tgt)
    cfg = load_json(f"{FIX}/en-mg/config.json")
    Vs, Vt = len(src), len(tgt)
    over = dict(encoder_layers=1, decoder_layers=1, num_hidden_layers=1, vocab_size=Vs, decoder_vocab_size=Vt,
                share_encoder_decoder_embeddings=False, tie_word_embeddings=False, activation_function="gelu",
                normalize_embedding=True, scale_embedding=False, max_position_embeddings=1024,
                pad_token_id=tgt["<pad>"], decoder_start_token_id=tgt["<pad>"], bad_words_ids=[[tgt["<pad>"]]],
                eos_token_id=tgt["</s>"], forced_eos_token_id=tgt["</s>"])
    for k, v in over.items():
        cfg[k] = v
    cfg = collections.OrderedDict(sorted(cfg.items()))
    with open(f"{out}/config.json", "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    with open(f"{out}/tokenizer_config.json", "w") as f:
        json.dump({"target_lang": "mg", "source_lang": "en", "separate_vocabs": True}, f)
    for fname, v in (("vocab.json", src), ("target_vocab.json", tgt)):
        with open(f"{out}/{fname}", "w", encoding="utf-8") as f:
            json.dump(v, f, ensure_ascii=False)
    with open(f"{out}/gen.json", "w") as f:
        # the Marian form is refused by its options (gelu) before any tensor is read: its
        # model.npz holds special:model.yml alone (218 MB less to generate)
        json.dump({"spm_dir": "../en-mg", "marian_weights": False}, f)
        f.write("\n")
    print(f"variants: vocab_size {Vs}, decoder_vocab_size {Vt}, pad {tgt['<pad>']} (source pad {src['<pad>']})")


# ---- the reference ------------------------------------------------------------------------
def reference(cfg, tensors):
    c = dict(cfg)
    c["dropout"] = 0.0
    m = Marian(c)
    sd = {n: torch.from_numpy(np.ascontiguousarray(t)) for n, t in tensors.items()}
    missing, unexpected = m.load_state_dict(sd, strict=False)
    assert not unexpected and not missing, (missing, unexpected)
    return m.eval()


def scale_of(row):
    f = row[torch.isfinite(row)]
    return max(1.0, float(f.abs().max()))


@torch.no_grad()
def greedy_trace(m, src, max_len):
    """model.greedy's rules for one sentence, recording each decision's margin."""
    st = torch.tensor([src]); sm = torch.ones_like(st)
    cache = m.new_cache(m.encode(st, sm))
    tok = torch.full((1,), m.pad, dtype=torch.long)
    out, gaps, first = [], [], None
    for t in range(max_len - 1):
        lg = m.step(tok, t, cache, sm).float()[0]
        if t == 0:
            first = lg.clone()
        lg[m.pad] = -math.inf
        if t + 1 == max_len - 1:
            out.append(m.eos)
            break
        top = lg.topk(2)
        gaps.append(float(top.values[0] - top.values[1]) / scale_of(lg))
        nxt = int(top.indices[0])
        out.append(nxt)
        if nxt == m.eos:
            break
        tok = torch.tensor([nxt])
    return out, gaps, first


@torch.no_grad()
def beam_trace(m, src_ids, num_beams, max_length, length_penalty=1.0):
    """model.beam's search, step by step, recording the margin of every comparison
    whose outcome decides the result: which num_beams candidates that do not stop
    go on (the num_beams-th against the next); when candidates stop, which of them
    may finish (rank num_beams against the next, when one of the two stops) and,
    when num_beams or more of the K = 2 * num_beams kept ones stop, which K are kept;
    which finished hypotheses are kept, the early-stop test, and the best against
    the second.  Orders that change nothing (within the beams that go on, or among
    candidates that are dropped anyway) are not margins."""
    Bm, K = num_beams, 2 * num_beams
    src = torch.tensor([src_ids]); sm = torch.ones_like(src)
    enc = m.encode(src, sm).expand(Bm, -1, -1)
    sm = sm.expand(Bm, -1)
    cache = m.new_cache(enc)
    seqs = [[] for _ in range(Bm)]
    run = torch.full((Bm,), -1e9); run[0] = 0.0
    fin = [(-1e9, None)] * Bm
    unsatisfied, cur, margins = True, 1, []
    last = torch.full((Bm,), m.pad, dtype=torch.long)

    def gap(a, b, scale):
        a, b = float(a), float(b)
        if math.isfinite(a) and math.isfinite(b) and a > -5e8 and b > -5e8:
            margins.append((a - b) / scale)
    while cur < max_length:
        logits = m.step(last, cur - 1, cache, sm)
        scale = scale_of(logits.float())
        lp = m.logprobs(logits)
        if cur == max_length - 1:
            lp[:] = -math.inf; lp[:, m.eos] = 0
        V = lp.shape[1]
        tot = (lp + run[:, None]).view(-1)
        top, idx = torch.topk(tot, K + 1)
        beam_i, tok_i = idx // V, idx % V
        stop = (tok_i == m.eos) | (cur + 1 >= max_length)
        if int(stop[:K].sum()) >= Bm:
            gap(top[K - 1], top[K], scale)
        if bool(stop[Bm - 1]) or bool(stop[Bm]):
            gap(top[Bm - 1], top[Bm], scale)
        alive_vals = [float(top[j]) for j in range(K + 1) if not stop[j]]
        if len(alive_vals) > Bm:
            gap(alive_vals[Bm - 1], alive_vals[Bm], scale)
        top, idx, beam_i, tok_i, stop = top[:K], idx[:K], beam_i[:K], tok_i[:K], stop[:K]
        cand = list(fin)
        for r in range(Bm):
            if stop[r] and unsatisfied:
                sc = float(top[r]) / ((cur + 1 - 1) ** length_penalty)
                cand.append((sc, seqs[int(beam_i[r])] + [int(tok_i[r])]))
        cand.sort(key=lambda x: -x[0])
        if len(cand) > Bm and cand[Bm][1] is not None:
            gap(cand[Bm - 1][0], cand[Bm][0], scale)
        fin = cand[:Bm]
        alive = top + stop.float() * -1e9
        run, order = torch.topk(alive, Bm)
        sel = beam_i[order]
        seqs = [seqs[int(beam_i[o])] + [int(tok_i[o])] for o in order]
        last = tok_i[order]
        m.reorder(cache, sel)
        cur += 1
        best_possible = float(run[0]) / ((cur - 1) ** length_penalty)
        all_fin = all(s is not None for _, s in fin)
        worst = min(s for s, _ in fin) if all_fin else -1e9
        if all_fin:
            margins.append(abs(best_possible - worst) / scale if best_possible > -5e8 else math.inf)
        unsatisfied = unsatisfied and best_possible > worst
        if not unsatisfied or bool(stop.all()):
            break
    done = [(s, ids) for s, ids in fin if ids is not None]
    if len(done) > 1:
        margins.append((done[0][0] - done[1][0]) / scale)
    return done, margins


def fixed_ids(V, eos, unk, pad):
    ids = {eos, unk, pad} | {round(k * (V - 1) / 28) for k in range(29)}
    return sorted(ids)


def run_case(m, src, fids):
    greedy, gaps, first = greedy_trace(m, src, MAX_LENGTH)
    hyps, margins = beam_trace(m, src, NUM_BEAMS, MAX_LENGTH)
    f = first.clone()
    f[m.pad] = -math.inf
    res = {"greedy_ids": greedy, "beam_ids": hyps[0][1], "beam_score": hyps[0][0],
           "first_step": {"argmax": int(f.argmax()), "logsumexp": float(torch.logsumexp(f.double(), 0)),
                          "max_abs": scale_of(f), "logits": [float(first[i]) for i in fids]}}
    return res, min(gaps) if gaps else math.inf, min(margins) if margins else math.inf, hyps


def cross_check(m, src, res, hyps):
    """The traced searches decide exactly as model.py's greedy and beam."""
    st = torch.tensor([src]); sm = torch.ones_like(st)
    assert res["greedy_ids"] == m.greedy(st, sm, MAX_LENGTH)[0], "greedy_trace departs from model.greedy"
    ref = m.beam(src, NUM_BEAMS, MAX_LENGTH)
    assert [(round(s, 6), i) for s, i in hyps] == [(round(s, 6), i) for s, i in ref], "beam_trace departs"


def to_f16(tensors):
    return collections.OrderedDict((n, t.astype(np.float16).astype(np.float32)) for n, t in tensors.items())


def weight_sets(name, cfg, tensors):
    """The result sets of expected.json: (set name, config, tensors)."""
    sets = [("f32", cfg, tensors), ("f16", cfg, to_f16(tensors))]
    if not cfg.get("scale_embedding", False):
        # Marian always multiplies embeddings by sqrt(dim-emb): a model.npz of this model
        # means scale_embedding true (convert_marian_to_pytorch sets it so).
        mc = dict(cfg)
        mc["scale_embedding"] = True
        sets.append(("marian", mc, tensors))
    return sets


def f64_error(cfg, tensors, cases):
    """max over every teacher-forced step of the greedy outputs of
    max_v |logit_f32 - logit_f64| / max(1, max_v |logit_f64|) (the f64 model keeps
    model.py's float32 softmax in attention)."""
    m32 = reference(cfg, tensors)
    m64 = reference(cfg, tensors).double()
    worst = 0.0
    with torch.no_grad():
        for src, greedy in cases:
            st = torch.tensor([src]); sm = torch.ones_like(st)
            tin = torch.tensor([[m32.pad] + greedy[:-1]])
            a = m32.decode_full(tin, m32.encode(st, sm), sm)[0].double()
            b = m64.decode_full(tin, m64.encode(st, sm), sm)[0]
            rel = (a - b).abs().max(-1).values / b.abs().max(-1).values.clamp(min=1)
            worst = max(worst, float(rel.max()))
    return worst


def expected_for(name, log):
    cfg = model_config(name)
    tok = Tok(name)
    tensors = build_tensors(cfg)
    k = dims(cfg)
    assert cfg["pad_token_id"] == k["Vt"] - 1 and tok.tvocab["<pad>"] == k["Vt"] - 1
    assert tok.vocab["<pad>"] == k["V"] - 1 and tok.tvocab["</s>"] == cfg["eos_token_id"]
    fids = fixed_ids(k["Vt"], cfg["eos_token_id"], tok.tvocab["<unk>"], cfg["pad_token_id"])
    sets = [(s, c, reference(c, t)) for s, c, t in weight_sets(name, cfg, tensors)]
    cases, kept = [], {s: [] for s, _, _ in sets}
    stats = {s: {"min_greedy_gap": math.inf, "min_beam_margin": math.inf} for s, _, _ in sets}
    rejected = []
    for text in SOURCES[SOURCE_LANG[name]]:
        src = tok.encode(text)
        results, ok = {}, True
        for s, _, m in sets:
            res, g, b, hyps = run_case(m, src, fids)
            results[s] = (res, g, b, hyps)
            ok &= g > MIN_GREEDY_GAP and b > MIN_BEAM_MARGIN
            if not ok:
                break
        if not ok:
            rejected.append((text, {s: (round(r[1], 6), round(r[2], 6)) for s, r in results.items()}))
            continue
        for s, _, m in sets:
            cross_check(m, src, results[s][0], results[s][3])
        cases.append({"text": text, "src_ids": src})
        for s in results:
            res, g, b, _ = results[s]
            res["greedy_text"] = tok.decode(res["greedy_ids"])
            kept[s].append(res)
            stats[s]["min_greedy_gap"] = min(stats[s]["min_greedy_gap"], g)
            stats[s]["min_beam_margin"] = min(stats[s]["min_beam_margin"], b)
        if len(cases) == N_CASES:
            break
    assert len(cases) == N_CASES, f"{name}: only {len(cases)} sources pass the margin test: {rejected}"
    for text, why in rejected:
        log(f"  rejected: {text!r}: (greedy gap, beam margin) {why}")
    err = f64_error(cfg, tensors, [(c["src_ids"], r["greedy_ids"]) for c, r in zip(cases, kept["f32"])])
    tol = max(1e-4, 20 * err)
    log(f"{name}: {len(rejected)} sources rejected for a greedy gap <= {MIN_GREEDY_GAP} or a beam margin <= "
        f"{MIN_BEAM_MARGIN}; f32 vs f64 "
        f"logits max rel err {err:.2e}; tolerance {tol:.1e}")
    for s in stats:
        log(f"  {s}: min greedy top-1/top-2 gap {stats[s]['min_greedy_gap']:.4g}, min beam margin "
            f"{stats[s]['min_beam_margin']:.4g} (relative to max(1, max |logit|))")
    forms = {"safetensors-f32": "f32", "safetensors-f16": "f16", "pytorch": "f32",
             "marian": "marian" if "marian" in kept else "f32"}
    exp = collections.OrderedDict([
        ("model", name), ("max_length", MAX_LENGTH), ("num_beams", NUM_BEAMS),
        ("d_model", k["d"]), ("vocab_size", k["V"]), ("decoder_vocab_size", k["Vt"]),
        ("encoder_layers", cfg["encoder_layers"]), ("decoder_layers", cfg["decoder_layers"]),
        ("tolerance", {"logit_rel": tol, "score_rel": tol,
                       "note": "first-step logits and logsumexp: |c - ref| <= logit_rel * max_abs (max(1, max |logit|) "
                               "of that step); beam score: |c - ref| <= score_rel * max(1, |ref|); argmax and every "
                               "id identical"}),
        ("fixed_ids", fids),
        ("forms", forms),
        ("cases", cases),
        ("results", collections.OrderedDict(
            (s, {"min_greedy_gap": stats[s]["min_greedy_gap"], "min_beam_margin": stats[s]["min_beam_margin"],
                 "cases": kept[s]}) for s in kept)),
        ("f64_rel_err", err),
    ])
    with open(f"{FIX}/{name}/expected.json", "w", encoding="utf-8") as f:
        json.dump(exp, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return cfg, tensors


# ---- torch.save's skeleton ------------------------------------------------------------------
def hf_metadata(cfg):
    """state_dict()._metadata as HF's MarianMTModel has it (every module, version 1)."""
    k = dims(cfg)
    mods = ["", "model"]
    if k["shared"]:
        mods.append("model.shared")

    def attn(p):
        return [p] + [f"{p}.{x}" for x in ("k_proj", "v_proj", "q_proj", "out_proj")]
    for side, n in (("encoder", cfg["encoder_layers"]), ("decoder", cfg["decoder_layers"])):
        mods += [f"model.{side}", f"model.{side}.embed_tokens", f"model.{side}.embed_positions",
                 f"model.{side}.layers"]
        for i in range(n):
            p = f"model.{side}.layers.{i}"
            mods.append(p)
            mods += attn(p + ".self_attn")
            if side == "encoder":
                mods += [p + ".self_attn_layer_norm", p + ".activation_fn"]
            else:
                mods += [p + ".activation_fn", p + ".self_attn_layer_norm"]
                mods += attn(p + ".encoder_attn") + [p + ".encoder_attn_layer_norm"]
            mods += [p + ".fc1", p + ".fc2", p + ".final_layer_norm"]
        if k["ln_emb"]:
            mods.append(f"model.{side}.layernorm_embedding")
    mods.append("lm_head")
    return collections.OrderedDict((m, {"version": 1}) for m in mods)


def hf_state_dict(cfg, tensors):
    """The state dict HF's save_pretrained hands torch.save: HF's order, the tied
    names as views of one storage, no positions."""
    alias = hf_aliases(cfg)
    pt = {n: torch.from_numpy(np.ascontiguousarray(t)) for n, t in tensors.items()}
    sd = collections.OrderedDict()
    for n, _, _ in tensor_specs(cfg):
        if n == "model.decoder.layers.0.self_attn.k_proj.weight" and "model.decoder.embed_tokens.weight" in alias:
            sd["model.decoder.embed_tokens.weight"] = pt[alias["model.decoder.embed_tokens.weight"]]
        sd[n] = pt[n]
        if n == "model.shared.weight":
            sd["model.encoder.embed_tokens.weight"] = pt[n]
    if "lm_head.weight" in alias:
        sd["lm_head.weight"] = pt[alias["lm_head.weight"]]
    sd._metadata = hf_metadata(cfg)
    return sd


def write_pt_skeleton(name, cfg, tensors, work, out=None):
    """torch.save the state dict once; keep its small members and a manifest in
    out (default FIX/name/pt).  Returns the path of torch.save's whole file."""
    sd = hf_state_dict(cfg, tensors)
    path = f"{work}/{name}.{PT_PREFIX}.bin"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{work}/{PT_PREFIX}.bin"
    torch.save(sd, tmp)
    os.replace(tmp, path)
    ptr_name = {}
    for n, t in sd.items():
        ptr_name.setdefault(t.data_ptr(), n)
    # storage key -> tensor: read the pickle's persistent ids through a restricted unpickler
    keys = storage_keys(path)
    out = out or f"{FIX}/{name}/pt"
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    members = []
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            rel = info.filename.split("/", 1)[1]
            if rel.startswith("data/"):
                key = rel[5:]
                tname = keys[key]
                t = sd[tname]
                assert t.dtype == torch.float32 and info.file_size == 4 * t.numel()
                members.append({"name": info.filename, "tensor": ptr_name[t.data_ptr()], "dtype": "F32",
                                "numel": t.numel()})
            else:
                data = z.read(info)
                fname = rel.replace("/", "_")
                with open(f"{out}/{fname}", "wb") as f:
                    f.write(data)
                members.append({"name": info.filename, "file": fname, "size": len(data)})
    manifest = {"torch": torch.__version__, "prefix": PT_PREFIX, "members": members,
                "state_dict": [{"name": n, "storage": ptr_name[t.data_ptr()]} for n, t in sd.items()]}
    with open(f"{out}/manifest.json", "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    return path


def storage_keys(path):
    """{storage key: first tensor name} from data.pkl, without loading any storage."""
    import pickle

    class U(pickle.Unpickler):
        def find_class(self, mod, name):
            if mod == "collections" and name == "OrderedDict":
                return collections.OrderedDict
            if mod == "torch._utils" and name == "_rebuild_tensor_v2":
                return lambda storage, *a: storage
            if mod == "torch" and name.endswith("Storage"):
                return name
            raise pickle.UnpicklingError(f"{mod}.{name}")

        def persistent_load(self, pid):
            return pid[2]                       # ('storage', type, key, location, numel)

    with zipfile.ZipFile(path) as z:
        sd = U(z.open(f"{PT_PREFIX}/data.pkl")).load()
    out = {}
    for n, key in sd.items():
        out.setdefault(key, n)
    return out


# ---- Marian's names (for the checks) ----------------------------------------------------------
MARIAN_LAYER = {"self_attn.q_proj": "self_Wq", "self_attn.k_proj": "self_Wk", "self_attn.v_proj": "self_Wv",
                "self_attn.out_proj": "self_Wo", "self_attn_layer_norm": "self_Wo_ln",
                "encoder_attn.q_proj": "context_Wq", "encoder_attn.k_proj": "context_Wk",
                "encoder_attn.v_proj": "context_Wv", "encoder_attn.out_proj": "context_Wo",
                "encoder_attn_layer_norm": "context_Wo_ln", "fc1": "ffn_W1", "fc2": "ffn_W2",
                "final_layer_norm": "ffn_ffn_ln"}


def marian_tensors(cfg, tensors):
    """What model.npz holds, from the HF tensors (convert_marian_to_pytorch.py, read backwards)."""
    k = dims(cfg)
    out = {}
    for n, t in tensors.items():
        if n == "final_logits_bias":
            out["decoder_ff_logit_out_b"] = t[:, :-1]
        elif n == "model.shared.weight":
            out["Wemb"] = t[:-1]
        elif n == "model.encoder.embed_tokens.weight":
            out["encoder_Wemb"] = t[:-1]
        elif n == "model.decoder.embed_tokens.weight":
            out["decoder_Wemb"] = t[:-1]
        elif n == "lm_head.weight":
            out["decoder_ff_logit_out_W"] = np.ascontiguousarray(t[:-1].T)
        elif ".layernorm_embedding." in n:
            side = n.split(".")[1]
            out[f"{side}_emb_ln_{'scale' if n.endswith('weight') else 'bias'}_pre"] = t.reshape(1, -1)
        else:
            parts = n.split(".")                 # model.encoder.layers.0.self_attn.q_proj.weight
            side, i, mod, leaf = parts[1], int(parts[3]), ".".join(parts[4:-1]), parts[-1]
            mname = MARIAN_LAYER[mod]
            if mname.endswith("_ln"):
                mname += "_scale" if leaf == "weight" else "_bias"
            elif leaf == "bias":
                mname = mname[:-2] + mname[-2:].replace("W", "b")
            arr = np.ascontiguousarray(t.T) if t.ndim == 2 else t.reshape(1, -1)
            out[f"{side}_l{i + 1}_{mname}"] = arr
    assert k["shared"] or "Wemb" not in out
    return out


# ---- verification of gen_opus's output ------------------------------------------------------------
def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        dt = {"F32": np.float32, "F16": np.float16}[e["dtype"]]
        out[name] = np.frombuffer(data[b:end], dtype=dt).reshape(e["shape"])
    return header, out


def same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def verify(name, cfg, tensors, gen_dir, pt_ref, log):
    alias = hf_aliases(cfg)
    # safetensors: F32 and F16, the tied duplicates dropped (model.shared.weight kept)
    for form, conv in (("safetensors-f32", lambda t: t), ("safetensors-f16", lambda t: t.astype(np.float16))):
        header, st = read_safetensors(f"{gen_dir}/{form}/model.safetensors")
        assert set(st) == set(tensors), (form, set(st) ^ set(tensors))
        bad = [n for n, t in tensors.items() if not same_bits(st[n], conv(t))]
        assert not bad, (form, bad[:5])
        c = load_json(f"{gen_dir}/{form}/config.json")
        assert c["encoder_layers"] == cfg["encoder_layers"] and c["torch_dtype"] == (
            "float16" if form.endswith("f16") else "float32")
    log(f"  safetensors F32/F16: {len(tensors)} tensors bit-identical to the formula")
    # pytorch_model.bin: byte-identical to torch.save's, and torch.load gives the state dict
    pt = f"{gen_dir}/pytorch/pytorch_model.bin"
    with open(pt, "rb") as f1, open(pt_ref, "rb") as f2:
        same = f1.read() == f2.read()
    assert same, f"{pt} differs from torch.save's {pt_ref}"
    sd = torch.load(pt)
    names = set(tensors) | set(alias)
    assert set(sd) == names, set(sd) ^ names
    for n, t in sd.items():
        assert same_bits(t.numpy(), tensors[alias.get(n, n)]), n
    for a, b in alias.items():
        assert sd[a].data_ptr() == sd[b].data_ptr(), (a, b)
    assert not os.path.exists(f"{gen_dir}/pytorch/model.safetensors")
    log(f"  pytorch_model.bin: byte-identical to torch.save's ({os.path.getsize(pt)} bytes); torch.load: "
        f"{len(sd)} names, tied ones sharing storage")
    # model.npz: numpy.load, Marian names and layout, and byte-identical to numpy.savez
    weights = load_json(f"{FIX}/{name}/gen.json").get("marian_weights", True)
    mt = marian_tensors(cfg, tensors) if weights else {}
    npz = np.load(f"{gen_dir}/marian/model.npz")
    assert set(npz.files) == set(mt) | {"special:model.yml"}, set(npz.files) ^ set(mt)
    for n, t in mt.items():
        assert same_bits(npz[n], t), n
    ymlraw = npz["special:model.yml"]
    assert ymlraw.dtype == np.int8 and ymlraw[-1] == 0
    mcfg = yaml.load("".join(chr(x) for x in ymlraw)[:-1], Loader=yaml.BaseLoader)
    k = dims(cfg)
    assert mcfg["dim-vocabs"] == [str(k["V"] - 1), str(k["Vt"] - 1)], mcfg["dim-vocabs"]
    assert mcfg["enc-depth"] == str(cfg["encoder_layers"]) and mcfg["dim-emb"] == str(k["d"])
    assert mcfg["transformer-ffn-activation"] == cfg["activation_function"]
    with tempfile.TemporaryDirectory(dir=gen_dir) as td:
        ref = f"{td}/ref.npz"
        items = collections.OrderedDict((n, mt[n]) for n in sorted(mt))
        items["special:model.yml"] = ymlraw
        np.savez(ref, **items)
        with open(ref, "rb") as f1, open(f"{gen_dir}/marian/model.npz", "rb") as f2:
            assert f1.read() == f2.read(), "model.npz differs from numpy.savez's"
    dec = yaml.load(open(f"{gen_dir}/marian/decoder.yml"), Loader=yaml.BaseLoader)
    tok = Tok(name)
    vfiles = dec["vocabs"]
    for vf, v in zip(vfiles, (tok.vocab, tok.tvocab)):
        y = yaml.load(open(f"{gen_dir}/marian/{vf}", encoding="utf-8"), Loader=yaml.BaseLoader)
        want = {p: str(i) for p, i in v.items() if p != "<pad>"}
        assert y == want, (vf, len(y), len(want))
    log(f"  model.npz: {len(mt)} Marian tensors + special:model.yml, byte-identical to numpy.savez's; "
        f"vocabularies {vfiles} equal to the HF ones without <pad>")


def build_gen(b):
    subprocess.run(["make", "-s", f"B={b}", f"{b}/tests/gen_opus"], check=True)
    return f"{b}/tests/gen_opus"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--work", default="build/opus-recipe")
    ap.add_argument("--build", default="build")
    ap.add_argument("--no-verify", action="store_true")
    ap.add_argument("--pt-only", metavar="FIXTURE",
                    help="only write FIXTURE/pt/ for the fixture directory FIXTURE (a copy of FIX/<model>, e.g. "
                         "with other layers in gen.json: bench/load_forms.py); torch.save's whole file is kept as "
                         "WORK/<basename of FIXTURE>.pytorch_model.bin and its path printed")
    a = ap.parse_args()
    torch.set_num_threads(2)
    if a.pt_only:
        fx = a.pt_only.rstrip("/")
        cfg = model_config(None, fx)
        print(write_pt_skeleton(os.path.basename(fx), cfg, build_tensors(cfg), a.work, f"{fx}/pt"))
        return
    logs = []

    def log(s):
        print(s, flush=True)
        logs.append(s)
    names = a.models.split(",")
    if "variants" in names:
        write_variants()
    done = []
    for name in names:
        t0 = time.time()
        cfg, tensors = expected_for(name, log)
        pt_ref = write_pt_skeleton(name, cfg, tensors, a.work)
        log(f"{name}: expected.json and pt/ written in {time.time() - t0:.0f} s")
        done.append((name, cfg, tensors, pt_ref))
    if a.no_verify:
        return
    gen = build_gen(a.build)
    for name, cfg, tensors, pt_ref in done:
        out = f"{a.work}/{name}"
        shutil.rmtree(out, ignore_errors=True)
        t0 = time.time()
        subprocess.run([gen, f"{FIX}/{name}", out], check=True)
        dt = time.time() - t0
        size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(out) for f in fs)
        log(f"{name}: gen_opus wrote {size / 1e6:.0f} MB in {dt:.1f} s; checking")
        verify(name, cfg, tensors, out, pt_ref, log)
        shutil.rmtree(out)
        os.remove(pt_ref)
    with open(f"{a.work}/report.txt", "w") as f:
        f.write("\n".join(logs) + "\n")


if __name__ == "__main__":
    main()
