#!/usr/bin/env python3
"""A PyTorch port of the RAVLT backbone (GLTA, qhfan/RALA detection/mmdet/models/backbones/
RALA.py) and of the ImageNet classifier (classfication/RALA.py), written for ravlt's own
checks and benchmarks (same state_dict key names, same test-time semantics). Needs only
torch (Debian python3-torch); no timm/einops/mmcv.

  # compare against a fixture folder (float64):
  python3 tools/ravlt_torch.py check ../shared/fixtures/backbone/tiny
  # benchmark a preset with random weights, 2 threads:
  python3 tools/ravlt_torch.py bench ravlt-s --size 512x512 --threads 2 --runs 3 [--json]
  # parameter count of the classifier presets:
  python3 tools/ravlt_torch.py params
  # small random classifier checkpoint + reference logits (tests/data/backbone):
  python3 tools/ravlt_torch.py make-cls-fixture tests/data/backbone
  # a backbone fixture at another input size (then: ravlt check-fixture OUT):
  python3 tools/ravlt_torch.py resize-fixture ../shared/fixtures/backbone/d64 OUT --size 157x203
  # a backbone fixture of another configuration, random weights:
  python3 tools/ravlt_torch.py random-fixture OUT --seed 1 --size 75x101
"""
import argparse
import json
import math
import os
import resource
import statistics
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

PRESETS = {
    "ravlt-t": dict(embed_dims=[64, 128, 256, 512], depths=[2, 2, 6, 2], num_heads=[1, 2, 4, 8],
                    layer_init_values=[1, 1, 1, 1]),
    "ravlt-s": dict(embed_dims=[64, 128, 320, 512], depths=[3, 5, 9, 3], num_heads=[1, 2, 5, 8],
                    layer_init_values=[1, 1, 1, 1]),
    "ravlt-b": dict(embed_dims=[96, 192, 384, 512], depths=[4, 6, 12, 6], num_heads=[1, 2, 6, 8],
                    layer_init_values=[1, 1, 1e-6, 1e-6]),
    "ravlt-l": dict(embed_dims=[96, 192, 448, 640], depths=[4, 7, 19, 8], num_heads=[1, 2, 7, 10],
                    layer_init_values=[1e-6] * 4),
}
DEFAULT_FLAGS = [["l"] * 10, ["l"] * 10, ["v", "v"] * 10, ["v"] * 10]


def rope_tables(angle, h, w):
    """sin/cos of shape (h*w, head_dim): first half from the row index, second from the column."""
    ih = torch.arange(h).to(angle)[:, None] * angle[None, :]
    iw = torch.arange(w).to(angle)[:, None] * angle[None, :]
    def table(f):
        a = f(ih)[:, None, :].expand(h, w, -1)
        b = f(iw)[None, :, :].expand(h, w, -1)
        return torch.cat([a, b], -1).reshape(h * w, -1)
    return table(torch.sin), table(torch.cos)


def rope(x, sin, cos):
    """x (..., L, d): x*cos + rot(x)*sin with rot(x)[2i] = -x[2i+1], rot(x)[2i+1] = x[2i]."""
    even, odd = x[..., 0::2], x[..., 1::2]
    rot = torch.stack([-odd, even], -1).reshape(x.shape)
    return x * cos + rot * sin


class LN2d(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm = nn.LayerNorm(c, eps=1e-6)

    def forward(self, x):
        return self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class Attention(nn.Module):
    """kind 'l': RALA linear attention; kind 'v': softmax attention."""
    def __init__(self, kind, dim, heads):
        super().__init__()
        self.kind, self.dim, self.heads = kind, dim, heads
        self.scale = (dim // heads) ** -0.5
        self.qkvo = nn.Conv2d(dim, 4 * dim, 1)
        self.lepe = nn.Conv2d(dim, dim, 5, 1, 2, groups=dim)
        self.proj = nn.Conv2d(dim, dim, 1)

    def forward(self, x, sin, cos):
        b, c, h, w = x.shape
        n, l = self.heads, h * w
        t = self.qkvo(x)
        v_map = t[:, 2 * c:3 * c]
        o = t[:, 3 * c:]
        lepe = self.lepe(v_map)
        # (b, 3c, h, w) -> 3 x (b, heads, l, d)
        q, k, v = t[:, :3 * c].reshape(b, 3, n, c // n, l).permute(1, 0, 2, 4, 3)
        if self.kind == "l":
            q = F.elu(q) + 1.0
            k = F.elu(k) + 1.0
            qm = q.mean(dim=2, keepdim=True)
            wgt = torch.softmax(self.scale * (qm @ k.transpose(-1, -2)), dim=-1).transpose(-1, -2)
            k = k * wgt * l
            z = 1.0 / (q @ k.mean(dim=2, keepdim=True).transpose(-1, -2) + 1e-6)
            kv = (rope(k, sin, cos).transpose(-1, -2) * l ** -0.5) @ (v * l ** -0.5)
            res = rope(q, sin, cos) @ kv * z
        else:
            q = rope(q, sin, cos)
            k = rope(k, sin, cos)
            if hasattr(F, "scaled_dot_product_attention"):
                res = F.scaled_dot_product_attention(q, k, v)
            else:
                res = torch.softmax(self.scale * q @ k.transpose(-1, -2), dim=-1) @ v
        res = res.permute(0, 1, 3, 2).reshape(b, c, h, w)
        return self.proj((res + lepe) * o)


class FFN(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Conv2d(dim, hidden, 1)
        self.fc2 = nn.Conv2d(hidden, dim, 1)
        self.dwconv = nn.Conv2d(hidden, hidden, 3, 1, 1, groups=hidden)

    def forward(self, x):
        x = F.gelu(self.fc1(x))
        x = x + self.dwconv(x)
        return self.fc2(x)


class Block(nn.Module):
    def __init__(self, kind, dim, heads, hidden, layerscale, init):
        super().__init__()
        self.layerscale = layerscale
        self.norm1 = LN2d(dim)
        self.attn = Attention(kind, dim, heads)
        self.norm2 = LN2d(dim)
        self.ffn = FFN(dim, hidden)
        self.pos = nn.Conv2d(dim, dim, 3, 1, 1, groups=dim)
        if layerscale:
            self.gamma_1 = nn.Parameter(init * torch.ones(1, dim, 1, 1))
            self.gamma_2 = nn.Parameter(init * torch.ones(1, dim, 1, 1))

    def forward(self, x, sin, cos, trace=None):
        x = x + self.pos(x)
        a = self.attn(self.norm1(x), sin, cos)
        x = x + (self.gamma_1 * a if self.layerscale else a)
        f = self.ffn(self.norm2(x))
        x = x + (self.gamma_2 * f if self.layerscale else f)
        return x


class Stage(nn.Module):
    def __init__(self, flags, dim, out_dim, depth, heads, hidden, layerscale, init):
        super().__init__()
        d = dim // heads
        angle = 1.0 / (10000 ** torch.linspace(0, 1, d // 4))
        self.RoPE = nn.Module()
        self.RoPE.register_buffer("angle", angle.unsqueeze(-1).repeat(1, 2).flatten())
        self.blocks = nn.ModuleList(
            [Block(flags[i], dim, heads, hidden, layerscale, init) for i in range(depth)])
        if out_dim is not None:
            self.downsample = nn.Module()
            self.downsample.reduction = nn.Conv2d(dim, out_dim, 3, 2, 1)
            self.downsample.norm = nn.BatchNorm2d(out_dim)
        else:
            self.downsample = None

    def forward(self, x):
        sin, cos = rope_tables(self.RoPE.angle, x.shape[2], x.shape[3])
        for blk in self.blocks:
            x = blk(x, sin, cos)
        if self.downsample is None:
            return x, x
        return x, self.downsample.norm(self.downsample.reduction(x))


def stem(cin, c):
    h = c // 2
    return nn.Sequential(nn.Conv2d(cin, h, 3, 2, 1), nn.BatchNorm2d(h), nn.GELU(),
                         nn.Conv2d(h, h, 3, 1, 1), nn.BatchNorm2d(h), nn.GELU(),
                         nn.Conv2d(h, h, 3, 1, 1), nn.BatchNorm2d(h), nn.GELU(),
                         nn.Conv2d(h, c, 3, 2, 1), nn.BatchNorm2d(c))


class RAVLT(nn.Module):
    """classifier=False: GLTA (4 outputs after extra_norms); True: ImageNet classifier."""
    def __init__(self, embed_dims, depths, num_heads, mlp_ratios=(3.5,) * 4, layerscales=(True,) * 4,
                 layer_init_values=(1,) * 4, flagss=None, in_chans=3, classifier=False,
                 projection=1024, num_classes=1000, out_indices=(0, 1, 2, 3)):
        super().__init__()
        flagss = flagss or DEFAULT_FLAGS
        self.classifier, self.out_indices = classifier, out_indices
        self.patch_embed = nn.Module()
        self.patch_embed.proj = stem(in_chans, embed_dims[0])
        self.layers = nn.ModuleList()
        for i in range(4):
            self.layers.append(Stage(flagss[i], embed_dims[i], embed_dims[i + 1] if i < 3 else None,
                                     depths[i], num_heads[i], int(mlp_ratios[i] * embed_dims[i]),
                                     layerscales[i], layer_init_values[i]))
        if classifier:
            self.proj = nn.Conv2d(embed_dims[3], projection, 1)
            self.norm = nn.BatchNorm2d(projection)
            self.head = nn.Conv2d(projection, num_classes, 1)
        else:
            self.extra_norms = nn.ModuleList([LN2d(c) for c in embed_dims])

    def forward(self, x):
        x = self.patch_embed.proj(x)
        outs = []
        for i, layer in enumerate(self.layers):
            x_out, x = layer(x)
            if not self.classifier and i in self.out_indices:
                outs.append(self.extra_norms[i](x_out))
        if self.classifier:
            x = F.silu(self.norm(self.proj(x)))
            return self.head(F.adaptive_avg_pool2d(x, 1)).flatten(1)
        return tuple(outs)


def load_safetensors(path):
    with open(path, "rb") as f:
        buf = f.read()
    n = struct.unpack("<Q", buf[:8])[0]
    hdr = json.loads(buf[8:8 + n])
    dts = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64, "U8": torch.uint8}
    out = {}
    for k, v in hdr.items():
        if k == "__metadata__":
            continue
        s, e = v["data_offsets"]
        t = torch.frombuffer(bytearray(buf[8 + n + s:8 + n + e]), dtype=dts[v["dtype"]])
        out[k] = t.reshape(v["shape"])
    return out


def model_from_fixture(d):
    cfg = json.load(open(os.path.join(d, "config.json")))
    m = RAVLT(cfg["embed_dims"], cfg["depths"], cfg["num_heads"], cfg["mlp_ratios"],
              cfg["layerscales"], cfg["layer_init_values"], cfg.get("flagss"), cfg.get("in_chans", 3),
              out_indices=tuple(cfg.get("out_indices", (0, 1, 2, 3))))
    sd = load_safetensors(os.path.join(d, "weights.safetensors"))
    sd = {k[len("backbone."):] if k.startswith("backbone.") else k: v for k, v in sd.items()}
    m.load_state_dict(sd, strict=True)
    return m.eval()


def cmd_check(a):
    m = model_from_fixture(a.dir).double()
    io = load_safetensors(os.path.join(a.dir, "io.safetensors"))
    with torch.no_grad():
        outs = m(io["input"].double())
    worst = 0.0
    for i, o in enumerate(outs):
        ref = io["out.%d" % i].double()
        err = (o - ref).abs().max().item() / max(1.0, ref.abs().max().item())
        worst = max(worst, err)
        print("out.%d max_rel %.3g" % (i, err))
    return 0 if worst < 1e-5 else 1


def make_model(name, classifier=False):
    p = PRESETS[name]
    m = RAVLT(p["embed_dims"], p["depths"], p["num_heads"], layer_init_values=p["layer_init_values"],
              classifier=classifier)
    return m.eval()


def cmd_params(a):
    for name in PRESETS:
        m = make_model(name, classifier=True)
        print(name, sum(p.numel() for p in m.parameters()))
    return 0


def time_forward(m, x, runs):
    """One warm-up forward, then `runs` timed ones under no_grad: ({median_ms, min_ms, max_ms,
    cpu_ms (process CPU time, median), peak_rss_mb}, the warm-up's output). Also used by
    tools/official_bench.py."""
    times, cpu = [], []
    with torch.no_grad():
        out = m(x)  # warm-up
        for _ in range(runs):
            c0 = time.process_time()
            t0 = time.perf_counter()
            m(x)
            times.append((time.perf_counter() - t0) * 1e3)
            cpu.append((time.process_time() - c0) * 1e3)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return {"median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times),
            "cpu_ms": statistics.median(cpu), "peak_rss_mb": rss}, out


def cmd_bench(a):
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    m = make_model(a.model, classifier=a.classifier)
    h, w = (int(v) for v in a.size.lower().split("x"))
    x = torch.randn(1, 3, h, w)
    res = {"model": a.model, "size": a.size, "threads": a.threads}
    res.update(time_forward(m, x, a.runs)[0])
    rss = res["peak_rss_mb"]
    if a.json:
        print(json.dumps(res))
    else:
        print("%s %s threads %d: median %.1f ms (min %.1f, max %.1f), peak RSS %.0f MB" %
              (a.model, a.size, a.threads, res["median_ms"], res["min_ms"], res["max_ms"], rss))
    return 0


def save_safetensors(path, tensors, meta=None):
    hdr, blobs, off = {}, [], 0
    names = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64", torch.int32: "I32",
             torch.uint8: "U8", torch.bool: "BOOL"}
    for k, t in tensors.items():
        b = t.contiguous().numpy().tobytes()
        hdr[k] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if meta:
        hdr["__metadata__"] = meta
    h = json.dumps(hdr).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def cmd_make_cls_fixture(a):
    """A tiny classifier (embed 16/24/40/48, depths 1/1/1/1, projection 32, 1000 classes)
    with random weights and BN statistics, saved as bare-key safetensors and as a DeiT-style
    {'model': state_dict} .pth, plus io (input, logits computed in float64)."""
    g = torch.Generator().manual_seed(7)
    m = RAVLT([16, 24, 40, 48], [1, 1, 1, 1], [1, 2, 2, 3], classifier=True, projection=32)
    sd = randomize_(m, g)
    m.eval()
    x = torch.randn(1, 3, 64, 80, generator=g)
    with torch.no_grad():
        logits = m.double()(x.double()).float()
    os.makedirs(a.out, exist_ok=True)
    save_safetensors(os.path.join(a.out, "classifier.safetensors"), {k: v for k, v in sd.items()},
                     {"source": "tools/ravlt_torch.py make-cls-fixture"})
    torch.save({"model": sd, "epoch": 1}, os.path.join(a.out, "classifier.pth"))
    save_safetensors(os.path.join(a.out, "classifier_io.safetensors"),
                     {"input": x, "logits": logits.reshape(1, -1, 1, 1)})
    print("logits[:5]", logits[0, :5].tolist())
    return 0


def cmd_resize_fixture(a):
    """A backbone fixture at another input: the weights and config of an existing one
    (linked), a new random input of HxW (seed), the outputs computed in float64 - for
    checking ravlt on sizes the stored fixtures do not have (odd, small, non-multiples of 32)."""
    m = model_from_fixture(a.dir).double()
    h, w = (int(v) for v in a.size.lower().split("x"))
    os.makedirs(a.out, exist_ok=True)
    for f in ("config.json", "weights.safetensors"):
        if not os.path.lexists(os.path.join(a.out, f)):
            os.symlink(os.path.abspath(os.path.join(a.dir, f)), os.path.join(a.out, f))
    x = torch.randn(1, 3, h, w, generator=torch.Generator().manual_seed(a.seed))
    with torch.no_grad():
        outs = m(x.double())
    t = {"input": x}
    for i, o in enumerate(outs):
        t["out.%d" % i] = o.float()
    save_safetensors(os.path.join(a.out, "io.safetensors"), t)
    print("%s: input %dx%d, outputs %s" % (a.out, h, w, [tuple(o.shape) for o in outs]))
    return 0


def randomize_(m, g):
    """Random weights in place (generator g) scaled as trained ones: convs / linears N(0,
    1/fan_in), norm and layer-scale weights and BN variances U(0.5, 1.5), biases and BN means
    N(0, 0.1); RoPE tables kept. Returns the state_dict."""
    sd = m.state_dict()
    for k, t in sd.items():
        if not t.is_floating_point() or k.endswith("RoPE.angle"):
            continue
        if k.endswith("running_var") or k.endswith("gamma_1") or k.endswith("gamma_2") or \
                (k.endswith(".weight") and t.dim() == 1):
            t.copy_(0.5 + torch.rand(t.shape, generator=g))
        elif t.dim() >= 2:
            t.copy_(torch.randn(t.shape, generator=g) / math.sqrt(t[0].numel()))
        else:
            t.copy_(0.1 * torch.randn(t.shape, generator=g))
    m.load_state_dict(sd)
    return sd


RANDOM_CONFIGS = [  # unlike the stored fixtures: mixed 'l'/'v' stages, layer scale off in some
    dict(embed_dims=[32, 64, 96, 128], depths=[1, 2, 2, 1], num_heads=[1, 2, 3, 4],
         mlp_ratios=[3.0] * 4, layerscales=[False, True, False, True],
         layer_init_values=[1, 1e-2, 1, 0.5], flagss=[["l"], ["l", "v"], ["v", "l"], ["v"]]),
    dict(embed_dims=[24, 48, 72, 96], depths=[2, 1, 3, 1], num_heads=[1, 3, 3, 2],
         mlp_ratios=[4.0, 3.5, 2.0, 4.0], layerscales=[True] * 4, layer_init_values=[1] * 4,
         flagss=[["v", "l"], ["v"], ["l", "l", "v"], ["l"]]),
]


def cmd_random_fixture(a):
    """A backbone fixture of another configuration (RANDOM_CONFIGS[seed % 2]: head dims 24-32,
    mixed RALA / softmax stages, layer scale on and off) with random weights, a random input
    of --size, outputs in float64."""
    c = RANDOM_CONFIGS[a.seed % len(RANDOM_CONFIGS)]
    g = torch.Generator().manual_seed(a.seed)
    m = RAVLT(c["embed_dims"], c["depths"], c["num_heads"], c["mlp_ratios"], c["layerscales"],
              c["layer_init_values"], c["flagss"])
    sd = randomize_(m, g)
    m = m.double().eval()
    h, w = (int(v) for v in a.size.lower().split("x"))
    x = torch.randn(1, 3, h, w, generator=g)
    with torch.no_grad():
        outs = m(x.double())
    os.makedirs(a.out, exist_ok=True)
    save_safetensors(os.path.join(a.out, "weights.safetensors"),
                     {"backbone." + k: v for k, v in sd.items() if v.is_floating_point()})
    t = {"input": x}
    for i, o in enumerate(outs):
        t["out.%d" % i] = o.float()
    save_safetensors(os.path.join(a.out, "io.safetensors"), t)
    cfg = dict(kind="backbone", out_indices=[0, 1, 2, 3], in_chans=3,
               head_dims=[d // n for d, n in zip(c["embed_dims"], c["num_heads"])],
               ffn_dims=[int(d * r) for d, r in zip(c["embed_dims"], c["mlp_ratios"])],
               generated_by="tools/ravlt_torch.py random-fixture --seed %d --size %s" % (a.seed, a.size),
               **c)
    json.dump(cfg, open(os.path.join(a.out, "config.json"), "w"), indent=1)
    print("%s: outputs %s" % (a.out, [tuple(o.shape) for o in outs]))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("dir")
    c = sub.add_parser("params")
    c = sub.add_parser("make-cls-fixture")
    c.add_argument("out")
    c = sub.add_parser("resize-fixture", help=cmd_resize_fixture.__doc__.split("\n")[0])
    c.add_argument("dir", help="a backbone fixture (config.json, weights.safetensors)")
    c.add_argument("out")
    c.add_argument("--size", required=True, help="HxW of the new input")
    c.add_argument("--seed", type=int, default=0)
    c = sub.add_parser("random-fixture", help=cmd_random_fixture.__doc__.split("\n")[0])
    c.add_argument("out")
    c.add_argument("--size", default="75x101", help="HxW of the input")
    c.add_argument("--seed", type=int, default=0)
    c = sub.add_parser("bench")
    c.add_argument("model", choices=sorted(PRESETS))
    c.add_argument("--size", default="512x512")
    c.add_argument("--threads", type=int, default=2)
    c.add_argument("--runs", type=int, default=3)
    c.add_argument("--classifier", action="store_true")
    c.add_argument("--json", action="store_true")
    a = ap.parse_args()
    return {"check": cmd_check, "params": cmd_params, "bench": cmd_bench,
            "make-cls-fixture": cmd_make_cls_fixture, "resize-fixture": cmd_resize_fixture,
            "random-fixture": cmd_random_fixture}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
