#!/usr/bin/env python3
"""Train the offline demo detector: a small RAVLT (GLTA backbone of tools/ravlt_torch.py) with
an mmdet 2.x RetinaNet (FPN start_level 1, add_extra_convs='on_input', 5 outputs; RetinaHead)
on the synthetic shapes of `ravlt synth --task det`, then write it as an mmdet-style
checkpoint (state_dict with mmdet key names + meta config/CLASSES) and convert it with the
project's own converter (`ravlt convert`). A development tool only (Debian python3-torch,
CPU); the C build never needs it.

The shipped models/demo_det.safetensors (0.58 M parameters, 2.3 MB; embedded into the ravlt
binary at build time, apps/demo_model.c, `--weights demo-det`, what `ravlt detect` uses
without --weights) was made on 2026-12-01 with

  python3 tools/train_det_demo.py --ravlt build/ravlt --out models/demo_det.safetensors \
      --train-count 2000 --val-count 60 --seed 2 --iters 2400 --time-limit 1800 --threads 1

(the defaults: dims 16,32,64,128, depths 1,1,2,1, heads 1,1,2,4, FPN and head 32 channels,
2 stacked convs per branch, batch 8, lr 2e-3) on 1 thread of a shared, loaded 2-core machine
(PyTorch 1.13 from Debian): 2357 iterations in 1800 s (the time limit; 0.5-1.2 s/iteration
as the machine's load varied); loss (focal + L1, one batch, noisy) 1.83 at iteration 0, 0.81
at 50, 0.28 at 625, 0.19 at 1500, 0.13 at the end. Validation (seed 1002, 60 images): box AP
81.91 (AP50 98.14) in PyTorch and 81.91 (AP50 98.14) with `ravlt eval coco --weights` on the
converted file; all 1822 detections match (same image and label), boxes within 3.8e-5 px,
scores within 1.6e-6. A fresh seed (9001, 40 images; tests/cli/test_demo_cli.c asserts AP >= 50):
box AP 80.05 (AP50 98.13) in both, 1379 of 1379 detections matched (3.1e-5 px, 9.5e-7). A
300 s pilot of the same settings on 1000 training images (324 iterations) reached 50.85 on
40 validation images, identical in PyTorch and ravlt.

Data: for a seed, `ravlt synth --task seg --raw` gives the pixels (320x240, after the JPEG
round trip, as OpenCV decodes the .jpg files) and `ravlt synth --task det` with the same seed
gives the same images' COCO boxes (a sample is a pure function of seed and index; the tool
checks that every box encloses pixels of its class in the raw label map). Training at the
native 320x240, zero-padded to 320x256 (Pad size_divisor 32, as the test pipeline), random
horizontal flips.

Model and losses follow mmdet 2.x RetinaNet: anchors octave_base_scale 4, scales_per_octave 3,
ratios 0.5/1/2 (ratio-major), strides 8..128, centre offset 0 (anchor centres at x*stride);
DeltaXYWHBBoxCoder means 0 stds 1; MaxIoUAssigner pos >= 0.5, neg < 0.4, min_pos_iou 0
(every gt also takes the anchors of its highest IoU), allowed_border -1; one difference: the
anchors of feature cells in the bottom padding strip are ignored (mmdet's valid flags come from
pad_shape and would make them negatives); sigmoid focal loss gamma 2 alpha 0.25
and L1 on the deltas, both summed and divided by the number of positives; head convs N(0,
0.01), classification bias -log(99); FPN convs xavier-uniform. AdamW (weight decay 0.01), 5%
linear warm-up then cosine to 0 over --iters or --time-limit, gradient norm clipped at 35
(mmdet's RetinaNet schedule), BN in train mode.

Test-time (PyTorch here, ravlt in C): per level the top --nms-pre anchors by max class score,
decode clipped to the image, multiclass NMS (score > 0.05, IoU 0.5, 100 per image). The tool
writes the PyTorch validation detections as a COCO results file and evaluates them with
`ravlt eval coco --results`, then evaluates the converted checkpoint with `ravlt eval coco
--weights`, and compares both models' detections on the validation images.
"""
import argparse
import atexit
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import det_torch  # noqa: E402
import ravlt_torch  # noqa: E402
import train_demo  # noqa: E402
from seg_torch import ConvModule  # noqa: E402

CLASSES = ("circle", "triangle", "square", "hexagon", "ellipse")
STRIDES = (8, 16, 32, 64, 128)
RATIOS = (0.5, 1.0, 2.0)
SCALES = tuple(4.0 * 2.0 ** (i / 3.0) for i in range(3))

CONFIG = """model = dict(
    type='RetinaNet',
    pretrained=None,
""" + train_demo.BACKBONE_CONFIG + """    neck=dict(
        type='FPN',
        in_channels={dims},
        out_channels={neck},
        start_level=1,
        add_extra_convs='on_input',
        num_outs=5),
    bbox_head=dict(
        type='RetinaHead',
        num_classes={nc},
        in_channels={neck},
        stacked_convs={stacked},
        feat_channels={neck},
        anchor_generator=dict(
            type='AnchorGenerator',
            octave_base_scale=4,
            scales_per_octave=3,
            ratios=[0.5, 1.0, 2.0],
            strides=[8, 16, 32, 64, 128]),
        bbox_coder=dict(
            type='DeltaXYWHBBoxCoder',
            target_means=[0.0, 0.0, 0.0, 0.0],
            target_stds=[1.0, 1.0, 1.0, 1.0]),
        loss_cls=dict(
            type='FocalLoss',
            use_sigmoid=True,
            gamma=2.0,
            alpha=0.25,
            loss_weight=1.0),
        loss_bbox=dict(type='L1Loss', loss_weight=1.0)),
    train_cfg=dict(
        assigner=dict(
            type='MaxIoUAssigner',
            pos_iou_thr=0.5,
            neg_iou_thr=0.4,
            min_pos_iou=0,
            ignore_iof_thr=-1),
        allowed_border=-1,
        pos_weight=-1,
        debug=False),
    test_cfg=dict(
        nms_pre={nms_pre},
        min_bbox_size=0,
        score_thr=0.05,
        nms=dict(type='nms', iou_threshold=0.5),
        max_per_img=100))
dataset_type = 'CocoDataset'
classes = {classes}
img_norm_cfg = dict(
    mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375], to_rgb=True)
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(
        type='MultiScaleFlipAug',
        img_scale=({w}, {h}),
        flip=False,
        transforms=[
            dict(type='Resize', keep_ratio=True),
            dict(type='RandomFlip'),
            dict(
                type='Normalize',
                mean=[123.675, 116.28, 103.53],
                std=[58.395, 57.12, 57.375],
                to_rgb=True),
            dict(type='Pad', size_divisor=32),
            dict(type='ImageToTensor', keys=['img']),
            dict(type='Collect', keys=['img'])
        ])
]
data = dict(test=dict(type='CocoDataset', classes=classes, pipeline=test_pipeline))
"""


# ---- model (mmdet 2.x key names) -------------------------------------------------------------
class RetinaFPN(nn.Module):
    """mmdet FPN(start_level=1, add_extra_convs='on_input', num_outs=5), no norm, no ReLU
    before the extra convs: P3-P5 from C3-C5, P6 = conv3x3/2(C5), P7 = conv3x3/2(P6)."""
    def __init__(self, in_channels, c, num_outs=5, start=1):
        super().__init__()
        self.start = start
        ins = in_channels[start:]
        self.lateral_convs = nn.ModuleList([ConvModule(ci, c, 1, norm=False, act=False) for ci in ins])
        fpn = [ConvModule(c, c, 3, norm=False, act=False) for _ in ins]
        for i in range(num_outs - len(ins)):
            fpn.append(ConvModule(in_channels[-1] if i == 0 else c, c, 3, stride=2, norm=False, act=False))
        self.fpn_convs = nn.ModuleList(fpn)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.xavier_uniform_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, inputs):
        x = inputs[self.start:]
        lat = [l(v) for l, v in zip(self.lateral_convs, x)]
        for i in range(len(lat) - 1, 0, -1):
            lat[i - 1] = lat[i - 1] + F.interpolate(lat[i], size=lat[i - 1].shape[2:], mode="nearest")
        n = len(lat)
        outs = [self.fpn_convs[i](lat[i]) for i in range(n)]
        outs.append(self.fpn_convs[n](inputs[-1]))
        for i in range(n + 1, len(self.fpn_convs)):
            outs.append(self.fpn_convs[i](outs[-1]))
        return outs


class RetinaHead(nn.Module):
    def __init__(self, c, nc, stacked, anchors=9):
        super().__init__()
        self.nc, self.na = nc, anchors
        self.cls_convs = nn.ModuleList([ConvModule(c, c, 3, norm=False) for _ in range(stacked)])
        self.reg_convs = nn.ModuleList([ConvModule(c, c, 3, norm=False) for _ in range(stacked)])
        self.retina_cls = nn.Conv2d(c, anchors * nc, 3, padding=1)
        self.retina_reg = nn.Conv2d(c, anchors * 4, 3, padding=1)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)
        nn.init.constant_(self.retina_cls.bias, -math.log((1 - 0.01) / 0.01))

    def forward_level(self, x):
        c, r = x, x
        for m in self.cls_convs:
            c = m(c)
        for m in self.reg_convs:
            r = m(r)
        return self.retina_cls(c), self.retina_reg(r)


class RetinaNet(nn.Module):
    def __init__(self, dims, depths, heads, c, nc, stacked):
        super().__init__()
        self.backbone = ravlt_torch.RAVLT(dims, depths, heads)
        self.neck = RetinaFPN(dims, c)
        self.bbox_head = RetinaHead(c, nc, stacked)

    def forward(self, x):
        """-> per level (cls [B, HWA, C], reg [B, HWA, 4]), location-major then anchor."""
        outs = []
        for p in self.neck(self.backbone(x)):
            cls, reg = self.bbox_head.forward_level(p)
            B = x.shape[0]
            outs.append((cls.permute(0, 2, 3, 1).reshape(B, -1, self.bbox_head.nc),
                         reg.permute(0, 2, 3, 1).reshape(B, -1, 4)))
        return outs


# ---- anchors, targets -------------------------------------------------------------------------
def level_anchors(ph, pw):
    """Anchors per level for a padded ph x pw input, with the feature sizes the convs give."""
    out, h, w = [], ph, pw
    sizes = []
    h, w = ph // 4, pw // 4  # C2
    for _ in range(1, 4):  # C3..C5
        h, w = (h + 1) // 2, (w + 1) // 2
        sizes.append((h, w))
    for _ in range(2):  # P6, P7: conv 3x3 stride 2 pad 1
        h, w = (h - 1) // 2 + 1, (w - 1) // 2 + 1
        sizes.append((h, w))
    for s, (fh, fw) in zip(STRIDES, sizes):
        base = det_torch.base_anchors(s, RATIOS, SCALES)
        out.append(det_torch.grid_anchors(base, fh, fw, s))
    return out, sizes


def valid_flags(sizes, img_h, img_w):
    """Feature cells inside ceil(img / stride), per anchor (mmdet's valid_flags rule, but on the
    unpadded image: mmdet 2.x passes pad_shape, so it would train the 16-pixel padding strip's
    anchors as negatives where this tool ignores them)."""
    flags = []
    for s, (fh, fw) in zip(STRIDES, sizes):
        vh, vw = min(math.ceil(img_h / s), fh), min(math.ceil(img_w / s), fw)
        m = torch.zeros(fh, fw, dtype=torch.bool)
        m[:vh, :vw] = True
        flags.append(m.view(-1, 1).expand(-1, len(RATIOS) * len(SCALES)).reshape(-1))
    return torch.cat(flags)


def iou(a, b):
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    return inter / (area_a[:, None] + area_b[None, :] - inter).clamp(min=1e-6)


def assign(anchors, gt, pos_thr=0.5, neg_thr=0.4, min_pos_iou=0.0):
    """MaxIoUAssigner: -1 ignore, 0 negative, k+1 gt k."""
    n = anchors.shape[0]
    res = torch.full((n,), -1, dtype=torch.long)
    if gt.shape[0] == 0:
        res[:] = 0
        return res
    ov = iou(gt, anchors)  # [G, N]
    max_ov, arg = ov.max(0)
    res[(max_ov >= 0) & (max_ov < neg_thr)] = 0
    pos = max_ov >= pos_thr
    res[pos] = arg[pos] + 1
    gmax = ov.max(1)[0]
    for i in range(gt.shape[0]):  # gt_max_assign_all
        if gmax[i] >= min_pos_iou and gmax[i] > 0:
            res[ov[i] == gmax[i]] = i + 1
    return res


def bbox2delta(p, g):
    px, py = (p[:, 0] + p[:, 2]) * 0.5, (p[:, 1] + p[:, 3]) * 0.5
    pw, ph = p[:, 2] - p[:, 0], p[:, 3] - p[:, 1]
    gx, gy = (g[:, 0] + g[:, 2]) * 0.5, (g[:, 1] + g[:, 3]) * 0.5
    gw, gh = g[:, 2] - g[:, 0], g[:, 3] - g[:, 1]
    return torch.stack([(gx - px) / pw, (gy - py) / ph, torch.log(gw / pw), torch.log(gh / ph)], -1)


def focal_loss(logits, target, gamma=2.0, alpha=0.25):
    """mmdet sigmoid_focal_loss (sum): BCE * (alpha t + (1-alpha)(1-t)) * pt^gamma."""
    p = logits.sigmoid()
    pt = (1 - p) * target + p * (1 - target)
    w = (alpha * target + (1 - alpha) * (1 - target)) * pt.pow(gamma)
    return (F.binary_cross_entropy_with_logits(logits, target, reduction="none") * w).sum()


# ---- data -------------------------------------------------------------------------------------
def synth(ravlt, tmp, name, count, seed):
    """Pixels (raw) + boxes (COCO json) for one seed -> (uint8 BGR [n,3,h,w], boxes, labels, ids, json)."""
    raw = os.path.join(tmp, name + ".bin")
    d = os.path.join(tmp, name)
    subprocess.run([ravlt, "--quiet", "synth", "--task", "seg", "--raw", raw, "--count", str(count),
                    "--seed", str(seed)], check=True)
    subprocess.run([ravlt, "--quiet", "synth", "--task", "det", "--out-dir", d, "--count", str(count),
                    "--seed", str(seed)], check=True)
    x, lab = train_demo.read_raw(raw)
    os.remove(raw)
    ann_path = os.path.join(d, "annotations", "instances.json")
    with open(ann_path) as f:
        coco = json.load(f)
    index = {im["id"]: int(os.path.splitext(im["file_name"])[0].split("_")[-1]) for im in coco["images"]}
    ids = [0] * count
    for k, v in index.items():
        ids[v] = k
    boxes = [[] for _ in range(count)]
    labels = [[] for _ in range(count)]
    for a in coco["annotations"]:
        if a.get("iscrowd", 0):
            continue
        i = index[a["image_id"]]
        bx, by, bw, bh = a["bbox"]
        if bw < 1 or bh < 1:
            continue
        boxes[i].append([bx, by, bx + bw, by + bh])
        labels[i].append(a["category_id"] - 1)
        # the pixels and the boxes come from two runs: check they describe the same image
        x0, y0 = int(bx), int(by)
        patch = lab[i, y0:int(math.ceil(by + bh)), x0:int(math.ceil(bx + bw))]
        assert (patch == a["category_id"] + 1).any(), "synth seg/det mismatch at image %d" % i
    boxes = [torch.tensor(b, dtype=torch.float32).view(-1, 4) for b in boxes]
    labels = [torch.tensor(l, dtype=torch.long) for l in labels]
    return x, boxes, labels, ids, d


def normalize(xb, ph, pw):
    x = train_demo.normalize(xb)  # BGR -> RGB, mean/std
    return F.pad(x, (0, pw - x.shape[3], 0, ph - x.shape[2]))  # Pad: zeros right/bottom


# ---- inference (mmdet 2.11 RetinaHead.get_bboxes, rescale with scale factor 1) ----------------
def retina_post(outs, b, anchors, img_h, img_w, nms_pre, score_thr=0.05, iou_thr=0.5, max_per=100):
    """Image b of the per-level (cls [B, HWA, C], reg [B, HWA, 4]) -> boxes, scores, labels."""
    mb, ms = [], []
    for (cls, reg), anc in zip(outs, anchors):
        s = cls[b].sigmoid()
        r = reg[b]
        a = anc
        if 0 < nms_pre < s.shape[0]:
            _, top = s.max(1)[0].topk(nms_pre)
            s, r, a = s[top], r[top], a[top]
        mb.append(det_torch.delta2bbox(a, r, [1.0, 1.0, 1.0, 1.0], (img_h, img_w)))
        ms.append(s)
    bb, sc = torch.cat(mb), torch.cat(ms)
    nc = sc.shape[1]
    bb = bb[:, None].expand(-1, nc, 4).reshape(-1, 4)
    lb = torch.arange(nc).view(1, -1).expand(sc.shape[0], -1).reshape(-1)
    sc = sc.reshape(-1)
    m = sc > score_thr
    bb, sc, lb = bb[m], sc[m], lb[m]
    keep = det_torch.batched_nms(bb, sc, lb, iou_thr)[:max_per]
    return bb[keep], sc[keep], lb[keep]


def detect(model, x, anchors, img_h, img_w, nms_pre, score_thr=0.05, iou_thr=0.5, max_per=100):
    with torch.no_grad():
        outs = model(x)
    return [retina_post(outs, b, anchors, img_h, img_w, nms_pre, score_thr, iou_thr, max_per)
            for b in range(x.shape[0])]


def results_json(dets, ids):
    out = []
    for (bb, sc, lb), iid in zip(dets, ids):
        for k in range(bb.shape[0]):
            x1, y1, x2, y2 = [float(v) for v in bb[k]]
            out.append({"image_id": iid, "bbox": [x1, y1, x2 - x1, y2 - y1], "score": float(sc[k]),
                        "category_id": int(lb[k]) + 1})
    return out


def eval_coco(ravlt, ann, extra, out_json):
    cmd = [ravlt, "--quiet", "eval", "coco", "--ann", ann, "--json", out_json] + extra
    r = subprocess.run(cmd, check=True, capture_output=True, text=True)
    with open(out_json) as f:
        return json.load(f)["stats"], r.stdout


def compare(pt, c_json, ids):
    """Match each PyTorch detection to the C one of the same image/label with the highest IoU."""
    by_img = {}
    for d in c_json:
        by_img.setdefault(d["image_id"], []).append(d)
    n_pt, n_c, matched, max_db, max_ds = 0, len(c_json), 0, 0.0, 0.0
    for (bb, sc, lb), iid in zip(pt, ids):
        cs = by_img.get(iid, [])
        n_pt += bb.shape[0]
        for k in range(bb.shape[0]):
            best, bd = None, 1e9
            for d in cs:
                if d["category_id"] != int(lb[k]) + 1:
                    continue
                x, y, w, h = d["bbox"]
                dist = max(abs(x - bb[k, 0]), abs(y - bb[k, 1]), abs(x + w - bb[k, 2]), abs(y + h - bb[k, 3]))
                if dist < bd:
                    best, bd = d, float(dist)
            if best is not None and bd < 0.5:
                matched += 1
                max_db = max(max_db, bd)
                max_ds = max(max_ds, abs(best["score"] - float(sc[k])))
    return n_pt, n_c, matched, max_db, max_ds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ravlt", required=True, help="the ravlt binary (synth, convert, eval)")
    ap.add_argument("--out", required=True, help="output .safetensors (a .pth is written beside it)")
    ap.add_argument("--train-count", type=int, default=1000)
    ap.add_argument("--val-count", type=int, default=60)
    ap.add_argument("--seed", type=int, default=2, help="training data seed (validation: seed + 1000)")
    ap.add_argument("--iters", type=int, default=1500)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dims", default="16,32,64,128")
    ap.add_argument("--depths", default="1,1,2,1")
    ap.add_argument("--heads", default="1,1,2,4")
    ap.add_argument("--neck", type=int, default=32, help="FPN and head channels")
    ap.add_argument("--stacked", type=int, default=2, help="stacked convs per head branch (mmdet: 4)")
    ap.add_argument("--nms-pre", type=int, default=1000)
    ap.add_argument("--time-limit", type=float, default=0,
                    help="stop after this many seconds (the lr schedule follows time or iterations, whichever ends first)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    dims = [int(v) for v in a.dims.split(",")]
    depths = [int(v) for v in a.depths.split(",")]
    heads = [int(v) for v in a.heads.split(",")]
    nc = len(CLASSES)
    tmp = tempfile.mkdtemp(prefix="ravlt_det_demo_")
    atexit.register(shutil.rmtree, tmp, True)  # the synthetic sets, also when a step fails
    t_data = time.time()
    x, boxes, labels, _, _ = synth(a.ravlt, tmp, "train", a.train_count, a.seed)
    xv, _, _, val_ids, val_dir = synth(a.ravlt, tmp, "val", a.val_count, a.seed + 1000)
    n, _, h, w = x.shape
    ph, pw = (h + 31) // 32 * 32, (w + 31) // 32 * 32
    anchors, sizes = level_anchors(ph, pw)
    all_anchors = torch.cat(anchors)
    flags = valid_flags(sizes, h, w)
    print("data: %d train + %d val images %dx%d (padded %dx%d), %d boxes, %d anchors, %.0f s" %
          (n, xv.shape[0], w, h, pw, ph, sum(b.shape[0] for b in boxes), all_anchors.shape[0],
           time.time() - t_data), flush=True)
    model = RetinaNet(dims, depths, heads, a.neck, nc, a.stacked)
    nparams = sum(p.numel() for p in model.parameters())
    print("model: dims %s depths %s heads %s, FPN/head %d channels, %d stacked convs: %.2f M params" %
          (dims, depths, heads, a.neck, a.stacked, nparams / 1e6), flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.01)
    t0 = time.time()
    model.train()
    it = 0
    while True:
        lr = train_demo.lr_at(a, it, t0)  # warm-up + cosine, by iterations or time
        if lr is None:
            break
        for g in opt.param_groups:
            g["lr"] = lr
        idx = torch.randint(0, n, (a.batch,)).tolist()
        flip = (torch.rand(a.batch) < 0.5).tolist()
        xb = x[idx]
        cls_t, reg_t, wts, pos_m = [], [], [], []
        for j, i in enumerate(idx):
            gb = boxes[i].clone()
            if flip[j]:
                xb[j] = xb[j].flip(-1)
                gb[:, 0], gb[:, 2] = w - boxes[i][:, 2], w - boxes[i][:, 0]
            asg = assign(all_anchors, gb)
            asg[~flags] = -1
            t = torch.zeros(all_anchors.shape[0], nc)
            pos = asg > 0
            t[pos, labels[i][asg[pos] - 1]] = 1
            d = torch.zeros(all_anchors.shape[0], 4)
            if pos.any():
                d[pos] = bbox2delta(all_anchors[pos], gb[asg[pos] - 1])
            cls_t.append(t)
            reg_t.append(d)
            wts.append(asg >= 0)
            pos_m.append(pos)
        cls_t, reg_t = torch.stack(cls_t), torch.stack(reg_t)
        wts, pos_m = torch.stack(wts), torch.stack(pos_m)
        outs = model(normalize(xb, ph, pw))
        cls = torch.cat([o[0] for o in outs], 1)
        reg = torch.cat([o[1] for o in outs], 1)
        npos = max(int(pos_m.sum()), 1)
        l_cls = focal_loss(cls[wts], cls_t[wts]) / npos
        l_reg = (reg[pos_m] - reg_t[pos_m]).abs().sum() / npos
        loss = l_cls + l_reg
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 35.0)
        opt.step()
        if it % 25 == 0:
            print("iter %d loss %.4f (cls %.4f reg %.4f, %d pos) lr %.2e  %.0f s" %
                  (it, loss.item(), l_cls.item(), l_reg.item(), npos, lr, time.time() - t0), flush=True)
        it += 1
    train_s = time.time() - t0
    print("trained %d iterations in %.0f s (final loss %.4f)" % (it, train_s, loss.item()), flush=True)

    model.eval()
    dets = []
    for i in range(0, xv.shape[0], 8):
        dets += detect(model, normalize(xv[i:i + 8], ph, pw), anchors, h, w, a.nms_pre)
    sd = {}
    for k, v in model.state_dict().items():
        if k.endswith("num_batches_tracked"):
            continue
        sd[k] = v.detach().float().contiguous()
    cfg = CONFIG.format(dims=dims, depths=depths, heads=heads, neck=a.neck, stacked=a.stacked, nc=nc,
                        nms_pre=a.nms_pre, classes=CLASSES, w=w, h=h)
    meta = {"config": cfg, "CLASSES": CLASSES,
            "ravlt_demo": "train_det_demo.py seed %d iters %d train_count %d" % (a.seed, it, a.train_count)}
    pth = os.path.splitext(a.out)[0] + ".pth"
    torch.save({"meta": meta, "state_dict": sd}, pth)
    subprocess.run([a.ravlt, "--quiet", "convert", pth, a.out], check=True)
    print("wrote %s and %s" % (pth, a.out), flush=True)

    ann = os.path.join(val_dir, "annotations", "instances.json")
    pt_json = os.path.join(tmp, "pt_results.json")
    pt_res = results_json(dets, val_ids)
    with open(pt_json, "w") as f:
        json.dump(pt_res, f)
    pt_stats, _ = eval_coco(a.ravlt, ann, ["--results", pt_json, "--iou-type", "bbox"], os.path.join(tmp, "pt_stats.json"))
    c_json = os.path.join(tmp, "c_results.json")
    c_stats, _ = eval_coco(a.ravlt, ann, ["--images", os.path.join(val_dir, "images"), "--weights", a.out,
                                          "--out", c_json], os.path.join(tmp, "c_stats.json"))
    with open(c_json) as f:
        c_res = json.load(f)
    n_pt, n_c, matched, db, ds = compare(dets, c_res, val_ids)
    print("validation (seed %d, %d images): box AP PyTorch %.2f (AP50 %.2f), ravlt %.2f (AP50 %.2f)" %
          (a.seed + 1000, xv.shape[0], 100 * pt_stats[0], 100 * pt_stats[1], 100 * c_stats[0], 100 * c_stats[1]),
          flush=True)
    print("parity: %d PyTorch and %d ravlt detections, %d matched (same image and label, box within 0.5 px); "
          "matched: max box difference %.2e px, max score difference %.2e" % (n_pt, n_c, matched, db, ds), flush=True)


if __name__ == "__main__":
    main()
