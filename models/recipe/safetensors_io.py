"""A small safetensors reader/writer (no safetensors package is available here).

Format (docs/MARIAN.md section 7): u64 LE header length N, N bytes of JSON
header (padded with spaces to a multiple of 8), then the data buffer.  Tensors
are written sorted by (element size desc, name) so each one is aligned."""
import json, struct
import numpy as np
import torch

_DT = {torch.float32: ("F32", np.float32), torch.float16: ("F16", np.float16), torch.bfloat16: ("BF16", None)}
_NP = {"F32": np.float32, "F16": np.float16}


def write(path, tensors, metadata=None):
    items = []
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        code, _ = _DT[t.dtype]
        raw = (t.view(torch.int16).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes())
        items.append((name, code, list(t.shape), raw, t.element_size()))
    items.sort(key=lambda x: (-x[4], x[0]))
    header, off = {}, 0
    if metadata:
        header["__metadata__"] = metadata
    for name, code, shape, raw, _ in items:
        header[name] = {"dtype": code, "shape": shape, "data_offsets": [off, off + len(raw)]}
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h))); f.write(h)
        for it in items:
            f.write(it[3])


def read(path):
    """-> {name: float32 torch tensor} (F16/BF16 converted), and the raw header."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        raw = data[b:end]
        if e["dtype"] == "BF16":
            a = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
            a = a.view(np.float32)
        else:
            a = np.frombuffer(raw, dtype=_NP[e["dtype"]]).astype(np.float32)
        out[name] = torch.from_numpy(a.reshape(e["shape"]).copy())
    return out, header
