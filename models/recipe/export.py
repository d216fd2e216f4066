#!/usr/bin/python3
"""Export a checkpoint to the Hugging Face MarianMT directory layout:
config.json, generation_config.json, model.safetensors, source.spm, target.spm,
vocab.json, tokenizer_config.json, special_tokens_map.json."""
import argparse, filecmp, json, os, shutil, sys
import torch
sys.path.insert(0, os.path.dirname(__file__))
import safetensors_io

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
TORCH_NAME = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}


# mtserve's length cap per direction (generation_config.json max_length_factor /
# max_length_extra, engine/mt.h): measured by repeats.py on the UI, everyday and
# package-description test sets (recipe/corpus-notes.md), where it cost no BLEU
LENGTH_CAP = {"en-fr": (2, 10), "fr-en": (1.5, 10)}
# Its loop guard (generation_config.json loop_no_repeat_ngram_size: an output that
# loops decoded again with that n-gram ban) is not written: recipe/guard_eval.py
# measured it gaining on UI strings but costing up to 0.2 BLEU on the package
# descriptions and everyday sentences (recipe/corpus-notes.md), so it stays off by
# default; a request turns it on with "loop_no_repeat_ngram_size": 3
LOOP_NGRAM = None
# The copy guard (generation_config.json copy_guard: an output equal to its source
# decoded again, banned from copying it) is not written.  Its gate, copy_gate.txt
# beside the model (recipe/copy_gate.py build, the models/Makefile's finish), keeps it
# off names, numbers and codes ("12345" -> "8345", "Linux" -> "- Linux" ungated; none
# of recipe/right-copies.txt gated), but what the second decode writes instead of a
# copy is mostly not a translation ("Avril" -> "Sww"; recipe/corpus-notes.md "The copy
# guard's gate"), so it stays a request's choice ("copy_guard": true)
COPY_GUARD = None


def export(state, cfg, tok_dir, out, dtype="F32", src_lang="en", tgt_lang="fr"):
    os.makedirs(out, exist_ok=True)
    tensors = {k: v.to(DTYPES[dtype]) for k, v in state.items() if k != "pos"}
    safetensors_io.write(f"{out}/model.safetensors", tensors, {"format": "pt"})
    cfg = dict(cfg, torch_dtype=TORCH_NAME[dtype])
    cfg.pop("dropout_override", None)
    with open(f"{out}/config.json", "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True); f.write("\n")
    gen = {"bad_words_ids": cfg["bad_words_ids"], "decoder_start_token_id": cfg["decoder_start_token_id"],
           "eos_token_id": cfg["eos_token_id"], "forced_eos_token_id": cfg["forced_eos_token_id"],
           "max_length": cfg["max_length"], "num_beams": cfg["num_beams"], "pad_token_id": cfg["pad_token_id"],
           "renormalize_logits": True}
    cap = LENGTH_CAP.get(f"{src_lang}-{tgt_lang}")
    if cap:
        gen["max_length_factor"], gen["max_length_extra"] = cap
        if LOOP_NGRAM:
            gen["loop_no_repeat_ngram_size"] = LOOP_NGRAM
        if COPY_GUARD:
            gen["copy_guard"] = True
    with open(f"{out}/generation_config.json", "w") as f:
        json.dump(gen, f, indent=2, sort_keys=True); f.write("\n")
    for name in ("source.spm", "vocab.json"):
        shutil.copyfile(f"{tok_dir}/{name}", f"{out}/{name}")
    # the joint SentencePiece model is both sides: target.spm a link to source.spm keeps
    # Marian's two names without a second copy (375 KB a model in the Docker image)
    if os.path.lexists(f"{out}/target.spm"):
        os.remove(f"{out}/target.spm")
    if filecmp.cmp(f"{tok_dir}/source.spm", f"{tok_dir}/target.spm", shallow=False):
        os.symlink("source.spm", f"{out}/target.spm")
    else:
        shutil.copyfile(f"{tok_dir}/target.spm", f"{out}/target.spm")
    tc = {"source_lang": src_lang, "target_lang": tgt_lang, "unk_token": "<unk>", "eos_token": "</s>",
          "pad_token": "<pad>", "model_max_length": 512, "separate_vocabs": False,
          "clean_up_tokenization_spaces": False, "tokenizer_class": "MarianTokenizer"}
    with open(f"{out}/tokenizer_config.json", "w") as f:
        json.dump(tc, f, indent=2, sort_keys=True); f.write("\n")
    with open(f"{out}/special_tokens_map.json", "w") as f:
        json.dump({"eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}, f); f.write("\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", required=True); ap.add_argument("--tok", required=True)
    ap.add_argument("--out", required=True); ap.add_argument("--dtype", default="F32", choices=list(DTYPES))
    # tokenizer_config.json's source_lang / target_lang (what mtserve routes by);
    # the joint SentencePiece model and vocab.json serve both directions as they are
    ap.add_argument("--direction", default="en-fr", choices=["en-fr", "fr-en"])
    a = ap.parse_args()
    ck = torch.load(a.ckpt)
    src, tgt = a.direction.split("-")
    export(ck["model"], ck["config"], a.tok, a.out, a.dtype, src, tgt)
    what = (" = average of steps " + ", ".join(str(s) for _, s, _ in ck["averaged"])) if len(ck.get("averaged") or []) > 1 else ""
    print(f"exported {a.ckpt} (step {ck.get('step')}{what}, dev loss {ck.get('dev_loss')}) to {a.out} ({a.direction})")


if __name__ == "__main__":
    main()
