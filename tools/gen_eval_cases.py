#!/usr/bin/env python3
"""Generate randomized COCO evaluation cases with expected results from tools/ref_cocoeval.py.

Each case folder (tests/data/eval/random_coco_<seed>/) has the layout of
../shared/fixtures/coco_eval/<case>/: gt.json, dt_bbox.json, dt_segm.json, expected.json.
The generator mixes what breaks evaluators: non-contiguous and shuffled ids, categories
without gt, multi-part polygons (partly outside the image), a box given as a 4-number
polygon, crowd gt as uncompressed and compressed RLE, gt areas exactly on the range bounds,
more than 100 detections per image and category, quantised scores (ties), empty masks,
detections of unknown categories, segm results with and without a bbox.

    python3 tools/ref_cocoeval.py --check ../shared/fixtures   # the reference is exact first
    python3 tools/gen_eval_cases.py --out tests/data/eval --seeds 1 2 3 4
    python3 tools/gen_eval_cases.py --out tests/data/eval --miou --seeds 1 2 3

--miou writes random_miou_<seed>/ in the layout of ../shared/fixtures/miou/<case>/ (gt/*.png
in the ADE20K convention, pred/*.png class indices 0..149, expected.json) with the numbers of
a numpy port of mmseg 0.x metrics.py (np.bincount histograms, np.nanmean).
"""
import argparse
import json
import math
import os
import sys

import struct
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_cocoeval as ref  # noqa: E402


def star(rng, cx, cy, r, n):
    ang = np.sort(rng.uniform(0, 2 * math.pi, n))
    rad = r * rng.uniform(0.4, 1.0, n)
    pts = []
    for a, q in zip(ang, rad):
        pts += [round(float(cx + q * math.cos(a)), 2), round(float(cy + q * math.sin(a)), 2)]
    return pts


def shoelace(p):
    x, y = np.array(p[0::2]), np.array(p[1::2])
    return float(abs(np.dot(x, np.roll(y, 1)) - np.dot(y, np.roll(x, 1))) / 2)


def make_case(seed):
    rng = np.random.default_rng(seed)
    n_img = int(rng.integers(3, 7))
    img_ids = rng.choice(np.arange(1, 900000), n_img, replace=False).tolist()
    images = [{'id': int(i), 'width': int(rng.integers(60, 200)), 'height': int(rng.integers(60, 200)),
               'file_name': '%012d.jpg' % i} for i in img_ids]
    cat_ids = sorted(rng.choice(np.arange(1, 91), int(rng.integers(3, 6)), replace=False).tolist())
    cats = [{'id': int(c), 'name': 'c%d' % c, 'supercategory': 's'} for c in cat_ids]
    rng.shuffle(cats)
    no_gt_cat = cat_ids[-1]  # a category with detections but no gt
    anns, next_id = [], int(rng.integers(1, 1000))
    masks = {}  # ann index -> bool mask (for making detections)
    bounds = [32 ** 2, 96 ** 2, 0, 1e10]
    for im in images:
        h, w = im['height'], im['width']
        for _ in range(int(rng.integers(2, 7))):
            c = int(rng.choice(cat_ids[:-1]))
            kind = rng.choice(['poly', 'poly', 'poly', 'multi', 'box4', 'crowd_unc', 'crowd_rle'])
            cx, cy = rng.uniform(0, w), rng.uniform(0, h)
            r = rng.uniform(3, min(h, w) / 2)
            iscrowd = 0
            if kind in ('poly', 'multi', 'box4'):
                if kind == 'box4':
                    bw, bh = round(rng.uniform(2, w / 2), 2), round(rng.uniform(2, h / 2), 2)
                    segm = [[round(cx - bw / 2, 2), round(cy - bh / 2, 2), bw, bh]]
                    parts = [ref.Mask(h, w, ref.fr_bbox(segm[0], h, w))]
                else:
                    segm = [star(rng, cx, cy, r, int(rng.integers(3, 12)))]
                    if kind == 'multi':
                        segm.append(star(rng, rng.uniform(0, w), rng.uniform(0, h), r / 2, int(rng.integers(3, 8))))
                    parts = [ref.Mask(h, w, ref.fr_poly(p, h, w)) for p in segm]
                mk = ref.merge_union(parts)
                area = sum(shoelace(p) for p in segm) if kind != 'box4' else segm[0][2] * segm[0][3]
            else:
                yy, xx = np.mgrid[0:h, 0:w]
                b = ((xx - cx) ** 2 / (r * r) + (yy - cy) ** 2 / (r * r * 0.5)) <= 1
                mk = ref.Mask.from_bool(b)
                iscrowd = 1
                area = float(ref.rle_area(mk.counts))
                if kind == 'crowd_unc':
                    segm = {'counts': mk.counts, 'size': [h, w]}
                else:
                    segm = {'counts': ref.rle_to_string(mk.counts), 'size': [h, w]}
            if rng.random() < 0.25:  # exactly on a range bound
                area = float(rng.choice(bounds[:2]))
            bb = ref.rle_to_bbox(mk.counts, h, w)
            if bb[2] == 0:
                continue
            anns.append({'id': next_id, 'image_id': im['id'], 'category_id': c, 'segmentation': segm,
                         'area': area, 'bbox': [round(v, 2) for v in bb], 'iscrowd': iscrowd})
            masks[len(anns) - 1] = (mk.m, im)
            next_id += int(rng.integers(1, 50))
    order = rng.permutation(len(anns))
    anns_shuf = [anns[i] for i in order]
    gt = {'info': {'description': 'random case seed %d (tools/gen_eval_cases.py)' % seed},
          'images': images, 'annotations': anns_shuf, 'categories': cats}

    # detections: jittered copies of gt plus false positives; bbox and segm variants share them
    dets = []
    score_q = rng.choice([0, 10, 100])  # quantisation => ties
    def score():
        s = float(rng.uniform(0.01, 1))
        return round(s * score_q) / score_q if score_q else s
    for idx, a in enumerate(anns):
        mk, im = masks[idx]
        h, w = im['height'], im['width']
        for _ in range(int(rng.integers(0, 3))):
            dx, dy = int(rng.integers(-3, 4)), int(rng.integers(-3, 4))
            m2 = np.zeros_like(mk)
            ys, xs = np.nonzero(mk)
            ys2, xs2 = np.clip(ys + dy, 0, h - 1), np.clip(xs + dx, 0, w - 1)
            m2[ys2, xs2] = True
            c = a['category_id'] if rng.random() < 0.9 else int(rng.choice(cat_ids))
            dets.append((im, c, m2, score()))
    for im in images:
        h, w = im['height'], im['width']
        for _ in range(int(rng.integers(0, 6))):
            c = int(rng.choice(cat_ids))
            yy, xx = np.mgrid[0:h, 0:w]
            cx, cy, r = rng.uniform(0, w), rng.uniform(0, h), rng.uniform(1, 30)
            m2 = ((xx - cx) ** 2 + (yy - cy) ** 2) <= r * r
            if rng.random() < 0.1:
                m2[:] = False  # empty mask
            dets.append((im, c, m2, score()))
    if seed % 2 == 0:  # >100 detections for one image and category
        im = images[0]
        c = cat_ids[0]
        h, w = im['height'], im['width']
        for _ in range(130):
            yy, xx = np.mgrid[0:h, 0:w]
            cx, cy, r = rng.uniform(0, w), rng.uniform(0, h), rng.uniform(2, 40)
            dets.append((im, c, ((xx - cx) ** 2 + (yy - cy) ** 2) <= r * r, score()))
    # an unknown category (dropped by pycocotools)
    dets.append((images[0], 1000 + seed, np.ones((images[0]['height'], images[0]['width']), bool), 0.5))
    order = rng.permutation(len(dets))
    segm_with_bbox = seed % 3 == 0
    dt_bbox, dt_segm = [], []
    for i in order:
        im, c, m2, s = dets[i]
        mk = ref.Mask.from_bool(m2)
        bb = ref.rle_to_bbox(mk.counts, mk.h, mk.w)
        jb = [round(v + float(rng.uniform(-1, 1)), 2) for v in bb]
        if bb[2] == 0:
            jb = [5.0, 5.0, 0.0, 0.0]
        dt_bbox.append({'image_id': im['id'], 'category_id': c, 'bbox': jb, 'score': s})
        e = {'image_id': im['id'], 'category_id': c,
             'segmentation': {'size': [mk.h, mk.w], 'counts': ref.rle_to_string(mk.counts)}, 'score': s}
        if segm_with_bbox:
            e['bbox'] = jb
        dt_segm.append(e)
    del no_gt_cat
    return gt, dt_bbox, dt_segm


def write_png_gray(path, a):
    """Minimal 8-bit greyscale PNG writer (no PIL here)."""
    a = np.ascontiguousarray(a, dtype=np.uint8)
    h, w = a.shape
    raw = b''.join(b'\x00' + a[y].tobytes() for y in range(h))

    def chunk(t, d):
        return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
    with open(path, 'wb') as f:
        f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 0, 0, 0, 0)) +
                chunk(b'IDAT', zlib.compress(raw, 9)) + chunk(b'IEND', b''))


def mmseg_metrics(preds, gts, C=150, ignore=255):
    """numpy port of mmseg 0.x intersect_and_union / eval_metrics with reduce_zero_label."""
    I, U, P, L = (np.zeros(C, dtype=np.float64) for _ in range(4))
    for pred, gt in zip(preds, gts):
        lab = gt.astype(np.uint8).copy()
        lab[lab == 0] = 255
        lab = (lab - 1).astype(np.uint8)
        lab[lab == 254] = 255
        keep = lab != ignore
        p, l = pred[keep].astype(np.int64), lab[keep].astype(np.int64)
        hist = lambda v: np.bincount(v[(v >= 0) & (v < C)], minlength=C).astype(np.float64)
        i_, p_, l_ = hist(p[p == l]), hist(p), hist(l)
        I += i_; P += p_; L += l_; U += p_ + l_ - i_
    with np.errstate(invalid='ignore', divide='ignore'):
        iou, acc = I / U, I / L
    aacc = I.sum() / L.sum()
    rnd = lambda v: float(np.round(v * 100, 2) / 100)
    nn = lambda v: [None if np.isnan(x) else float(x) for x in v]
    return {'aAcc': float(aacc), 'mIoU': float(np.nanmean(iou)), 'mAcc': float(np.nanmean(acc)),
            'IoU': nn(iou), 'Acc': nn(acc),
            'total_area_intersect': [int(x) for x in I], 'total_area_union': [int(x) for x in U],
            'total_area_pred_label': [int(x) for x in P], 'total_area_label': [int(x) for x in L],
            'mmseg_reported': {'aAcc': rnd(aacc), 'mIoU': rnd(np.nanmean(iou)), 'mAcc': rnd(np.nanmean(acc))}}


def make_miou_case(out, seed):
    rng = np.random.default_rng(1000 + seed)
    d = os.path.join(out, 'random_miou_%02d' % seed)
    os.makedirs(os.path.join(d, 'gt'), exist_ok=True)
    os.makedirs(os.path.join(d, 'pred'), exist_ok=True)
    preds, gts, images = [], [], []
    classes = rng.choice(150, int(rng.integers(5, 40)), replace=False)
    for i in range(int(rng.integers(2, 5))):
        h, w = int(rng.integers(20, 90)), int(rng.integers(20, 90))
        # blocky gt regions over a few classes, with 0 (other) and 255 pixels
        bh, bw = int(rng.integers(3, 10)), int(rng.integers(3, 10))
        blocks = rng.choice(np.concatenate([classes + 1, [0, 255, 150, 1]]), ((h + bh - 1) // bh, (w + bw - 1) // bw))
        gt = np.kron(blocks, np.ones((bh, bw), dtype=np.int64))[:h, :w].astype(np.uint8)
        pred = np.where(gt == 0, rng.choice(classes, (h, w)), gt.astype(np.int64) - 1)
        pred = np.where(gt == 255, rng.choice(classes, (h, w)), pred)
        noise = rng.random((h, w)) < rng.uniform(0.05, 0.6)
        pred = np.where(noise, rng.choice(np.concatenate([classes, [149, 0]]), (h, w)), pred).astype(np.uint8)
        if rng.random() < 0.3:
            pred[rng.random((h, w)) < 0.05] = 255  # "no class"
        name = 'img_%02d' % i
        write_png_gray(os.path.join(d, 'gt', name + '.png'), gt)
        write_png_gray(os.path.join(d, 'pred', name + '.png'), pred)
        preds.append(pred)
        gts.append(gt)
        images.append({'name': name, 'pred': 'pred/%s.png' % name, 'gt': 'gt/%s.png' % name, 'height': h, 'width': w})
    exp = {'convention': {'num_classes': 150, 'ignore_index': 255, 'reduce_zero_label': True},
           'generator': 'tools/gen_eval_cases.py --miou seed %d' % seed, 'images': images}
    exp.update(mmseg_metrics(preds, gts))
    with open(os.path.join(d, 'expected.json'), 'w') as f:
        json.dump(exp, f, indent=1)
    print('%s: mIoU %.6f aAcc %.6f' % (d, exp['mIoU'], exp['aAcc']))


def read_png_gray(path):
    """Minimal reader for 8-bit greyscale non-interlaced PNGs (the fixtures' label maps)."""
    data = open(path, 'rb').read()
    pos, idat = 8, b''
    w = h = None
    while pos < len(data):
        n, t = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if t == b'IHDR':
            w, h, depth, ctype, _, _, inter = struct.unpack('>IIBBBBB', body)
            assert depth == 8 and ctype == 0 and inter == 0, 'only 8-bit grey PNGs'
        elif t == b'IDAT':
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    out = np.zeros((h, w), dtype=np.uint8)
    prev = np.zeros(w, dtype=np.int64)
    for y in range(h):
        f = raw[y * (w + 1)]
        line = np.frombuffer(raw[y * (w + 1) + 1:(y + 1) * (w + 1)], dtype=np.uint8).astype(np.int64)
        cur = np.zeros(w, dtype=np.int64)
        for x in range(w):
            a = cur[x - 1] if x else 0
            b = prev[x]
            c = prev[x - 1] if x else 0
            if f == 0: pr = 0
            elif f == 1: pr = a
            elif f == 2: pr = b
            elif f == 3: pr = (a + b) // 2
            else:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[x] = (line[x] + pr) & 255
        out[y] = cur
        prev = cur
    return out


def check_miou(root):
    """The numpy mmseg port against ../shared/fixtures/miou/*: number of mismatching cases."""
    bad = 0
    for case in sorted(os.listdir(root)):
        d = os.path.join(root, case)
        exp = json.load(open(os.path.join(d, 'expected.json')))
        preds = [read_png_gray(os.path.join(d, im['pred'])) for im in exp['images']]
        gts = [read_png_gray(os.path.join(d, im['gt'])) for im in exp['images']]
        got = mmseg_metrics(preds, gts)
        ok = all(got[k] == exp[k] for k in ('aAcc', 'mIoU', 'mAcc', 'IoU', 'Acc', 'total_area_intersect',
                                             'total_area_union', 'total_area_pred_label', 'total_area_label'))
        print('%s: %s' % (case, 'identical' if ok else 'DIFFERENT'))
        bad += not ok
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--out', required=True)
    ap.add_argument('--seeds', type=int, nargs='+', default=[1, 2, 3, 4])
    ap.add_argument('--miou', action='store_true', help='generate mIoU cases instead')
    ap.add_argument('--check-miou', help='compare the mmseg port with a fixtures miou folder first')
    a = ap.parse_args()
    if a.check_miou:
        return 1 if check_miou(a.check_miou) else 0
    if a.miou:
        for seed in a.seeds:
            make_miou_case(a.out, seed)
        return 0
    for seed in a.seeds:
        d = os.path.join(a.out, 'random_coco_%02d' % seed)
        os.makedirs(d, exist_ok=True)
        gt, db, ds = make_case(seed)
        for name, obj in (('gt.json', gt), ('dt_bbox.json', db), ('dt_segm.json', ds)):
            with open(os.path.join(d, name), 'w') as f:
                json.dump(obj, f, separators=(',', ':'))
        exp = ref.eval_case(d)
        # the options: mask areas for segm results, mmdet's maxDets 100/300/1000
        g = json.load(open(os.path.join(d, 'gt.json')))
        exp['segm_area_mask'] = ref.summarize(ref.evaluate(g, ref.load_res(g, ds, 'segm', 'mask'), 'segm'))
        exp['bbox_mmdet_maxdets'] = ref.summarize(ref.evaluate(g, ref.load_res(g, db, 'bbox'), 'bbox', (100, 300, 1000)))
        exp['generator'] = 'tools/gen_eval_cases.py seed %d' % seed
        exp['reference'] = 'tools/ref_cocoeval.py (numpy port of pycocotools semantics; reproduces ' \
                           '../shared/fixtures/coco_eval and rle exactly)'
        with open(os.path.join(d, 'expected.json'), 'w') as f:
            json.dump(exp, f, indent=1)
        print('%s: %d gt, %d dets, bbox AP %.4f, segm AP %.4f' % (
            d, len(gt['annotations']), len(db), exp['bbox']['stats'][0], exp['segm']['stats'][0]))
    return 0


if __name__ == '__main__':
    sys.exit(main())
