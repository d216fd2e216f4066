"""Load an exported MarianMT directory into the PyTorch reference (weights read
back from model.safetensors, so the reference sees exactly what C sees)."""
import json, os, sys
import torch
sys.path.insert(0, os.path.dirname(__file__))
import safetensors_io
from model import Marian


def load_dir(d):
    with open(f"{d}/config.json") as f:
        cfg = json.load(f)
    cfg["dropout"] = 0.0
    m = Marian(cfg)
    st, _ = safetensors_io.read(f"{d}/model.safetensors")
    missing, unexpected = m.load_state_dict(st, strict=False)
    assert not unexpected, unexpected
    assert all(k == "final_logits_bias" for k in missing), missing
    return m.eval(), cfg
