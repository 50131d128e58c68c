#!/usr/bin/env python3
"""A PyTorch port of the mmseg 0.13 semantic segmentation parts used by RAVLT (FPN neck,
UPerHead with PPM, FPNHead, EncoderDecoder whole inference), written for ravlt's own checks and
benchmarks: same state_dict key names, same test-time semantics (SEMANTICS.md B, I). The
backbone is the GLTA port of tools/ravlt_torch.py. Needs only torch (Debian python3-torch).

  # the port against the official head fixtures (float64):
  python3 tools/seg_torch.py check ../shared/fixtures/heads/upernet
  # a head fixture at another image size (then: ravlt check-fixture OUT):
  python3 tools/seg_torch.py resize ../shared/fixtures/heads/upernet OUT --size 157x203
  # whole model (backbone + head + resize to the input + resize to ori + softmax + argmax),
  # random weights, 2 threads:
  python3 tools/seg_torch.py bench upernet-s --size 512x2048 --threads 2 --runs 3 [--json]
"""
import argparse
import json
import math
import os
import resource
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ravlt_torch  # noqa: E402


class ConvModule(nn.Module):
    """mmcv ConvModule at eval: conv (bias only without norm) [+ BN] [+ ReLU]."""
    def __init__(self, cin, cout, k, stride=1, norm=True, act=True):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, bias=not norm)
        self.bn = nn.BatchNorm2d(cout) if norm else None
        self.act = act

    def forward(self, x):
        x = self.conv(x)
        if self.bn is not None:
            x = self.bn(x)
        return F.relu(x) if self.act else x


def resize(x, size):
    return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


class FPN(nn.Module):
    """mmseg/mmdet FPN, no norm, extra levels by max-pool (add_extra_convs=False)."""
    def __init__(self, in_channels, out_channels, num_outs):
        super().__init__()
        self.num_outs = num_outs
        self.lateral_convs = nn.ModuleList([ConvModule(c, out_channels, 1, norm=False, act=False)
                                            for c in in_channels])
        self.fpn_convs = nn.ModuleList([ConvModule(out_channels, out_channels, 3, norm=False, act=False)
                                        for _ in in_channels])

    def forward(self, inputs):
        lat = [l(x) for l, x in zip(self.lateral_convs, inputs)]
        for i in range(len(lat) - 1, 0, -1):
            lat[i - 1] = lat[i - 1] + F.interpolate(lat[i], size=lat[i - 1].shape[2:], mode="nearest")
        outs = [c(l) for c, l in zip(self.fpn_convs, lat)]
        while len(outs) < self.num_outs:
            outs.append(F.max_pool2d(outs[-1], 1, stride=2))
        return outs


class PPMBranch(nn.Sequential):
    def __init__(self, scale, cin, ch):
        super().__init__(nn.AdaptiveAvgPool2d(scale), ConvModule(cin, ch, 1))


class UPerHead(nn.Module):
    def __init__(self, in_channels, channels, num_classes, pool_scales=(1, 2, 3, 6)):
        super().__init__()
        self.psp_modules = nn.ModuleList([PPMBranch(s, in_channels[-1], channels) for s in pool_scales])
        self.bottleneck = ConvModule(in_channels[-1] + len(pool_scales) * channels, channels, 3)
        self.lateral_convs = nn.ModuleList([ConvModule(c, channels, 1) for c in in_channels[:-1]])
        self.fpn_convs = nn.ModuleList([ConvModule(channels, channels, 3) for _ in in_channels[:-1]])
        self.fpn_bottleneck = ConvModule(len(in_channels) * channels, channels, 3)
        self.conv_seg = nn.Conv2d(channels, num_classes, 1)

    def forward(self, x):
        top = x[-1]
        psp = [top] + [resize(m(top), top.shape[2:]) for m in self.psp_modules]
        lat = [l(xi) for l, xi in zip(self.lateral_convs, x)]
        lat.append(self.bottleneck(torch.cat(psp, 1)))
        for i in range(len(lat) - 1, 0, -1):
            lat[i - 1] = lat[i - 1] + resize(lat[i], lat[i - 1].shape[2:])
        outs = [c(l) for c, l in zip(self.fpn_convs, lat[:-1])] + [lat[-1]]
        outs = [outs[0]] + [resize(o, outs[0].shape[2:]) for o in outs[1:]]
        return self.conv_seg(self.fpn_bottleneck(torch.cat(outs, 1)))


class FPNHead(nn.Module):
    def __init__(self, in_channels, channels, num_classes, feature_strides=(4, 8, 16, 32)):
        super().__init__()
        self.scale_heads = nn.ModuleList()
        for i, s in enumerate(feature_strides):
            n = max(1, int(math.log2(s) - math.log2(feature_strides[0])))
            layers = []
            for k in range(n):
                layers.append(ConvModule(in_channels[i] if k == 0 else channels, channels, 3))
                if s != feature_strides[0]:
                    layers.append(nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False))
            self.scale_heads.append(nn.Sequential(*layers))
        self.conv_seg = nn.Conv2d(channels, num_classes, 1)

    def forward(self, x):
        out = self.scale_heads[0](x[0])
        for i in range(1, len(x)):
            out = out + resize(self.scale_heads[i](x[i]), out.shape[2:])
        return self.conv_seg(out)


class Segmentor(nn.Module):
    """EncoderDecoder at test time (whole mode, rescale=True)."""
    def __init__(self, backbone, decode_head, neck=None):
        super().__init__()
        self.backbone, self.neck, self.decode_head = backbone, neck, decode_head

    def decode(self, feats):
        if self.neck is not None:
            feats = self.neck(feats)
        return self.decode_head(feats)

    def forward(self, img, ori_hw):
        logits = resize(self.decode(self.backbone(img)), img.shape[2:])  # encode_decode
        logits = resize(logits, ori_hw)                                    # whole_inference
        return F.softmax(logits, 1).argmax(1)                              # simple_test


def heads_from_config(cfg):
    m = cfg["model"]
    h = m["decode_head"]
    if h["type"] == "UPerHead":
        return None, UPerHead(h["in_channels"], h["channels"], h["num_classes"], tuple(h["pool_scales"]))
    n = m["neck"]
    return (FPN(n["in_channels"], n["out_channels"], n["num_outs"]),
            FPNHead(h["in_channels"], h["channels"], h["num_classes"], tuple(h["feature_strides"])))


def fixture_heads(d):
    """config.json of the head fixture in d, and its neck (None for UperNet) and decode head
    with the fixture's weights, in float64."""
    cfg = json.load(open(os.path.join(d, "config.json")))
    neck, head = heads_from_config(cfg)
    sd = ravlt_torch.load_safetensors(os.path.join(d, "weights.safetensors"))
    if neck is not None:
        neck.load_state_dict({k[5:]: v for k, v in sd.items() if k.startswith("neck.")}, strict=True)
        neck = neck.double().eval()
    head.load_state_dict({k[12:]: v for k, v in sd.items() if k.startswith("decode_head.")},
                         strict=True)
    return cfg, neck, head.double().eval()


def cmd_resize(a):
    """A segmentation head fixture at another image size: its weights and config (weights
    linked), its backbone features resized bilinearly to the new strides-4..32 sizes (ceil
    halving, as the backbone's stride-2 convs) plus a little seeded noise, a new img_meta
    (another original size), and the outputs in float64 - for check-fixture on sizes the
    stored fixtures lack."""
    cfg, neck, head = fixture_heads(a.dir)
    io = ravlt_torch.load_safetensors(os.path.join(a.dir, "io.safetensors"))
    ih, iw = (int(v) for v in a.size.lower().split("x"))
    g = torch.Generator().manual_seed(a.seed)
    fh, fw, feats = ih, iw, []
    for i in range(4):
        for _ in range(2 if i == 0 else 1):
            fh, fw = (fh + 1) // 2, (fw + 1) // 2
        f = resize(io["feat.%d" % i].float(), (fh, fw))
        feats.append(f + 0.05 * f.std() * torch.randn(f.shape, generator=g))
    sc = 0.5 + float(torch.rand(1, generator=g))
    oh, ow = max(1, int(round(ih / sc))), max(1, int(round(iw / sc)))
    ws, hs = float(torch.tensor(iw / ow, dtype=torch.float32)), float(torch.tensor(ih / oh, dtype=torch.float32))
    meta = {"ori_shape": [oh, ow, 3], "img_shape": [ih, iw, 3], "pad_shape": [ih, iw, 3],
            "scale_factor": [ws, hs, ws, hs], "flip": False, "flip_direction": None}
    out = {"feat.%d" % i: f.float() for i, f in enumerate(feats)}
    with torch.no_grad():
        x = [f.double() for f in feats]
        if neck is not None:
            x = neck(x)
            for i, f in enumerate(x):
                out["neck.out.%d" % i] = f.float()
        logits = head(x)
        img = resize(logits, (ih, iw))
        ori = resize(img, (oh, ow))
    out["seg_logits"], out["seg_logits_img"], out["seg_logits_ori"] = logits.float(), img.float(), ori.float()
    out["seg_pred"] = ori.argmax(1)[0].long()
    os.makedirs(a.out, exist_ok=True)
    if not os.path.lexists(os.path.join(a.out, "weights.safetensors")):
        os.symlink(os.path.abspath(os.path.join(a.dir, "weights.safetensors")),
                   os.path.join(a.out, "weights.safetensors"))
    cfg = dict(cfg, img_meta=meta, feat_shapes=[list(f.shape) for f in feats],
               input_image_tensor_shape=[1, 3, ih, iw],
               generated_by="tools/seg_torch.py resize %s --size %s --seed %d" % (a.dir, a.size, a.seed))
    cfg.pop("io_keys", None)
    json.dump(cfg, open(os.path.join(a.out, "config.json"), "w"), indent=1)
    ravlt_torch.save_safetensors(os.path.join(a.out, "io.safetensors"), out)
    print("%s: image %dx%d, original %dx%d, features %s" % (a.out, ih, iw, oh, ow,
                                                         [tuple(f.shape[2:]) for f in feats]))
    return 0


def cmd_check(a):
    cfg, neck, head = fixture_heads(a.dir)
    io = ravlt_torch.load_safetensors(os.path.join(a.dir, "io.safetensors"))
    meta = cfg["img_meta"]
    feats = [io["feat.%d" % i].double() for i in range(4)]
    got = {}
    with torch.no_grad():
        if neck is not None:
            feats = neck(feats)
            for i, f in enumerate(feats):
                got["neck.out.%d" % i] = f
        got["seg_logits"] = head(feats)
        got["seg_logits_img"] = resize(got["seg_logits"], meta["img_shape"][:2])
        got["seg_logits_ori"] = resize(got["seg_logits_img"], meta["ori_shape"][:2])
    worst = 0.0
    for k, v in got.items():
        ref = io[k].double()
        err = (v - ref).abs().max().item() / max(1.0, ref.abs().max().item())
        worst = max(worst, err)
        print("%-16s max_rel %.3g" % (k, err))
    pred = got["seg_logits_ori"].argmax(1)[0]
    diff = int((pred != io["seg_pred"]).sum())
    print("seg_pred         %d labels differ" % diff)
    return 0 if worst < 1e-5 and diff == 0 else 1


SEG_PRESETS = {  # official RALA configs: decode head widths on the GLTA backbone presets
    "upernet": dict(channels=512),
    "fpn": dict(neck=256, channels=128),
}


def make_segmentor(name, num_classes=150):
    arch, size = name.split("-")
    bb = ravlt_torch.make_model("ravlt-" + size)
    dims = ravlt_torch.PRESETS["ravlt-" + size]["embed_dims"]
    if arch == "upernet":
        return Segmentor(bb, UPerHead(dims, SEG_PRESETS["upernet"]["channels"], num_classes)).eval()
    n = SEG_PRESETS["fpn"]["neck"]
    return Segmentor(bb, FPNHead([n] * 4, SEG_PRESETS["fpn"]["channels"], num_classes),
                     FPN(dims, n, 4)).eval()


def randomize_bn(m, gen):
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.1, 0.1, generator=gen)
            mod.running_var.uniform_(0.5, 1.5, generator=gen)


def cmd_bench(a):
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    m = make_segmentor(a.model)
    randomize_bn(m, torch.Generator().manual_seed(1))
    h, w = (int(v) for v in a.size.lower().split("x"))
    x = torch.randn(1, 3, h, w)
    times, parts = [], []
    with torch.no_grad():
        m(x, (h, w))  # warm-up
        for _ in range(a.runs):
            t0 = time.perf_counter()
            feats = m.backbone(x)
            t1 = time.perf_counter()
            logits = m.decode(feats)
            t2 = time.perf_counter()
            logits = resize(resize(logits, (h, w)), (h, w))
            F.softmax(logits, 1).argmax(1)
            t3 = time.perf_counter()
            times.append((t3 - t0) * 1e3)
            parts.append(((t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3))
    i = times.index(statistics.median(times)) if len(times) % 2 else 0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    res = {"model": a.model, "size": a.size, "threads": a.threads, "median_ms": statistics.median(times),
           "min_ms": min(times), "max_ms": max(times), "backbone_ms": parts[i][0], "head_ms": parts[i][1],
           "post_ms": parts[i][2], "peak_rss_mb": rss}
    if a.json:
        print(json.dumps(res))
    else:
        print("%s %s threads %d: median %.0f ms (backbone %.0f, head %.0f, resize+softmax+argmax %.0f), "
              "peak RSS %.0f MB" % (a.model, a.size, a.threads, res["median_ms"], res["backbone_ms"],
                                    res["head_ms"], res["post_ms"], rss))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("dir")
    r = sub.add_parser("resize", help=cmd_resize.__doc__.split("\n")[0])
    r.add_argument("dir")
    r.add_argument("out")
    r.add_argument("--size", required=True, help="image HxW")
    r.add_argument("--seed", type=int, default=0)
    b = sub.add_parser("bench")
    b.add_argument("model", help="upernet-t/s/b/l or fpn-t/s/b/l")
    b.add_argument("--size", default="512x2048")
    b.add_argument("--threads", type=int, default=2)
    b.add_argument("--runs", type=int, default=3)
    b.add_argument("--json", action="store_true")
    a = p.parse_args()
    return {"check": cmd_check, "resize": cmd_resize, "bench": cmd_bench}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
