#!/usr/bin/env python3
"""Train the offline demo segmentation model: a small RAVLT (GLTA backbone of
tools/ravlt_torch.py) with the mmseg Semantic FPN neck + head of tools/seg_torch.py, on the
synthetic shapes of `ravlt synth`, then write it as an mmseg-style checkpoint (state_dict +
meta config/CLASSES/PALETTE) and convert it with the project's own converter (`ravlt convert`).
A development tool only (Debian python3-torch, CPU); the C build never needs it.

The shipped models/demo_seg.safetensors (0.55 M parameters, 2.2 MB; embedded into the ravlt
binary at build time, apps/demo_model.c) was made on 2026-12-01 with

  python3 tools/train_demo.py --ravlt build/ravlt --out models/demo_seg.safetensors \
      --train-count 1000 --val-count 60 --seed 1 --iters 2500 --time-limit 1800 --threads 1 \
      --dims 16,32,64,128 --depths 1,1,2,1 --heads 1,1,2,4 --neck 32 --channels 32 \
      --crop 192 --batch 8 --lr 2e-3

on 1 thread of a shared 2-core machine (PyTorch 1.13 from Debian): 2500 iterations (all of
--iters; the time limit was not reached) in 1312 s, ~0.5 s/iteration; loss (one batch,
noisy) 1.35 at iteration 0, 0.078 at 500, 0.076 at 1000, 0.067 at 1500, 0.017 at 2000,
0.018 at the end. Validation (seed 1001,
60 images): mIoU 96.51 in PyTorch and 96.51 with `ravlt eval ade20k --weights demo` on the
converted, embedded file (aAcc 99.36, class IoU 95.6-99.3); a fresh seed (9001, 40 images,
tests/cli/test_demo_cli.c asserts >= 80): mIoU 95.69. A 300 s pilot of the same settings (1051
iterations) reached 96.22 on 40 validation images.

Before `ravlt synth` gave each class a colour family (random colours: only geometry told the
classes apart), 2000 iterations of --crop 160 --batch 6 reached only 38.32 mIoU.

Data: `ravlt synth --task seg --raw` (320x240 images after a JPEG round trip, labels 1..6 =
background + 5 shapes, mmseg reduce_zero_label). Training: random 192x192 crops + flips, AdamW
(weight decay 0.01), learning rate: 5% linear warm-up, then cosine to 0 over --iters or
--time-limit (whichever is reached first), cross entropy, batch 8, BN in train mode. Check
it afterwards on a fresh seed:
  ravlt synth --task seg --out-dir val --count 100 --seed 1001
  ravlt eval ade20k --root val --weights models/demo_seg.safetensors   # or --weights demo
"""
import argparse
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ravlt_torch  # noqa: E402
import seg_torch  # noqa: E402

CLASSES = ("background", "circle", "triangle", "square", "hexagon", "ellipse")
PALETTE = [[120, 120, 120], [230, 25, 75], [60, 180, 75], [255, 225, 25], [0, 130, 200], [245, 130, 48]]
MEAN = [123.675, 116.28, 103.53]
STD = [58.395, 57.12, 57.375]

# The backbone's dict in the configs these tools embed (train_det_demo.py uses it too).
BACKBONE_CONFIG = """    backbone=dict(
        type='GLTA',
        embed_dims={dims},
        depths={depths},
        num_heads={heads},
        mlp_ratios=[3.5, 3.5, 3.5, 3.5],
        drop_path_rate=0.0,
        projection=1024,
        layerscales=[True, True, True, True],
        layer_init_values=[1, 1, 1, 1],
        out_indices=(0, 1, 2, 3)),
"""

CONFIG = """norm_cfg = dict(type='SyncBN', requires_grad=True)
model = dict(
    type='EncoderDecoder',
    pretrained=None,
""" + BACKBONE_CONFIG + """    neck=dict(
        type='FPN', in_channels={dims}, out_channels={neck}, num_outs=4),
    decode_head=dict(
        type='FPNHead',
        in_channels=[{neck}, {neck}, {neck}, {neck}],
        in_index=[0, 1, 2, 3],
        feature_strides=[4, 8, 16, 32],
        channels={ch},
        dropout_ratio=0.1,
        num_classes={nc},
        norm_cfg=dict(type='SyncBN', requires_grad=True),
        align_corners=False,
        loss_decode=dict(
            type='CrossEntropyLoss', use_sigmoid=False, loss_weight=1.0)),
    train_cfg=dict(),
    test_cfg=dict(mode='whole'))
dataset_type = 'ADE20KDataset'
img_norm_cfg = dict(
    mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375], to_rgb=True)
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(
        type='MultiScaleFlipAug',
        img_scale=(320, 240),
        flip=False,
        transforms=[
            dict(type='Resize', keep_ratio=True),
            dict(type='RandomFlip'),
            dict(
                type='Normalize',
                mean=[123.675, 116.28, 103.53],
                std=[58.395, 57.12, 57.375],
                to_rgb=True),
            dict(type='ImageToTensor', keys=['img']),
            dict(type='Collect', keys=['img'])
        ])
]
data = dict(test=dict(type='ADE20KDataset', pipeline=test_pipeline))
"""


def read_raw(path):
    """A `ravlt synth --raw` file -> (uint8 BGR images [n, 3, h, w], uint8 labels [n, h, w] as in
    the annotation PNGs: 1 = background, 2.. the shapes)."""
    with open(path, "rb") as f:
        buf = f.read()
    assert buf[:8] == b"RVSYNTH1", path
    n, h, w = struct.unpack("<3i", buf[8:20])
    img = torch.frombuffer(bytearray(buf[20:20 + n * h * w * 3]), dtype=torch.uint8).reshape(n, h, w, 3)
    lab = torch.frombuffer(bytearray(buf[20 + n * h * w * 3:]), dtype=torch.uint8).reshape(n, h, w)
    return img.permute(0, 3, 1, 2).contiguous(), lab


def load_raw(path):
    img, lab = read_raw(path)
    return img, lab.long() - 1  # reduce_zero_label: 1..6 -> 0..5 (0 would be ignored: -1)


def normalize(xb):
    x = xb.flip(1).float()  # BGR -> RGB (to_rgb=True)
    return (x - torch.tensor(MEAN).view(1, 3, 1, 1)) / torch.tensor(STD).view(1, 3, 1, 1)


def build(dims, depths, heads, neck, ch, nc):
    bb = ravlt_torch.RAVLT(dims, depths, heads)
    return seg_torch.Segmentor(bb, seg_torch.FPNHead([neck] * 4, ch, nc), seg_torch.FPN(dims, neck, 4))


def miou(pred, gt, nc):
    inter = torch.zeros(nc)
    union = torch.zeros(nc)
    for c in range(nc):
        p, g = pred == c, gt == c
        inter[c] += (p & g).sum()
        union[c] += (p | g).sum()
    return (inter / union.clamp(min=1)).mean().item() * 100


def lr_at(a, it, t0):
    """The learning rate at iteration `it` (None once training is over). Progress in [0, 1]:
    iterations done out of a.iters or, with a.time_limit, the time spent since t0, whichever is
    further; linear warm-up over the first 5%, then cosine decay to 0 at the end."""
    p = it / a.iters
    if a.time_limit:
        p = max(p, (time.time() - t0) / a.time_limit)
    if p >= 1:
        return None
    return a.lr * (p / 0.05 if p < 0.05 else 0.5 * (1 + math.cos(math.pi * (p - 0.05) / 0.95)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ravlt", required=True, help="the ravlt binary (synth, convert)")
    ap.add_argument("--out", required=True, help="output .safetensors (a .pth is written beside it)")
    ap.add_argument("--train-count", type=int, default=1000)
    ap.add_argument("--val-count", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1, help="training data seed (validation: seed + 1000)")
    ap.add_argument("--iters", type=int, default=1500)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--crop", type=int, default=192)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dims", default="32,64,128,256")
    ap.add_argument("--depths", default="1,1,2,1")
    ap.add_argument("--heads", default="1,2,4,8")
    ap.add_argument("--neck", type=int, default=64)
    ap.add_argument("--channels", type=int, default=32)
    ap.add_argument("--time-limit", type=float, default=0,
                    help="stop after this many seconds (the lr schedule follows time or iterations, whichever ends first)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    dims = [int(v) for v in a.dims.split(",")]
    depths = [int(v) for v in a.depths.split(",")]
    heads = [int(v) for v in a.heads.split(",")]
    nc = len(CLASSES)
    tmp = tempfile.mkdtemp(prefix="ravlt_demo_")
    tr, va = os.path.join(tmp, "train.bin"), os.path.join(tmp, "val.bin")
    subprocess.run([a.ravlt, "--quiet", "synth", "--task", "seg", "--raw", tr, "--count", str(a.train_count),
                    "--seed", str(a.seed)], check=True)
    subprocess.run([a.ravlt, "--quiet", "synth", "--task", "seg", "--raw", va, "--count", str(a.val_count),
                    "--seed", str(a.seed + 1000)], check=True)
    x, y = load_raw(tr)
    xv, yv = load_raw(va)
    shutil.rmtree(tmp)  # the data is in memory now
    model = build(dims, depths, heads, a.neck, a.channels, nc)
    nparams = sum(p.numel() for p in model.parameters())
    print("model: dims %s depths %s heads %s, neck %d, head %d: %.2f M params" %
          (dims, depths, heads, a.neck, a.channels, nparams / 1e6), flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.01)
    n, _, h, w = x.shape
    t0 = time.time()
    model.train()
    it = 0
    while True:
        lr = lr_at(a, it, t0)
        if lr is None:
            break
        for g in opt.param_groups:
            g["lr"] = lr
        idx = torch.randint(0, n, (a.batch,))
        oy = int(torch.randint(0, h - a.crop + 1, (1,))) if h > a.crop else 0
        ox = int(torch.randint(0, w - a.crop + 1, (1,))) if w > a.crop else 0
        xb = normalize(x[idx, :, oy:oy + a.crop, ox:ox + a.crop])
        yb = y[idx, oy:oy + a.crop, ox:ox + a.crop]
        if torch.rand(1).item() < 0.5:
            xb, yb = xb.flip(-1), yb.flip(-1)
        logits = seg_torch.resize(model.decode(model.backbone(xb)), xb.shape[2:])
        loss = F.cross_entropy(logits, yb, ignore_index=-1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 50 == 0:
            print("iter %d loss %.4f lr %.2e  %.0f s" % (it, loss.item(), lr, time.time() - t0), flush=True)
        it += 1
    print("trained %d iterations in %.0f s (final loss %.4f)" % (it, time.time() - t0, loss.item()), flush=True)
    model.eval()
    with torch.no_grad():
        preds = []
        for i in range(0, xv.shape[0], 8):
            xb = normalize(xv[i:i + 8])
            preds.append(seg_torch.resize(model.decode(model.backbone(xb)), xb.shape[2:]).argmax(1))
        pred = torch.cat(preds)
    print("validation (seed %d, %d images, PyTorch): mIoU %.2f" % (a.seed + 1000, xv.shape[0], miou(pred, yv, nc)),
          flush=True)
    sd = {}
    for k, v in model.state_dict().items():
        if k.endswith("num_batches_tracked"):
            continue
        sd[k] = v.detach().float().contiguous()
    cfg = CONFIG.format(dims=dims, depths=depths, heads=heads, neck=a.neck, ch=a.channels, nc=nc)
    meta = {"config": cfg, "CLASSES": CLASSES, "PALETTE": PALETTE,
            "ravlt_demo": "train_demo.py seed %d iters %d train_count %d" % (a.seed, it, a.train_count)}
    pth = os.path.splitext(a.out)[0] + ".pth"
    torch.save({"meta": meta, "state_dict": sd}, pth)
    subprocess.run([a.ravlt, "convert", pth, a.out], check=True)
    print("wrote %s and %s" % (pth, a.out), flush=True)


if __name__ == "__main__":
    main()
