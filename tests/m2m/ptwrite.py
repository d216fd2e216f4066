#!/usr/bin/python3
"""ptwrite.py: a pytorch_model.bin writer without torch, for the random-weight
M2M-100 / NLLB-200 checkpoints of gen_m2m.py.

torch.save's zip format as torch 1.13 writes it (the reader, engine/formats/
ptfile.c, is tested against real torch files in tests/fixtures/pt):
  <folder>/data.pkl      the state dict pickled with protocol 2: an
                         OrderedDict whose values are
                         torch._utils._rebuild_tensor_v2(storage, offset,
                         size, stride, False, OrderedDict()) and whose
                         _metadata attribute (module -> {"version": 1}) is set
                         by BUILD; each storage a persistent id
                         ("storage", torch.FloatStorage | HalfStorage, key,
                         "cpu", numel)
  <folder>/data/<key>    each storage's bytes, stored, 64-byte aligned (an
                         "FB" extra field pads the local header, as torch's
                         writer does)
  <folder>/version       "3\\n"
Tied names (model.shared.weight, the embed_tokens, lm_head) are views of one
storage, as HF's state_dict() holds them.

Python's pickle writes GLOBAL opcodes only for objects it can find again by
module and name, so the few torch names used are stand-ins placed in
sys.modules for the time of one dump (never imported elsewhere, never run).
"""
import collections
import io
import pickle
import struct
import sys
import types
import zipfile

import numpy as np

ALIGN = 64


class _StorageRef:
    def __init__(self, key, dtype, numel):
        self.key, self.dtype, self.numel = key, dtype, numel


class _Tensor:
    def __init__(self, storage, offset, shape):
        self.storage, self.offset, self.shape = storage, offset, tuple(shape)

    def __reduce__(self):
        stride, acc = [], 1
        for n in reversed(self.shape):
            stride.append(acc)
            acc *= n
        return (_FAKE["rebuild"], (self.storage, self.offset, self.shape, tuple(reversed(stride)), False,
                                   collections.OrderedDict()))


_FAKE = {}


def _install():
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch._utils")

    def _rebuild_tensor_v2(*args):          # a name for GLOBAL; never called
        raise RuntimeError("stand-in")
    _rebuild_tensor_v2.__module__ = "torch._utils"
    _rebuild_tensor_v2.__qualname__ = "_rebuild_tensor_v2"
    utils._rebuild_tensor_v2 = _rebuild_tensor_v2
    torch._utils = utils
    for name in ("FloatStorage", "HalfStorage"):
        cls = type(name, (), {})
        cls.__module__ = "torch"
        setattr(torch, name, cls)
    saved = {k: sys.modules.get(k) for k in ("torch", "torch._utils")}
    sys.modules["torch"], sys.modules["torch._utils"] = torch, utils
    _FAKE.update(rebuild=_rebuild_tensor_v2, F32=torch.FloatStorage, F16=torch.HalfStorage)
    return saved


def _uninstall(saved):
    for k, v in saved.items():
        if v is None:
            sys.modules.pop(k, None)
        else:
            sys.modules[k] = v


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, _StorageRef):
            return ("storage", _FAKE[obj.dtype], obj.key, "cpu", obj.numel)
        return None


def data_pkl(entries, metadata):
    """entries: [(name, key, dtype, shape)] in state-dict order (names sharing a
    key are views of one storage at offset 0)."""
    saved = _install()
    try:
        refs, sd = {}, collections.OrderedDict()
        for name, key, dtype, shape in entries:
            numel = int(np.prod(shape))
            ref = refs.setdefault(key, _StorageRef(key, dtype, numel))
            sd[name] = _Tensor(ref, 0, shape)
        sd._metadata = collections.OrderedDict((m, {"version": 1}) for m in metadata)
        buf = io.BytesIO()
        _Pickler(buf, protocol=2).dump(sd)
        return buf.getvalue()
    finally:
        _uninstall(saved)


def _aligned_info(zf, name):
    """A stored member whose data starts on an ALIGN boundary."""
    zi = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    zi.compress_type = zipfile.ZIP_STORED
    at = zf.fp.tell() + 30 + len(name.encode())
    pad = (-(at + 4)) % ALIGN
    zi.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    return zi


def write(path, entries, get, metadata, folder="pytorch_model"):
    """entries as data_pkl; get(key) -> the storage's array (F32 or F16
    numpy, little-endian), asked once per key, in key order (strings)."""
    keys = sorted({e[1] for e in entries})
    with zipfile.ZipFile(path, "w", allowZip64=True) as zf:
        zf.writestr(_aligned_info(zf, f"{folder}/data.pkl"), data_pkl(entries, metadata))
        for key in keys:
            a = np.ascontiguousarray(get(key))
            zi = _aligned_info(zf, f"{folder}/data/{key}")
            zi.file_size = a.nbytes
            with zf.open(zi, "w") as f:
                flat = a.reshape(-1).view(np.uint8)
                for i in range(0, flat.size, 1 << 26):
                    f.write(flat[i:i + (1 << 26)].tobytes())
        zf.writestr(_aligned_info(zf, f"{folder}/version"), b"3\n")
