#!/usr/bin/env python3
"""A PyTorch port of the mmdet 2.11 detection parts used by RAVLT (FPN with a max-pool P6, RPN,
Cascade RoI head with ConvFC box heads, Mask R-CNN's Shared2FC head, FCN mask heads, mask
paste), written for ravlt's own checks and benchmarks: same state_dict key names, same
test-time semantics (SEMANTICS.md C-G). NMS and RoIAlign are written in torch (mmcv's C++
kernels are not available here): NMS is greedy over a score-sorted IoU matrix, RoIAlign is
vectorised over rois with the same sample count, mmcv's border rules. The backbone is the GLTA
port of tools/ravlt_torch.py. Needs only torch (Debian python3-torch).

  # the port against the official head fixtures (float64; --float32 shows how far the
  # official float32 computation lands from the float64 reference):
  python3 tools/det_torch.py check ../shared/fixtures/heads/cascade_mask_rcnn [--float32]
  # conditioning: float64 / float32 on one-ulp perturbations of the fixture's inputs (and
  # the perturbed fixtures written for `ravlt check-fixture DIR/seedK`):
  python3 tools/det_torch.py perturb ../shared/fixtures/heads/cascade_mask_rcnn [--write DIR]
  # head fixtures the stored ones lack (then: ravlt check-fixture OUT): another pad size,
  # or another configuration with random weights:
  python3 tools/det_torch.py resize ../shared/fixtures/heads/mask_rcnn OUT --size 256x320
  python3 tools/det_torch.py random cascade_mask_rcnn OUT --classes 7 --width 40 --fc 96
  # whole model (backbone + FPN + RPN + RoI heads + 100 pasted masks), random weights:
  python3 tools/det_torch.py bench cascade-s --size 800x1344 --threads 2 --runs 3 [--json]
  python3 tools/det_torch.py bench retinanet-s ...   # RetinaNet (tools/train_det_demo.py's port)
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
from seg_torch import FPN, ConvModule  # noqa: E402

CASCADE_STDS = [[0.1, 0.1, 0.2, 0.2], [0.05, 0.05, 0.1, 0.1], [0.033, 0.033, 0.067, 0.067]]
MAX_RATIO = abs(math.log(16.0 / 1000.0))


# ---- ops ------------------------------------------------------------------------------------
def base_anchors(stride, ratios=(0.5, 1.0, 2.0), scales=(8.0,)):
    r = torch.tensor(ratios, dtype=torch.float32)
    s = torch.tensor(scales, dtype=torch.float32)
    hr = torch.sqrt(r)
    wr = 1 / hr
    ws = (stride * wr[:, None] * s[None, :]).view(-1)
    hs = (stride * hr[:, None] * s[None, :]).view(-1)
    return torch.stack([-0.5 * ws, -0.5 * hs, 0.5 * ws, 0.5 * hs], dim=-1)


def grid_anchors(base, h, w, stride):
    sx = torch.arange(0, w) * stride
    sy = torch.arange(0, h) * stride
    yy, xx = torch.meshgrid(sy, sx, indexing="ij")
    shifts = torch.stack([xx.reshape(-1), yy.reshape(-1), xx.reshape(-1), yy.reshape(-1)], -1)
    return (base[None, :, :] + shifts[:, None, :].type_as(base)).view(-1, 4)


def delta2bbox(rois, deltas, stds, max_shape):
    """rois [n,4], deltas [n,4k] -> [n,4k], mmdet delta2bbox (means 0)."""
    stds = deltas.new_tensor(stds).repeat(deltas.size(1) // 4)
    d = deltas * stds
    dx, dy, dw, dh = d[:, 0::4], d[:, 1::4], d[:, 2::4], d[:, 3::4]
    dw = dw.clamp(-MAX_RATIO, MAX_RATIO)
    dh = dh.clamp(-MAX_RATIO, MAX_RATIO)
    px = ((rois[:, 0] + rois[:, 2]) * 0.5).unsqueeze(1)
    py = ((rois[:, 1] + rois[:, 3]) * 0.5).unsqueeze(1)
    pw = (rois[:, 2] - rois[:, 0]).unsqueeze(1)
    ph = (rois[:, 3] - rois[:, 1]).unsqueeze(1)
    gw, gh = pw * dw.exp(), ph * dh.exp()
    gx, gy = px + pw * dx, py + ph * dy
    x1 = (gx - gw * 0.5).clamp(0, max_shape[1])
    y1 = (gy - gh * 0.5).clamp(0, max_shape[0])
    x2 = (gx + gw * 0.5).clamp(0, max_shape[1])
    y2 = (gy + gh * 0.5).clamp(0, max_shape[0])
    return torch.stack([x1, y1, x2, y2], dim=-1).view(deltas.shape)


def nms(boxes, scores, thr):
    """mmcv nms (offset 0): indices kept, in descending score order (ties by index)."""
    if boxes.numel() == 0:
        return boxes.new_zeros(0, dtype=torch.long)
    order = torch.sort(scores, descending=True, stable=True)[1]
    b = boxes[order]
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    lt = torch.max(b[:, None, :2], b[None, :, :2])
    rb = torch.min(b[:, None, 2:], b[None, :, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    iou = inter / (area[:, None] + area[None, :] - inter)
    sup = (iou > thr).triu(1)
    n = b.size(0)
    keep = torch.ones(n, dtype=torch.bool)
    for i in range(n):  # greedy: a kept box suppresses the later ones it overlaps
        if keep[i]:
            keep &= ~sup[i]
    return order[keep]


def batched_nms(boxes, scores, idxs, thr):
    keep = []
    for c in torch.unique(idxs):
        m = (idxs == c).nonzero().squeeze(1)
        keep.append(m[nms(boxes[m], scores[m], thr)])
    keep = torch.cat(keep) if keep else boxes.new_zeros(0, dtype=torch.long)
    return keep[torch.sort(scores[keep], descending=True, stable=True)[1]]


def roi_align(feat, rois, out, scale):
    """mmcv RoIAlign (aligned, avg, sampling_ratio 0) of rois [n,5] on feat [1,C,H,W],
    vectorised over the rois that share a sample grid."""
    C, H, W = feat.shape[1:]
    n = rois.size(0)
    res = feat.new_zeros(n, C, out, out)
    if n == 0:
        return res
    x1 = rois[:, 1] * scale - 0.5
    y1 = rois[:, 2] * scale - 0.5
    rw = rois[:, 3] * scale - 0.5 - x1
    rh = rois[:, 4] * scale - 0.5 - y1
    gw = torch.ceil(rw / out).long().clamp(min=0)
    gh = torch.ceil(rh / out).long().clamp(min=0)
    f = feat[0].reshape(C, H * W)
    for g in torch.unique(torch.stack([gh, gw], 1), dim=0):
        sel = ((gh == g[0]) & (gw == g[1])).nonzero().squeeze(1)
        ny, nx = int(g[0]), int(g[1])
        if ny == 0 or nx == 0:
            continue

        def axis(start, size, grid, length):
            p = torch.arange(out, dtype=feat.dtype)
            i = torch.arange(grid, dtype=feat.dtype)
            b = (size / out)[:, None, None]
            v = start[:, None, None] + p[None, :, None] * b + (i[None, None, :] + 0.5) * b / grid
            v = v.reshape(v.size(0), -1)
            ok = (v >= -1.0) & (v <= length)
            v = v.clamp(min=0)
            lo = v.floor().long()
            top = lo >= length - 1
            lo = torch.where(top, torch.full_like(lo, length - 1), lo)
            hi = torch.where(top, lo, lo + 1)
            v = torch.where(top, lo.to(v.dtype), v)
            l = v - lo
            return lo, hi, (1 - l) * ok, l * ok

        ylo, yhi, wyl, wyh = axis(y1[sel], rh[sel], ny, H)
        xlo, xhi, wxl, wxh = axis(x1[sel], rw[sel], nx, W)
        acc = 0
        for yi, wy in ((ylo, wyl), (yhi, wyh)):
            for xi, wx in ((xlo, wxl), (xhi, wxh)):
                idx = (yi[:, :, None] * W + xi[:, None, :]).reshape(-1)
                v = f[:, idx].reshape(C, sel.numel(), yi.size(1), xi.size(1))
                acc = acc + v * (wy[:, :, None] * wx[:, None, :])[None]
        acc = acc.reshape(C, sel.numel(), out, ny, out, nx).sum((3, 5)) / (ny * nx)
        res[sel] = acc.permute(1, 0, 2, 3)
    return res


def roi_extract(feats, rois, out, strides=(4, 8, 16, 32)):
    scale = torch.sqrt((rois[:, 3] - rois[:, 1]) * (rois[:, 4] - rois[:, 2]))
    lvl = torch.floor(torch.log2(scale / 56 + 1e-6)).clamp(0, 3).long()
    res = feats[0].new_zeros(rois.size(0), feats[0].size(1), out, out)
    for i in range(4):
        m = (lvl == i).nonzero().squeeze(1)
        if m.numel():
            res[m] = roi_align(feats[i], rois[m], out, 1.0 / strides[i])
    return res


def paste_mask(prob, box, h, w, thr=0.5):
    """mmdet _do_paste_mask (skip_empty) + threshold: bool [h, w]."""
    x0i = max(int(math.floor(float(box[0]))) - 1, 0)
    y0i = max(int(math.floor(float(box[1]))) - 1, 0)
    x1i = min(int(math.ceil(float(box[2]))) + 1, w)
    y1i = min(int(math.ceil(float(box[3]))) + 1, h)
    out = torch.zeros(h, w, dtype=torch.bool)
    if x1i <= x0i or y1i <= y0i:
        return out
    iy = (torch.arange(y0i, y1i, dtype=prob.dtype) + 0.5 - box[1]) / (box[3] - box[1]) * 2 - 1
    ix = (torch.arange(x0i, x1i, dtype=prob.dtype) + 0.5 - box[0]) / (box[2] - box[0]) * 2 - 1
    ix = torch.where(torch.isinf(ix), torch.zeros_like(ix), ix)
    iy = torch.where(torch.isinf(iy), torch.zeros_like(iy), iy)
    grid = torch.stack([ix[None, :].expand(iy.numel(), -1), iy[:, None].expand(-1, ix.numel())], -1)
    m = F.grid_sample(prob[None, None], grid[None], align_corners=False)[0, 0]
    out[y0i:y1i, x0i:x1i] = m >= thr
    return out


# ---- heads ----------------------------------------------------------------------------------
class RPNHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.rpn_conv = nn.Conv2d(c, c, 3, padding=1)
        self.rpn_cls = nn.Conv2d(c, 3, 1)
        self.rpn_reg = nn.Conv2d(c, 12, 1)

    def proposals(self, feats, img_shape, nms_pre=1000, max_per=1000, thr=0.7):
        boxes, scores, ids = [], [], []
        for lvl, x in enumerate(feats):
            t = F.relu(self.rpn_conv(x))
            s = self.rpn_cls(t)[0].permute(1, 2, 0).reshape(-1).sigmoid()
            d = self.rpn_reg(t)[0].permute(1, 2, 0).reshape(-1, 4)
            stride = 4 << lvl
            a = grid_anchors(base_anchors(stride), x.size(2), x.size(3), stride).to(d.dtype)
            if s.numel() > nms_pre:
                s, o = torch.sort(s, descending=True, stable=True)
                s, d, a = s[:nms_pre], d[o[:nms_pre]], a[o[:nms_pre]]
            boxes.append(delta2bbox(a, d, [1, 1, 1, 1], img_shape))
            scores.append(s)
            ids.append(torch.full_like(s, lvl, dtype=torch.long))
        boxes, scores, ids = torch.cat(boxes), torch.cat(scores), torch.cat(ids)
        keep = batched_nms(boxes, scores, ids, thr)[:max_per]
        return boxes[keep], scores[keep]


class BBoxHead(nn.Module):
    """ConvFCBBoxHead (num_convs 3x3 ConvModules with BN, num_fcs fcs) / Shared2FCBBoxHead."""
    def __init__(self, c, num_convs, num_fcs, fc, classes):
        super().__init__()
        self.shared_convs = nn.ModuleList([ConvModule(c, c, 3) for _ in range(num_convs)])
        self.shared_fcs = nn.ModuleList([nn.Linear(c * 49 if i == 0 else fc, fc) for i in range(num_fcs)])
        self.fc_cls = nn.Linear(fc, classes + 1)
        self.fc_reg = nn.Linear(fc, 4 * classes)

    def forward(self, x):
        for m in self.shared_convs:
            x = m(x)
        x = x.flatten(1)
        for m in self.shared_fcs:
            x = F.relu(m(x))
        return self.fc_cls(x), self.fc_reg(x)


class MaskHead(nn.Module):
    def __init__(self, c, classes):
        super().__init__()
        self.convs = nn.ModuleList([ConvModule(c, c, 3, norm=False) for _ in range(4)])
        self.upsample = nn.ConvTranspose2d(c, c, 2, 2)
        self.conv_logits = nn.Conv2d(c, classes, 1)

    def forward(self, x):
        for m in self.convs:
            x = m(x)
        return self.conv_logits(F.relu(self.upsample(x)))


class RoIHead(nn.Module):
    def __init__(self, c, classes, cascade, fc=1024):
        super().__init__()
        self.cascade = cascade
        n = 3 if cascade else 1
        heads = [BBoxHead(c, 4 if cascade else 0, 1 if cascade else 2, fc, classes) for _ in range(n)]
        masks = [MaskHead(c, classes) for _ in range(n)]
        self.bbox_head = nn.ModuleList(heads) if cascade else heads[0]
        self.mask_head = nn.ModuleList(masks) if cascade else masks[0]

    def simple_test(self, feats, props, meta, trace=None, score_thr=0.05, max_per=100):
        heads = list(self.bbox_head) if self.cascade else [self.bbox_head]
        mheads = list(self.mask_head) if self.cascade else [self.mask_head]
        stds = CASCADE_STDS if self.cascade else CASCADE_STDS[:1]
        img = meta["img_shape"]
        rois = torch.cat([props.new_zeros(props.size(0), 1), props], 1)
        K = heads[0].fc_cls.out_features - 1
        scores_sum = 0
        for s, h in enumerate(heads):
            cls, reg = h(roi_extract(feats, rois, 7))
            if not self.cascade:  # StandardRoIHead's padding rule: y2 == 0 rows are zeroed
                pad = rois[:, 4] == 0
                cls[pad] = 0
                reg[pad] = 0
            if trace is not None:
                trace["roi.stage%d.rois" % s] = rois
                trace["roi.stage%d.cls_score" % s] = cls
                trace["roi.stage%d.bbox_pred" % s] = reg
            scores_sum = scores_sum + cls
            if s < len(heads) - 1:
                lab = cls[:, :-1].argmax(1)
                d = reg.view(reg.size(0), -1, 4)[torch.arange(reg.size(0)), lab]
                rois = torch.cat([rois[:, :1], delta2bbox(rois[:, 1:], d, stds[s], img)], 1)
        scores = F.softmax(scores_sum / len(heads), 1)
        boxes = delta2bbox(rois[:, 1:], reg, stds[len(heads) - 1], img)
        sf = boxes.new_tensor(meta["scale_factor"])
        boxes = (boxes.view(boxes.size(0), -1, 4) / sf).view(-1, 4)
        sc = scores[:, :-1].reshape(-1)
        labels = torch.arange(K).repeat(scores.size(0))
        valid = (sc > score_thr).nonzero().squeeze(1)
        boxes, sc, labels = boxes[valid], sc[valid], labels[valid]
        keep = batched_nms(boxes, sc, labels, 0.5)[:max_per]
        det_b, det_s, det_l = boxes[keep], sc[keep], labels[keep]
        if trace is not None:
            trace["det.bboxes"], trace["det.scores"], trace["det.labels"] = det_b, det_s, det_l
        if det_b.size(0) == 0:
            return det_b, det_s, det_l, torch.zeros(0, *meta["ori_shape"][:2], dtype=torch.bool)
        mb = det_b * sf
        mrois = torch.cat([mb.new_zeros(mb.size(0), 1), mb], 1)
        mf = roi_extract(feats, mrois, 14)
        prob = 0
        for s, m in enumerate(mheads):
            logits = m(mf)
            if trace is not None:
                trace["mask.stage%d.mask_pred" % s] = logits
            prob = prob + logits.sigmoid()
        prob = prob / len(mheads)
        if trace is not None:
            trace["mask.rois"], trace["mask.merged_probs"], trace["mask.paste_bboxes"] = mrois, prob, mb
        h, w = meta["ori_shape"][:2]
        pb = mb / sf
        masks = torch.stack([paste_mask(prob[i, det_l[i]], pb[i], h, w) for i in range(det_b.size(0))])
        return det_b, det_s, det_l, masks


class Detector(nn.Module):
    def __init__(self, backbone, in_channels, classes=80, cascade=True, c=256):
        super().__init__()
        self.backbone = backbone
        self.neck = FPN(in_channels, c, 5)
        self.rpn_head = RPNHead(c)
        self.roi_head = RoIHead(c, classes, cascade)

    def heads(self, feats, meta, trace=None, score_thr=0.05):
        p = self.neck(feats)
        props, pscores = self.rpn_head.proposals(p, meta["img_shape"])
        if trace is not None:
            for i, x in enumerate(p):
                trace["neck.out.%d" % i] = x
            trace["rpn.proposals"], trace["rpn.proposal_scores"] = props, pscores
        return self.roi_head.simple_test(p[:4], props, meta, trace, score_thr)


# ---- commands -------------------------------------------------------------------------------
def fixture_heads(d):
    """The head fixture in d: (config, io tensors, the port's FPN + RPN + RoI heads with the
    fixture's weights, in float32)."""
    cfg = json.load(open(os.path.join(d, "config.json")))
    sd = ravlt_torch.load_safetensors(os.path.join(d, "weights.safetensors"))
    io = ravlt_torch.load_safetensors(os.path.join(d, "io.safetensors"))
    cascade = cfg["kind"] == "cascade_mask_rcnn"
    rh = cfg["model"]["roi_head"]
    bh = rh["bbox_head"][0] if cascade else rh["bbox_head"]
    fc = bh["fc_out_channels"]
    c = cfg["model"]["neck"]["out_channels"]
    m = Detector(None, cfg["model"]["neck"]["in_channels"], bh["num_classes"], cascade, c)
    m.roi_head = RoIHead(c, bh["num_classes"], cascade, fc)
    missing = m.load_state_dict({k: v for k, v in sd.items() if not k.endswith("num_batches_tracked")},
                                strict=False)
    assert not [k for k in missing.missing_keys if not k.startswith("backbone")], missing.missing_keys
    return cfg, io, m.eval()


def ulp_perturbed(io, seed):
    """io with every value of the input features feat.0-3 moved by one float32 ulp, up or
    down at random (seed)."""
    g = torch.Generator().manual_seed(seed)
    out = dict(io)
    for i in range(4):
        f = io["feat.%d" % i].float()
        to = torch.where(torch.rand(f.shape, generator=g) < 0.5, torch.full_like(f, math.inf),
                         torch.full_like(f, -math.inf))
        out["feat.%d" % i] = torch.nextafter(f, to)
    return out


def cmd_perturb(a):
    """How well conditioned the fixture's final scores are: the float64 and float32 port on
    the fixture's inputs and on one-ulp perturbations of them, each against the float64
    reference outputs of the unperturbed inputs. --write DIR also writes the perturbed
    fixtures (DIR/seedK, weights and config linked) for `ravlt check-fixture`."""
    cfg, io, m = fixture_heads(a.dir)
    ref_s, ref_b = io["det.scores"].double(), io["det.bboxes"].double()
    for seed in range(a.seeds):
        if a.write:
            d = os.path.join(a.write, "seed%d" % seed)
            os.makedirs(d, exist_ok=True)
            for f in os.listdir(a.dir):
                if f != "io.safetensors" and not os.path.lexists(os.path.join(d, f)):
                    os.symlink(os.path.abspath(os.path.join(a.dir, f)), os.path.join(d, f))
            ravlt_torch.save_safetensors(os.path.join(d, "io.safetensors"), ulp_perturbed(io, seed))
    print("det.scores / det.bboxes max abs error against the float64 reference")
    for dt in (torch.float64, torch.float32):
        md = m.to(dt)
        for seed in range(-1, a.seeds):
            x = io if seed < 0 else ulp_perturbed(io, seed)
            with torch.no_grad():
                b, s, l, _ = md.heads([x["feat.%d" % i].to(dt) for i in range(4)], cfg["img_meta"], {})
            what = "inputs as stored" if seed < 0 else "1-ulp perturbation, seed %d" % seed
            if s.shape != ref_s.shape or not bool((l.long() == io["det.labels"].long()).all()):
                print("  %s %-30s detections differ in count, labels or order" % (dt, what))
                continue
            print("  %s %-30s %.3g / %.3g px" % (str(dt).replace("torch.", ""), what,
                                                float((s.double() - ref_s).abs().max()),
                                                float((b.double() - ref_b).abs().max())))
    return 0


def run_for_fixture(m, feats, meta, cfg):
    """The heads m on feats in float64 with cfg's test_cfg score threshold; returns the number
    of detections and the io tensors in the stored fixtures' layout: the inputs, every traced
    tensor (the per-detection mask tensors and masks trimmed to the first 20 detections),
    labels as int64, masks as uint8 and every detection's mask area."""
    thr = cfg.get("test_cfg", {}).get("rcnn", {}).get("score_thr", 0.05)
    trace = {}
    with torch.no_grad():
        b, _, _, masks = m.heads([f.double() for f in feats], meta, trace, score_thr=thr)
    keep = min(20, masks.size(0))
    out = {"feat.%d" % i: f.float() for i, f in enumerate(feats)}
    for k, v in trace.items():
        v = v[:keep] if k.startswith("mask.stage") or k == "mask.merged_probs" else v
        out[k] = v.long() if k == "det.labels" else v.float()
    out["det.masks"] = masks[:keep].to(torch.uint8)
    out["det.mask_areas"] = masks.flatten(1).sum(1).long()
    return b.size(0), out


def cmd_resize(a):
    """A head fixture at another input size: the fixture's weights and test_cfg (weights
    linked), its backbone features resized bilinearly to the new pyramid (pad size HxW,
    multiples of 32) plus a little seeded noise, a new img_meta (image up to 31 px smaller
    than the pad, another original size and scale factor), and every traced output computed
    in float64 - for checking ravlt on sizes and box layouts the stored fixtures lack."""
    cfg, io, m = fixture_heads(a.dir)
    m = m.double()
    ph, pw = (int(v) for v in a.size.lower().split("x"))
    if ph % 32 or pw % 32:
        raise SystemExit("--size: the pad size must be a multiple of 32 (got %dx%d)" % (ph, pw))
    g = torch.Generator().manual_seed(a.seed)
    feats = []
    for i in range(4):
        f = io["feat.%d" % i].float()
        f = F.interpolate(f, size=(ph >> (i + 2), pw >> (i + 2)), mode="bilinear", align_corners=False)
        feats.append(f + 0.05 * f.std() * torch.randn(f.shape, generator=g))
    ih = ph - int(torch.randint(0, 32, (1,), generator=g))
    iw = pw - int(torch.randint(0, 32, (1,), generator=g))
    sc = 0.5 + float(torch.rand(1, generator=g))
    oh, ow = max(1, int(round(ih / sc))), max(1, int(round(iw / sc)))
    ws, hs = float(torch.tensor(iw / ow, dtype=torch.float32)), float(torch.tensor(ih / oh, dtype=torch.float32))
    meta = {"ori_shape": [oh, ow, 3], "img_shape": [ih, iw, 3], "pad_shape": [ph, pw, 3],
            "scale_factor": [ws, hs, ws, hs], "flip": False, "flip_direction": None}
    ndet, out = run_for_fixture(m, feats, meta, cfg)
    os.makedirs(a.out, exist_ok=True)
    if not os.path.lexists(os.path.join(a.out, "weights.safetensors")):
        os.symlink(os.path.abspath(os.path.join(a.dir, "weights.safetensors")),
                   os.path.join(a.out, "weights.safetensors"))
    cfg = dict(cfg, img_meta=meta, feat_shapes=[list(f.shape) for f in feats],
               generated_by="tools/det_torch.py resize %s --size %s --seed %d" % (a.dir, a.size, a.seed))
    cfg.pop("io_keys", None)
    json.dump(cfg, open(os.path.join(a.out, "config.json"), "w"), indent=1)
    ravlt_torch.save_safetensors(os.path.join(a.out, "io.safetensors"), out)
    print("%s: pad %dx%d, image %dx%d, original %dx%d, %d detections" % (a.out, ph, pw, ih, iw, oh, ow, ndet))
    return 0


def cmd_random(a):
    """A detection head fixture of another configuration with random weights: num_classes,
    FPN / RPN width and fc width as given, backbone widths 16/32/48/64, random positive
    features of a 192x256 pad, test_cfg and kind from the named stored fixture, outputs in
    float64 - for check-fixture on configurations the stored fixtures lack."""
    cascade = a.kind == "cascade_mask_rcnn"
    g = torch.Generator().manual_seed(a.seed)
    inch = [16, 32, 48, 64]
    m = Detector(None, inch, a.classes, cascade, a.width)
    m.roi_head = RoIHead(a.width, a.classes, cascade, a.fc)
    sd = ravlt_torch.randomize_(m, g)
    m = m.double().eval()
    ph, pw = 192, 256
    feats = [torch.randn(1, inch[i], ph >> (i + 2), pw >> (i + 2), generator=g).abs() for i in range(4)]
    meta = {"ori_shape": [300, 410, 3], "img_shape": [180, 246, 3], "pad_shape": [ph, pw, 3],
            "scale_factor": [0.6, 0.6, 0.6, 0.6], "flip": False, "flip_direction": None}
    ref = json.load(open(os.path.join(a.fixtures, "heads", a.kind, "config.json")))
    ndet, out = run_for_fixture(m, feats, meta, ref)
    os.makedirs(a.out, exist_ok=True)
    ravlt_torch.save_safetensors(os.path.join(a.out, "weights.safetensors"),
                                 {k: v.float() for k, v in sd.items() if v.is_floating_point()})
    ravlt_torch.save_safetensors(os.path.join(a.out, "io.safetensors"), out)
    cfg = {"kind": a.kind, "img_meta": meta, "test_cfg": ref.get("test_cfg", {}),
           "generated_by": "tools/det_torch.py random %s --classes %d --width %d --fc %d --seed %d"
                           % (a.kind, a.classes, a.width, a.fc, a.seed)}
    json.dump(cfg, open(os.path.join(a.out, "config.json"), "w"), indent=1)
    print("%s: %d detections" % (a.out, ndet))
    return 0


def cmd_check(a):
    cfg, io, m = fixture_heads(a.dir)
    dt = torch.float32 if a.float32 else torch.float64
    m = m.to(dt)
    meta = cfg["img_meta"]
    trace = {}
    with torch.no_grad():
        feats = [io["feat.%d" % i].to(dt) for i in range(4)]
        b, s, l, masks = m.heads(feats, meta, trace)
    worst, bad = 0.0, 0
    for k, v in trace.items():
        if k not in io:
            continue
        ref = io[k].double()
        got = v.double()[:ref.size(0)] if k.startswith("mask.") else v.double()
        if got.shape != ref.shape:
            got = got.reshape(ref.shape)
        e = float((got - ref).abs().max() / max(1.0, float(ref.abs().max())))
        if k in ("det.scores", "det.bboxes"):
            e_abs = float((got - ref).abs().max())
            print("  %-24s max abs err %.3g" % (k, e_abs))
        worst = max(worst, e)
        ok = e <= (1e-3 if a.float32 else 1e-4)
        bad += not ok
        print("  %-24s rel err %.3g %s" % (k, e, "ok" if ok else "FAIL"))
    km = io["det.masks"].size(0)
    diff = int((masks[:km].to(torch.uint8) != io["det.masks"]).sum())
    print("  det.masks: %d of %d pixels differ" % (diff, io["det.masks"].numel()))
    bad += diff * 1000 > io["det.masks"].numel()
    print("%s: %d tensors, worst %.3g, %d failed" % (cfg["kind"], len(trace), worst, bad))
    return 1 if bad else 0


DET_PRESETS = {"cascade": True, "maskrcnn": False}


def randomize_bn(m, gen):
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.1, 0.1, generator=gen)
            mod.running_var.uniform_(0.5, 1.5, generator=gen)


class RetinaNet(nn.Module):
    """RALA_retinanet.py: the backbone, mmdet's FPN (start_level 1, extra convs on the input)
    and RetinaHead (4 + 4 convs, 9 anchors) of tools/train_det_demo.py (its post-processing:
    RetinaHead.get_bboxes, nms_pre 1000, score_thr 0.05, IoU 0.5, 100 per image), with
    mmdet's init of the head (normal(0, 0.01), cls bias at prior 0.01)."""
    def __init__(self, backbone, in_channels, classes=80, c=256):
        super().__init__()
        import train_det_demo  # noqa: E402 (it imports this module)
        self.t = train_det_demo
        self.backbone = backbone
        self.neck = train_det_demo.RetinaFPN(in_channels, c)
        self.bbox_head = train_det_demo.RetinaHead(c, classes, 4)

    def heads(self, feats, meta, trace=None, score_thr=0.05):
        outs = []
        for p in self.neck(feats):
            cls, reg = self.bbox_head.forward_level(p)
            outs.append((cls.permute(0, 2, 3, 1).reshape(1, -1, self.bbox_head.nc),
                         reg.permute(0, 2, 3, 1).reshape(1, -1, 4)))
        h, w = meta["img_shape"]
        anchors, _ = self.t.level_anchors(h, w)
        b, s, l = self.t.retina_post(outs, 0, anchors, h, w, 1000, score_thr)
        return b, s, l, None


def cmd_bench(a):
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    arch, size = a.model.split("-")
    bb = ravlt_torch.make_model("ravlt-" + size)
    dims = ravlt_torch.PRESETS["ravlt-" + size]["embed_dims"]
    if arch == "retinanet":
        m = RetinaNet(bb, dims).eval()
    else:
        m = Detector(bb, dims, 80, DET_PRESETS[arch]).eval()
    randomize_bn(m, torch.Generator().manual_seed(1))
    h, w = (int(v) for v in a.size.lower().split("x"))
    x = torch.randn(1, 3, h, w)
    meta = {"img_shape": (h, w), "ori_shape": (h * 3 // 5, w * 3 // 5), "scale_factor": [5 / 3] * 4}
    thr = a.score_thr if a.score_thr is not None else 0.05 if arch == "retinanet" else 0.0
    times, parts, ndet = [], [], 0
    with torch.no_grad():
        for r in range(a.runs + 1):  # run 0 is the warm-up
            t0 = time.perf_counter()
            feats = m.backbone(x)
            t1 = time.perf_counter()
            b, s, l, masks = m.heads(list(feats), meta, score_thr=thr)
            t2 = time.perf_counter()
            ndet = b.size(0)
            if r:
                times.append((t2 - t0) * 1e3)
                parts.append(((t1 - t0) * 1e3, (t2 - t1) * 1e3))
    i = times.index(statistics.median(times)) if len(times) % 2 else 0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    res = {"model": a.model, "size": a.size, "threads": a.threads, "median_ms": statistics.median(times),
           "min_ms": min(times), "max_ms": max(times), "backbone_ms": parts[i][0], "heads_ms": parts[i][1],
           "detections": ndet, "peak_rss_mb": rss}
    if a.json:
        print(json.dumps(res))
    else:
        print("%s %s threads %d: median %.0f ms (backbone %.0f, neck+heads %.0f), %d detections, peak RSS "
              "%.0f MB" % (a.model, a.size, a.threads, res["median_ms"], res["backbone_ms"], res["heads_ms"],
                           ndet, rss))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("dir")
    c.add_argument("--float32", action="store_true",
                   help="run the port in float32 (how far official float32 code is from float64)")
    q = sub.add_parser("perturb", help=cmd_perturb.__doc__.split("\n")[0])
    q.add_argument("dir")
    q.add_argument("--seeds", type=int, default=6)
    q.add_argument("--write", metavar="DIR", help="also write the perturbed fixtures here")
    r = sub.add_parser("resize", help=cmd_resize.__doc__.split("\n")[0])
    r.add_argument("dir")
    r.add_argument("out")
    r.add_argument("--size", required=True, help="pad size HxW (multiples of 32)")
    r.add_argument("--seed", type=int, default=0)
    q = sub.add_parser("random", help=cmd_random.__doc__.split("\n")[0])
    q.add_argument("kind", choices=["cascade_mask_rcnn", "mask_rcnn"])
    q.add_argument("out")
    q.add_argument("--classes", type=int, default=3)
    q.add_argument("--width", type=int, default=48, help="FPN / RPN / RoI channels")
    q.add_argument("--fc", type=int, default=64, help="box head fc width")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--fixtures", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared",
                                                      "fixtures"))
    b = sub.add_parser("bench")
    b.add_argument("model", help="cascade-t/s/b/l, maskrcnn-t/s/b/l or retinanet-t/s/b/l")
    b.add_argument("--size", default="800x1344", help="padded input HxW (1333x800 test scale)")
    b.add_argument("--threads", type=int, default=2)
    b.add_argument("--runs", type=int, default=3)
    b.add_argument("--score-thr", type=float, default=None,
                   help="default 0 for the R-CNNs (keeps max_per_img (100) detections and masks, "
                        "the worst case), RetinaNet its config's 0.05")
    b.add_argument("--json", action="store_true")
    a = p.parse_args()
    return {"check": cmd_check, "perturb": cmd_perturb, "resize": cmd_resize,
            "random": cmd_random, "bench": cmd_bench}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
