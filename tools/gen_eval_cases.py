#!/usr/bin/env python3
"""Generate randomized COCO evaluation cases with expected results from tools/ref_cocoeval.py.

Each case folder (tests/data/eval/random_<seed>/) has the layout of
../shared/fixtures/coco_eval/<case>/: gt.json, dt_bbox.json, dt_segm.json, expected.json.
The generator mixes what breaks evaluators: non-contiguous and shuffled ids, categories
without gt, multi-part polygons (partly outside the image), a box given as a 4-number
polygon, crowd gt as uncompressed and compressed RLE, gt areas exactly on the range bounds,
more than 100 detections per image and category, quantised scores (ties), empty masks,
detections of unknown categories, segm results with and without a bbox.

    python3 tools/ref_cocoeval.py --check ../shared/fixtures   # the reference is exact first
    python3 tools/gen_eval_cases.py --out tests/data/eval --seeds 1 2 3 4
"""
import argparse
import json
import math
import os
import sys

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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--out', required=True)
    ap.add_argument('--seeds', type=int, nargs='+', default=[1, 2, 3, 4])
    a = ap.parse_args()
    for seed in a.seeds:
        d = os.path.join(a.out, 'random_%02d' % seed)
        os.makedirs(d, exist_ok=True)
        gt, db, ds = make_case(seed)
        for name, obj in (('gt.json', gt), ('dt_bbox.json', db), ('dt_segm.json', ds)):
            with open(os.path.join(d, name), 'w') as f:
                json.dump(obj, f, separators=(',', ':'))
        exp = ref.eval_case(d)
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
