#!/usr/bin/python3
"""Fixtures for the pytorch_model.bin reader (engine/ptfile.c, tests/test_ptfile.c).

Run from the repository root with Debian's python3 + torch:
    /usr/bin/python3 models/recipe/pt_fixtures.py --out tests/fixtures/pt

Writes (see tests/fixtures/pt/README.md):
  model.bin        torch.save(model.state_dict()): F32, F16, BF16 and I64
                   tensors, one storage shared by four tied embeddings, views
                   at non-zero storage offsets, a scalar, an empty tensor, the
                   OrderedDict's _metadata
  model_p4.bin     the same state dict saved with pickle protocol 4 (FRAME,
                   SHORT_BINUNICODE, MEMOIZE)
  params.bin       a plain dict of nn.Parameter (torch._utils._rebuild_parameter)
  model.json       what model.bin holds: per tensor dtype, shape, values (as
                   float/int, exact), and which tensors share a storage at which
                   element offset
  compressed.bin   model.bin rewritten by zipfile with archive/data/0 deflated
  evil_os.bin      an archive whose data.pkl calls GLOBAL 'os system', bytes
                   written by hand
  evil_reduce.bin  an archive whose data.pkl is pickle.dumps (protocol 2) of an
                   object whose __reduce__ is (os.system, ('true',))
  noncontig.bin    a state dict holding a transposed (non-contiguous) view
  short.bin        a valid save whose storage member was cut short
  missing.bin      model.bin without its member archive/data/3
  legacy.bin       torch.save(..., _use_new_zipfile_serialization=False)
  savez.npz        numpy.savez (ZIP64 local headers: the ZIP reader's other client)

Every file but legacy.bin (whose storage keys are Python object ids) is the
same bytes on each run.  Nothing here is ever unpickled: the hostile pickles are only written.  Values
are small integers divided by powers of two, exact in every dtype used.
"""
import argparse, collections, io, json, os, pickle, zipfile

import numpy as np
import torch


def exact(shape, scale, seed):
    """Values k / scale for small k: exact in F32, F16 and BF16."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-120, 121, shape, generator=g).float() / scale


class Inner(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.shared = torch.nn.Embedding(6, 4)
        self.encoder = torch.nn.Module()
        self.decoder = torch.nn.Module()
        self.encoder.embed_tokens = self.shared
        self.decoder.embed_tokens = self.shared
        self.encoder.fc = torch.nn.Linear(4, 3)
        self.decoder.fc_half = torch.nn.Linear(4, 2).half()
        self.decoder.fc_bf16 = torch.nn.Linear(3, 2).to(torch.bfloat16)


class Tiny(torch.nn.Module):
    """Shaped like a Hugging Face Marian model where it matters: model.shared
    tied to both embed_tokens and lm_head, sub-modules (so state_dict()
    carries _metadata), biases, buffers."""

    def __init__(self):
        super().__init__()
        self.model = Inner()
        self.lm_head = torch.nn.Linear(4, 6, bias=False)
        self.lm_head.weight = self.model.shared.weight
        base = exact((10,), 8, 7)
        self.register_buffer("window_base", base)
        self.register_buffer("window", base[3:7])            # storage offset 3
        self.register_buffer("rows", self.model.shared.weight.detach()[2:4])   # offset 8 into the shared storage
        self.register_buffer("positions", torch.arange(5, dtype=torch.int64))
        self.register_buffer("scale", torch.tensor(0.5))
        self.register_buffer("empty", torch.zeros(0, 4))
        with torch.no_grad():
            for i, p in enumerate(self.parameters()):
                p.copy_(exact(p.shape, 16, i).to(p.dtype))


def state_dict(m):
    # a fixed, non-alphabetical key order: the reader must not depend on it
    sd = m.state_dict()
    order = sorted(sd.keys(), key=lambda k: (len(k), k[::-1]))
    out = collections.OrderedDict((k, sd[k]) for k in order)
    out._metadata = sd._metadata
    return out


def save_bytes(obj, **kw):
    buf = io.BytesIO()                      # a file object: the archive's folder is "archive"
    torch.save(obj, buf, **kw)
    return buf.getvalue()


def write(out, name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


def describe(sd):
    """model.json: values, and storage sharing by data pointer."""
    tensors, storages = {}, {}
    for k, t in sd.items():
        base = t.untyped_storage().data_ptr() if hasattr(t, "untyped_storage") else t.storage().data_ptr()
        storages.setdefault(base, []).append(k)
        vals = t.reshape(-1).tolist() if t.dtype == torch.int64 else t.float().reshape(-1).tolist()
        tensors[k] = {
            "dtype": {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
                      torch.int64: "I64"}[t.dtype],
            "shape": list(t.shape),
            "values": vals,
            "storage_offset": t.storage_offset(),
        }
    shared = [names for names in storages.values() if len(names) > 1]
    return {"tensors": tensors, "shared": shared}


def member(name):
    """A member with a fixed date, so the fixtures are the same bytes each run."""
    return zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))


def rezip(data, change):
    """The archive's members rewritten by zipfile; change(name, bytes) gives
    (bytes, compress_type) for each, bytes None to leave the member out."""
    src = zipfile.ZipFile(io.BytesIO(data))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as dst:
        for info in src.infolist():
            body, how = change(info.filename, src.read(info.filename))
            if body is not None:
                dst.writestr(member(info.filename), body, compress_type=how)
    return buf.getvalue()


def archive_with_pickle(pkl):
    """A torch-looking archive (stored members) around the given data.pkl bytes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(member("archive/data.pkl"), pkl)
        z.writestr(member("archive/data/0"), b"\0" * 16)
        z.writestr(member("archive/version"), b"3\n")
    return buf.getvalue()


class Evil:
    def __reduce__(self):
        return (os.system, ("true",))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/fixtures/pt")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)

    sd = state_dict(Tiny())
    model = save_bytes(sd)
    write(a.out, "model.bin", model)
    write(a.out, "model_p4.bin", save_bytes(sd, pickle_protocol=4))
    with open(os.path.join(a.out, "model.json"), "w") as f:
        json.dump(describe(sd), f, indent=1)
        f.write("\n")
    m = Tiny()
    write(a.out, "params.bin", save_bytes({k: v for k, v in m.named_parameters() if k.startswith("model.encoder.fc")}))

    write(a.out, "compressed.bin", rezip(model, lambda n, b: (b, zipfile.ZIP_DEFLATED if n == "archive/data/0"
                                                              else zipfile.ZIP_STORED)))
    write(a.out, "missing.bin", rezip(model, lambda n, b: (None if n == "archive/data/3" else b,
                                                           zipfile.ZIP_STORED)))
    # GLOBAL 'os system', REDUCE with ('true',): protocol 2 opcodes, by hand
    os_pkl = (b"\x80\x02" + b"ccollections\nOrderedDict\nq\x00)Rq\x01"
              + b"X\x01\x00\x00\x00xq\x02" + b"cos\nsystem\nq\x03X\x04\x00\x00\x00trueq\x04\x85q\x05Rq\x06"
              + b"s.")
    write(a.out, "evil_os.bin", archive_with_pickle(os_pkl))
    write(a.out, "evil_reduce.bin", archive_with_pickle(
        pickle.dumps(collections.OrderedDict(x=Evil()), protocol=2)))

    write(a.out, "noncontig.bin", save_bytes({"w": exact((3, 4), 4, 1).t()}))
    ok = save_bytes({"w": exact((3, 4), 4, 2)})
    write(a.out, "short.bin", rezip(ok, lambda n, b: (b[:20] if n == "archive/data/0" else b,
                                                       zipfile.ZIP_STORED)))
    buf = io.BytesIO()
    torch.save({"w": exact((2, 2), 4, 3)}, buf, _use_new_zipfile_serialization=False)
    write(a.out, "legacy.bin", buf.getvalue())

    buf = io.BytesIO()
    np.savez(buf, x=np.arange(5, dtype=np.float32), y=np.ones((2, 3), dtype=np.float16))
    write(a.out, "savez.npz", buf.getvalue())


if __name__ == "__main__":
    main()
