#!/usr/bin/env python3
"""Write the small synthetic PyTorch checkpoints used by tests/unit/formats/test_pth.c into tests/data/pth/.

Needs only the Python standard library: the pickles are produced by Python's own pickler
with stand-in `torch` / `torch._utils` modules, so the byte stream has exactly the shape
torch.save gives it (GLOBAL torch._utils _rebuild_tensor_v2, BINPERSID ('storage',
torch.FloatStorage, key, 'cpu', numel), ...). Good files exercise what the fixtures do not
(views with offsets and strides, every storage dtype, protocol 4 opcodes, big-endian data,
a bare state_dict, parameters); bad files each break one thing and must fail cleanly.

    /usr/bin/python3 tools/make_bad_pth.py [OUTDIR]     # default tests/data/pth
"""
import collections
import io
import os
import pickle
import struct
import sys
import types
import zipfile

# ---- stand-in torch -----------------------------------------------------------------------
torch = types.ModuleType("torch")
torch_utils = types.ModuleType("torch._utils")
sys.modules["torch"] = torch
sys.modules["torch._utils"] = torch_utils

STORAGE_FMT = {  # class name -> struct format of one element
    "FloatStorage": "f", "DoubleStorage": "d", "HalfStorage": "e", "BFloat16Storage": None,
    "LongStorage": "q", "IntStorage": "i", "ShortStorage": "h", "CharStorage": "b",
    "ByteStorage": "B", "BoolStorage": "?", "ComplexFloatStorage": "f",
}
for _n in STORAGE_FMT:
    _c = type(_n, (), {})
    _c.__module__ = "torch"
    setattr(torch, _n, _c)


def _rebuild_tensor_v2(*a):
    raise RuntimeError("stand-in")


def _rebuild_parameter(*a):
    raise RuntimeError("stand-in")


for _f in (_rebuild_tensor_v2, _rebuild_parameter):
    _f.__module__ = "torch._utils"
    setattr(torch_utils, _f.__name__, _f)


class Storage:
    def __init__(self, kind, values, key, numel=None, raw=None):
        self.kind, self.key = kind, str(key)
        self.numel = len(values) if numel is None else numel
        if raw is not None:
            self.data = raw
        elif kind == "BFloat16Storage":  # top 16 bits of the float32
            self.data = b"".join(struct.pack("<f", v)[2:] for v in values)
        else:
            self.data = struct.pack("<%d%s" % (len(values), STORAGE_FMT[kind]), *values)


class Tensor:
    def __init__(self, storage, offset, size, stride):
        self.args = (storage, offset, tuple(size), tuple(stride), False, collections.OrderedDict())

    def __reduce__(self):
        return (torch_utils._rebuild_tensor_v2, self.args)


class Parameter:
    def __init__(self, t):
        self.t = t

    def __reduce__(self):
        return (torch_utils._rebuild_parameter, (self.t, True, collections.OrderedDict()))


class Opaque:  # e.g. an optimizer object: GLOBAL + NEWOBJ + BUILD
    def __init__(self):
        self.lr = 0.1
        self.groups = [{"params": [0, 1]}]


Opaque.__module__ = "optim_stub"
sys.modules["optim_stub"] = types.ModuleType("optim_stub")
sys.modules["optim_stub"].Opaque = Opaque


def contiguous(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.insert(0, acc)
        acc *= s
    return st


def dumps(obj, protocol=2):
    f = io.BytesIO()
    p = pickle.Pickler(f, protocol=protocol)
    p.persistent_id = lambda o: (("storage", getattr(torch, o.kind), o.key, "cpu", o.numel)
                                 if isinstance(o, Storage) else None)
    p.dump(obj)
    return f.getvalue()


def storages_of(obj, acc):
    if isinstance(obj, Storage):
        acc[obj.key] = obj
    elif isinstance(obj, Tensor):
        storages_of(obj.args[0], acc)
    elif isinstance(obj, Parameter):
        storages_of(obj.t, acc)
    elif isinstance(obj, dict):
        for v in obj.values():
            storages_of(v, acc)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            storages_of(v, acc)
    return acc


def write_zip(path, entries):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for name, data in entries:
            zi = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            z.writestr(zi, data)


def save(path, obj, prefix="archive", protocol=2, pkl=None, drop=(), replace=None,
         byteorder=None):
    st = storages_of(obj, {})
    entries = [(prefix + "/data.pkl", pkl if pkl is not None else dumps(obj, protocol))]
    if byteorder is not None:
        entries.append((prefix + "/byteorder", byteorder))
    for k, s in st.items():
        if k in drop:
            continue
        data = (replace or {}).get(k, s.data)
        entries.append((prefix + "/data/" + k, data))
    entries.append((prefix + "/version", b"3\n"))
    write_zip(path, entries)


def T(kind, values, key, shape=None, offset=0, stride=None, numel=None):
    s = Storage(kind, values, key, numel)
    shape = [len(values)] if shape is None else shape
    return Tensor(s, offset, shape, contiguous(shape) if stride is None else stride)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "pth")
    os.makedirs(out, exist_ok=True)
    P = lambda n: os.path.join(out, n)

    # ---- good files ----
    s0 = Storage("FloatStorage", [float(i) for i in range(6)], 0)
    s1 = Storage("DoubleStorage", [float(i) for i in range(6)], 1)
    sd = collections.OrderedDict()
    sd["a"] = Tensor(s0, 0, [2, 3], [3, 1])             # 0 1 2 / 3 4 5
    sd["a_t"] = Tensor(s0, 0, [3, 2], [1, 3])           # transpose: 0 3 1 4 2 5
    sd["a_off"] = Tensor(s0, 2, [4], [1])               # 2 3 4 5
    sd["b_step"] = Tensor(s1, 1, [3], [2])              # 1 3 5 (F64)
    sd["bcast"] = Tensor(s0, 3, [2, 3], [0, 1])         # 3 4 5 / 3 4 5
    sd["h"] = T("HalfStorage", [1.0, -2.0, 0.5], 2)
    sd["bf"] = T("BFloat16Storage", [1.0, -2.0], 3)
    sd["i32"] = T("IntStorage", [-7, 8], 4)
    sd["i16"] = T("ShortStorage", [-3, 300], 5)
    sd["i8"] = T("CharStorage", [-1, 2], 6)
    sd["u8"] = T("ByteStorage", [200, 1, 2, 3], 7, shape=[2, 2])
    sd["bool"] = T("BoolStorage", [True, False], 8)
    sd["nbt"] = T("LongStorage", [42], 9, shape=[])
    sd["empty"] = T("FloatStorage", [], 10, shape=[0, 4])
    sd["param"] = Parameter(T("FloatStorage", [9.5, 8.5], 11))
    sd["nhwc"] = Tensor(Storage("FloatStorage", [float(i) for i in range(24)], 12),
                        0, [2, 3, 2, 2], [12, 1, 6, 3])  # channels-last 4-d view
    save(P("views.pth"), sd, prefix="weird_prefix")

    meta = {
        "mmdet_version": "2.11.0",
        "CLASSES": ("person", "caf\u00e9", 'quo"te'),
        "PALETTE": [[1, 2, 3], [4, 5, 6]],
        "config": "model = dict(type='X')\n",
        "epoch": 3, "lr": 0.0001, "flag": True, "nothing": None, "big": 1e16,
        "hook_msgs": {"best": 0.5, "nested": {"x": "y"}, 7: "seven"},
        "mixed": [1, "a", 2.5, None, (True, False)],
        "obj": Opaque(),
    }
    wt = T("FloatStorage", [1.0, 2.0, 3.0, 4.0], 0, shape=[2, 2])
    mm = {"meta": meta, "state_dict": collections.OrderedDict([("w", wt)]),
          "optimizer": {"state": {0: {"exp_avg": T("FloatStorage", [0.0] * 4, 1)}},
                        "param_groups": [Opaque()]}}
    save(P("mmcv_meta.pth"), mm)
    save(P("proto4.pth"), mm, protocol=4)
    # a top-level 'model' dict (DeiT-style classification checkpoints)
    save(P("model_key.pth"), {"model": collections.OrderedDict([("w", wt)]), "epoch": 5})

    be = Storage("FloatStorage", [], 0, numel=3, raw=struct.pack(">3f", 1.5, -2.0, 3.25))
    save(P("big_endian.pth"), collections.OrderedDict([("x", Tensor(be, 0, [3], [1]))]),
         byteorder=b"big")

    # ---- bad files ----
    one = collections.OrderedDict([("w", T("FloatStorage", [1.0, 2.0, 3.0], 0)),
                                   ("v", T("FloatStorage", [4.0, 5.0], 1))])
    save(P("bad_missing_storage.pth"), one, drop={"1"})
    save(P("bad_short_storage.pth"), one, replace={"1": b"\0\0\0\0"})
    save(P("bad_stride.pth"), collections.OrderedDict(
        [("w", T("FloatStorage", [1.0, 2.0, 3.0], 0, shape=[2, 2], stride=[2, 1]))]))
    save(P("bad_offset.pth"), collections.OrderedDict(
        [("w", T("FloatStorage", [1.0, 2.0, 3.0], 0, shape=[2], offset=2))]))
    huge = Storage("FloatStorage", [1.0], 0, numel=1 << 62)
    save(P("bad_huge_numel.pth"), collections.OrderedDict([("w", Tensor(huge, 0, [1], [1]))]))
    s4 = Storage("FloatStorage", [1.0], 0)
    save(P("bad_huge_size.pth"), collections.OrderedDict(
        [("w", Tensor(s4, 0, [1 << 40, 1 << 40], [0, 0]))]))
    save(P("bad_huge_stride.pth"), collections.OrderedDict(
        [("w", Tensor(s4, 0, [3, 2], [1 << 62, 1 << 62]))]))
    save(P("bad_expand.pth"), collections.OrderedDict(  # a 64 GB broadcast of one float
        [("w", Tensor(s4, 0, [1 << 24, 1 << 10], [0, 0]))]))
    save(P("bad_storage_type.pth"), collections.OrderedDict(
        [("w", T("ComplexFloatStorage", [1.0, 2.0], 0, numel=1, shape=[1]))]))
    save(P("bad_byteorder.pth"), one, byteorder=b"middle")
    save(P("bad_not_dict.pth"), [1, 2, 3])
    save(P("bad_no_tensors.pth"), {"meta": {"a": 1}, "foo": 1})
    save(P("bad_state_dict_type.pth"), {"state_dict": [1, 2]})
    save(P("empty_state_dict.pth"), {"state_dict": collections.OrderedDict(), "meta": {"CLASSES": ["a"]}})
    write_zip(P("bad_no_pickle.pth"), [("archive/version", b"3\n"), ("archive/data/0", b"\0" * 4)])
    good_pkl = dumps(one)
    save(P("bad_truncated_pickle.pth"), one, pkl=good_pkl[: len(good_pkl) // 2])
    save(P("bad_opcode.pth"), one, pkl=b"\x80\x02" + b"S'x'\n.")          # text STRING
    save(P("bad_memo.pth"), one, pkl=b"\x80\x02h\x05.")                    # BINGET 5, undefined
    save(P("bad_underflow.pth"), one, pkl=b"\x80\x02(}s.")                 # SETITEM past a MARK
    save(P("bad_no_stop.pth"), one, pkl=b"\x80\x02}")
    save(P("bad_utf8.pth"), one, pkl=b"\x80\x02X\x02\x00\x00\x00\xc3\x28.")
    save(P("bad_long_string.pth"), one, pkl=b"\x80\x02X\xff\xff\xff\x7fabc.")
    save(P("bad_memo_index.pth"), one, pkl=b"\x80\x02}r\xff\xff\xff\x7f.")  # LONG_BINPUT 2^31-1
    save(P("bad_persid.pth"), one, pkl=dumps(one).replace(b"storage", b"stowage"))
    # a deeply nested and a self-referencing list in meta must not recurse forever
    n = 20000
    deep = (b"\x80\x02}(X\x04\x00\x00\x00meta}(X\x04\x00\x00\x00deep" + b"]" * n + b"a" * (n - 1)
            + b"X\x04\x00\x00\x00loop]q\x04h\x04au" + b"X\x0a\x00\x00\x00state_dict}u.")
    save(P("deep_meta.pth"), one, pkl=deep)
    with open(P("bad_legacy.pth"), "wb") as f:  # pre-1.6 format: a bare pickle
        f.write(b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.")
    with open(P("bad_magic.pth"), "wb") as f:
        f.write(b"PK\x05\x06" + b"\xff" * 18)


if __name__ == "__main__":
    main()
