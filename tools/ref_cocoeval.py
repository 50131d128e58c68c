#!/usr/bin/env python3
"""Independent numpy reference of pycocotools' COCOeval (bbox/segm) and mask API.

Written from the documented semantics (../shared/fixtures/SEMANTICS.md, cocoeval.py /
coco.py / maskApi.c behaviour), not copied. It exists to cross-check the C evaluator on
cases pycocotools never saw (pycocotools cannot be installed here). Masks are handled as
numpy arrays (merge = OR, IoU = counts of AND/OR), so only the rasteriser (frPoly), the
string codec and toBbox are ports; everything else is computed differently from the C code.

Self-check against the shared fixtures:
    python3 tools/ref_cocoeval.py --check ../shared/fixtures
Evaluate one case folder:
    python3 tools/ref_cocoeval.py --case DIR     # prints JSON like expected.json
Needs numpy (Debian python3-numpy).
"""
import argparse
import json
import math
import os
import sys

import numpy as np


# ----------------------------------------------------------------------------- mask API
def rle_encode(mask_f):
    """mask_f: 2-D uint8 (h, w); returns counts over the column-major (Fortran) order."""
    flat = np.asarray(mask_f, dtype=np.uint8).reshape(-1, order='F') != 0
    counts = []
    p, c = False, 0
    # run lengths via change points
    if flat.size == 0:
        return [0]
    change = np.flatnonzero(flat[1:] != flat[:-1]) + 1
    bounds = np.concatenate(([0], change, [flat.size]))
    runs = np.diff(bounds).tolist()
    if flat[0]:
        runs = [0] + runs
    del p, c
    return [int(r) for r in runs]


def rle_decode(counts, h, w):
    flat = np.zeros(h * w, dtype=np.uint8)
    pos, v = 0, 0
    for c in counts:
        if v:
            flat[pos:pos + c] = 1
        pos += c
        v ^= 1
    return flat.reshape((h, w), order='F')


def rle_to_string(counts):
    out = []
    for i, c in enumerate(counts):
        x = int(c)
        if i > 2:
            x -= int(counts[i - 2])
        more = True
        while more:
            ch = x & 0x1f
            x >>= 5
            more = (x != -1) if (ch & 0x10) else (x != 0)
            if more:
                ch |= 0x20
            out.append(chr(ch + 48))
    return ''.join(out)


def rle_from_string(s):
    counts = []
    p = 0
    while p < len(s):
        x, k, more = 0, 0, True
        while more:
            c = ord(s[p]) - 48
            x |= (c & 0x1f) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and (c & 0x10):
                x |= -1 << (5 * k)
        if len(counts) > 2:
            x += counts[-2]
        counts.append(x)
    return counts


def rle_area(counts):
    return int(sum(counts[1::2]))


def rle_to_bbox(counts, h, w):
    m = (len(counts) // 2) * 2
    if m == 0:
        return [0.0, 0.0, 0.0, 0.0]
    xs, ys, xe, ye, cc, xp = w, h, 0, 0, 0, 0
    for j in range(m):
        cc += counts[j]
        t = cc - j % 2
        y = t % h
        x = (t - y) // h
        if j % 2 == 0:
            xp = x
        elif xp < x:
            ys, ye = 0, h - 1
        xs, xe, ys, ye = min(xs, x), max(xe, x), min(ys, y), max(ye, y)
    return [float(xs), float(ys), float(xe - xs + 1), float(ye - ys + 1)]


def _ctrunc(v):
    return int(v)  # Python int() truncates toward zero like a C cast


def fr_poly(xy, h, w):
    """Port of the x5 upsampling rasteriser; returns counts."""
    k = len(xy) // 2
    scale = 5.0
    x = [_ctrunc(scale * xy[2 * j] + .5) for j in range(k)]
    y = [_ctrunc(scale * xy[2 * j + 1] + .5) for j in range(k)]
    x.append(x[0])
    y.append(y[0])
    u, v = [], []
    for j in range(k):
        xs, xe, ys, ye = x[j], x[j + 1], y[j], y[j + 1]
        dx, dy = abs(xe - xs), abs(ys - ye)
        flip = (dx >= dy and xs > xe) or (dx < dy and ys > ye)
        if flip:
            xs, xe, ys, ye = xe, xs, ye, ys
        if dx >= dy:
            s = (ye - ys) / dx if dx else float('nan')
            for d in range(dx + 1):
                t = dx - d if flip else d
                u.append(t + xs)
                v.append(_ctrunc(ys + s * t + .5) if dx else ys)
        else:
            s = (xe - xs) / dy
            for d in range(dy + 1):
                t = dy - d if flip else d
                v.append(t + ys)
                u.append(_ctrunc(xs + s * t + .5))
    bx, by = [], []
    for j in range(1, len(u)):
        if u[j] != u[j - 1]:
            xd = float(u[j] if u[j] < u[j - 1] else u[j] - 1)
            xd = (xd + .5) / scale - .5
            if math.floor(xd) != xd or xd < 0 or xd > w - 1:
                continue
            yd = float(v[j] if v[j] < v[j - 1] else v[j - 1])
            yd = (yd + .5) / scale - .5
            if yd < 0:
                yd = 0.0
            elif yd > h:
                yd = float(h)
            yd = math.ceil(yd)
            bx.append(int(xd))
            by.append(int(yd))
    a = sorted([bx[j] * h + by[j] for j in range(len(bx))] + [h * w])
    prev = 0
    for j in range(len(a)):
        a[j], prev = a[j] - prev, a[j]
    b = [a[0]]
    j = 1
    while j < len(a):
        if a[j] > 0:
            b.append(a[j])
            j += 1
        else:
            j += 1
            if j < len(a):
                b[-1] += a[j]
                j += 1
    return b


def fr_bbox(bb, h, w):
    xs, ys = bb[0], bb[1]
    xe, ye = xs + bb[2], ys + bb[3]
    return fr_poly([xs, ys, xs, ye, xe, ye, xe, ys], h, w)


class Mask:
    """An RLE kept as (h, w, counts) plus a lazily decoded boolean array."""
    __slots__ = ('h', 'w', 'counts', '_m')

    def __init__(self, h, w, counts):
        self.h, self.w, self.counts, self._m = h, w, list(counts), None

    @property
    def m(self):
        if self._m is None:
            self._m = rle_decode(self.counts, self.h, self.w).astype(bool)
        return self._m

    @staticmethod
    def from_bool(b):
        return Mask(b.shape[0], b.shape[1], rle_encode(b.astype(np.uint8)))


def merge_union(masks):
    if len(masks) == 1:
        return masks[0]
    out = masks[0].m.copy()
    for mk in masks[1:]:
        out |= mk.m
    return Mask.from_bool(out)


def bb_iou(d, g, crowd):
    w = min(d[2] + d[0], g[2] + g[0]) - max(d[0], g[0])
    if w <= 0:
        return 0.0
    h = min(d[3] + d[1], g[3] + g[1]) - max(d[1], g[1])
    if h <= 0:
        return 0.0
    i = w * h
    u = d[2] * d[3] if crowd else d[2] * d[3] + g[2] * g[3] - i
    return i / u


def mask_iou(d, g, crowd):
    if bb_iou(rle_to_bbox(d.counts, d.h, d.w), rle_to_bbox(g.counts, g.h, g.w), crowd) <= 0:
        return 0.0
    if (d.h, d.w) != (g.h, g.w):
        return -1.0
    i = int(np.count_nonzero(d.m & g.m))
    if i == 0:
        return 0.0
    u = int(np.count_nonzero(d.m)) if crowd else int(np.count_nonzero(d.m | g.m))
    return float(i) / float(u)


# ----------------------------------------------------------------------------- COCO files
def ann_to_mask(seg, h, w):
    if isinstance(seg, list):
        if len(seg[0]) == 4:
            parts = [Mask(h, w, fr_bbox(p, h, w)) for p in seg]
        else:
            parts = [Mask(h, w, fr_poly(p, h, w)) for p in seg]
        return merge_union(parts)
    sh, sw = seg['size']
    if isinstance(seg['counts'], list):
        return Mask(sh, sw, seg['counts'])
    return Mask(sh, sw, rle_from_string(seg['counts']))


def load_res(gt, anns, iou_type, area_mode='box'):
    imgs = {im['id']: im for im in gt['images']}
    assert all(a['image_id'] in imgs for a in anns), 'results on unknown images'
    out = []
    box_branch = 'bbox' in anns[0] and anns[0]['bbox'] != []
    for i, a in enumerate(anns):
        a = dict(a)
        im = imgs[a['image_id']]
        if box_branch:
            bb = a['bbox']
            if 'segmentation' not in a:
                x1, x2, y1, y2 = bb[0], bb[0] + bb[2], bb[1], bb[1] + bb[3]
                a['segmentation'] = [[x1, y1, x1, y2, x2, y2, x2, y1]]
            a['area'] = bb[2] * bb[3]
        else:
            mk = ann_to_mask(a['segmentation'], im['height'], im['width'])
            a['area'] = rle_area(mk.counts)
            if 'bbox' not in a:
                a['bbox'] = rle_to_bbox(mk.counts, mk.h, mk.w)
        if iou_type == 'segm':
            a['_mask'] = ann_to_mask(a['segmentation'], im['height'], im['width'])
            if area_mode == 'mask':
                a['area'] = rle_area(a['_mask'].counts)
        a['id'] = i + 1
        a['iscrowd'] = 0
        out.append(a)
    return out


# ----------------------------------------------------------------------------- COCOeval
IOU_THRS = np.linspace(.5, 0.95, int(np.round((0.95 - .5) / .05)) + 1, endpoint=True)
REC_THRS = np.linspace(.0, 1.00, int(np.round((1.00 - .0) / .01)) + 1, endpoint=True)
AREA_RNG = [[0 ** 2, 1e5 ** 2], [0 ** 2, 32 ** 2], [32 ** 2, 96 ** 2], [96 ** 2, 1e5 ** 2]]
AREA_LBL = ['all', 'small', 'medium', 'large']


def evaluate(gt, dts, iou_type, max_dets=(1, 10, 100)):
    img_ids = sorted(set(im['id'] for im in gt['images']))
    cat_ids = sorted(set(c['id'] for c in gt['categories']))
    imgs = {im['id']: im for im in gt['images']}
    img_set, cat_set = set(img_ids), set(cat_ids)
    gts_by, dts_by = {}, {}
    # gts: by sorted image id, then file order
    gt_anns = [a for a in gt.get('annotations', []) if a['image_id'] in img_set and a['category_id'] in cat_set]
    order = sorted(range(len(gt_anns)), key=lambda j: (gt_anns[j]['image_id'], j))
    for j in order:
        a = dict(gt_anns[j])
        a['_ignore_base'] = bool(a.get('iscrowd', 0))
        if iou_type == 'segm':
            im = imgs[a['image_id']]
            a['_mask'] = ann_to_mask(a['segmentation'], im['height'], im['width'])
        gts_by.setdefault((a['image_id'], a['category_id']), []).append(a)
    for d in dts:
        if d['image_id'] in img_set and d['category_id'] in cat_set:
            dts_by.setdefault((d['image_id'], d['category_id']), []).append(d)
    T, R, K, A, M = len(IOU_THRS), len(REC_THRS), len(cat_ids), len(AREA_RNG), len(max_dets)
    maxdet = max_dets[-1]
    evals = {}  # (k, a, i) -> dict
    for k, c in enumerate(cat_ids):
        for i, im in enumerate(img_ids):
            g = gts_by.get((im, c), [])
            d = dts_by.get((im, c), [])
            if not g and not d:
                continue
            dsorted = [d[j] for j in np.argsort([-x['score'] for x in d], kind='mergesort')][:maxdet]
            ious = np.zeros((len(dsorted), len(g)))
            for di, dd in enumerate(dsorted):
                for gi, gg in enumerate(g):
                    crowd = int(gg.get('iscrowd', 0))
                    if iou_type == 'bbox':
                        ious[di, gi] = bb_iou(dd['bbox'], gg['bbox'], crowd)
                    else:
                        ious[di, gi] = mask_iou(dd['_mask'], gg['_mask'], crowd)
            for a, rng in enumerate(AREA_RNG):
                gig = np.array([1 if (gg['_ignore_base'] or gg['area'] < rng[0] or gg['area'] > rng[1]) else 0
                                for gg in g], dtype=int)
                gtind = np.argsort(gig, kind='mergesort')
                gs = [g[j] for j in gtind]
                gigs = gig[gtind]
                crowd = [int(gg.get('iscrowd', 0)) for gg in gs]
                iou_s = ious[:, gtind] if len(g) else ious
                D, G = len(dsorted), len(gs)
                gtm = np.zeros((T, G))
                dtm = np.zeros((T, D))
                dtig = np.zeros((T, D))
                if D and G:
                    for t, thr in enumerate(IOU_THRS):
                        for di, dd in enumerate(dsorted):
                            best = min(thr, 1 - 1e-10)
                            m = -1
                            for gi in range(G):
                                if gtm[t, gi] > 0 and not crowd[gi]:
                                    continue
                                if m > -1 and gigs[m] == 0 and gigs[gi] == 1:
                                    break
                                if iou_s[di, gi] < best:
                                    continue
                                best = iou_s[di, gi]
                                m = gi
                            if m == -1:
                                continue
                            dtig[t, di] = gigs[m]
                            dtm[t, di] = gs[m]['id']
                            gtm[t, m] = dd['id']
                out_rng = np.array([dd['area'] < rng[0] or dd['area'] > rng[1] for dd in dsorted]).reshape((1, D))
                dtig = np.logical_or(dtig, np.logical_and(dtm == 0, np.repeat(out_rng, T, 0)))
                evals[(k, a, i)] = {'scores': np.array([dd['score'] for dd in dsorted], dtype=float),
                                    'dtm': dtm, 'dtig': dtig, 'gig': gigs}
    precision = -np.ones((T, R, K, A, M))
    recall = -np.ones((T, K, A, M))
    for k in range(K):
        for a in range(A):
            E = [evals[(k, a, i)] for i in range(len(img_ids)) if (k, a, i) in evals]
            if not E:
                continue
            for m, md in enumerate(max_dets):
                sc = np.concatenate([e['scores'][:md] for e in E])
                inds = np.argsort(-sc, kind='mergesort')
                dtm = np.concatenate([e['dtm'][:, :md] for e in E], axis=1)[:, inds]
                dtig = np.concatenate([e['dtig'][:, :md] for e in E], axis=1)[:, inds]
                npig = int(np.count_nonzero(np.concatenate([e['gig'] for e in E]) == 0))
                if npig == 0:
                    continue
                tps = np.logical_and(dtm != 0, np.logical_not(dtig))
                fps = np.logical_and(dtm == 0, np.logical_not(dtig))
                tp_sum = np.cumsum(tps, axis=1).astype(np.float64)
                fp_sum = np.cumsum(fps, axis=1).astype(np.float64)
                for t in range(T):
                    tp, fp = tp_sum[t], fp_sum[t]
                    nd = len(tp)
                    rc = tp / npig
                    pr = tp / (fp + tp + np.spacing(1))
                    recall[t, k, a, m] = rc[-1] if nd else 0
                    # envelope from the right (a cumulative max on the reversed array)
                    pr = np.maximum.accumulate(pr[::-1])[::-1] if nd else pr
                    q = np.zeros(R)
                    idx = np.searchsorted(rc, REC_THRS, side='left')
                    valid = idx < nd
                    # everything from the first out-of-range index on stays 0
                    first_bad = int(np.argmin(valid)) if not valid.all() else R
                    q[:first_bad] = pr[idx[:first_bad]]
                    precision[t, :, k, a, m] = q
    return {'precision': precision, 'recall': recall, 'cat_ids': cat_ids, 'max_dets': list(max_dets)}


def summarize(ev):
    precision, recall, md = ev['precision'], ev['recall'], ev['max_dets']
    lines, stats = [], []

    def one(ap, thr=None, area='all', maxd=100):
        a = AREA_LBL.index(area)
        mi = [i for i, x in enumerate(md) if x == maxd]
        if ap:
            s = precision if thr is None else precision[np.where(thr == IOU_THRS)[0]]
            s = s[:, :, :, a, mi] if mi else np.zeros(0)
        else:
            s = recall if thr is None else recall[np.where(thr == IOU_THRS)[0]]
            s = s[:, :, a, mi] if mi else np.zeros(0)
        v = s[s > -1]
        mean = -1 if len(v) == 0 else np.mean(v)
        ious = '{:0.2f}:{:0.2f}'.format(IOU_THRS[0], IOU_THRS[-1]) if thr is None else '{:0.2f}'.format(thr)
        lines.append(' {:<18} {} @[ IoU={:<9} | area={:>6s} | maxDets={:>3d} ] = {:0.3f}'.format(
            'Average Precision' if ap else 'Average Recall', '(AP)' if ap else '(AR)', ious, area, maxd, mean))
        stats.append(float(mean))

    one(1)
    one(1, .5, maxd=md[2])
    one(1, .75, maxd=md[2])
    for ar in ('small', 'medium', 'large'):
        one(1, area=ar, maxd=md[2])
    one(0, maxd=md[0])
    one(0, maxd=md[1])
    one(0, maxd=md[2])
    for ar in ('small', 'medium', 'large'):
        one(0, area=ar, maxd=md[2])
    per_cat = []
    for k, c in enumerate(ev['cat_ids']):
        p = precision[:, :, k, 0, -1]
        p = p[p > -1]
        per_cat.append({'category_id': c, 'ap': float(np.mean(p)) if p.size else -1.0})
    return {'stats': stats, 'stats_hex': [float(s).hex() for s in stats], 'per_category_ap': per_cat,
            'summary': '\n'.join(lines) + '\n'}


def eval_case(case_dir, max_dets=(1, 10, 100), area_mode='box'):
    gt = json.load(open(os.path.join(case_dir, 'gt.json')))
    out = {}
    for iou in ('bbox', 'segm'):
        dts = load_res(gt, json.load(open(os.path.join(case_dir, 'dt_%s.json' % iou))), iou, area_mode)
        out[iou] = summarize(evaluate(gt, dts, iou, max_dets))
    return out


# ----------------------------------------------------------------------------- self-check
def check_rle_cases(path):
    c = json.load(open(path))
    bad = 0
    for e in c['encode']:
        m = rle_decode(e['uncompressed_counts'], e['h'], e['w'])
        cnt = rle_encode(m)
        bad += cnt != e['uncompressed_counts'] or rle_to_string(cnt) != e['counts']
        bad += rle_from_string(e['counts']) != cnt or rle_area(cnt) != e['area']
        bad += rle_to_bbox(cnt, e['h'], e['w']) != e['bbox']
    for e in c['frPoly']:
        parts = [Mask(e['h'], e['w'], fr_poly(p, e['h'], e['w'])) for p in e['polygons']]
        for pm, ex in zip(parts, e['per_polygon']):
            bad += rle_to_string(pm.counts) != ex['counts']
        mg = merge_union(parts)
        bad += rle_to_string(mg.counts) != e['merged']['counts']
    for e in c['frBbox']:
        for bb, ex in zip(e['bboxes'], e['rles']):
            bad += rle_to_string(fr_bbox(bb, e['h'], e['w'])) != ex['counts']
    for e in c['iou']:
        for di, d in enumerate(e['dt']):
            for gi, g in enumerate(e['gt']):
                if e['kind'] == 'bbox':
                    v = bb_iou(d, g, e['iscrowd'][gi])
                else:
                    v = mask_iou(Mask(*d['size'], rle_from_string(d['counts'])),
                                 Mask(*g['size'], rle_from_string(g['counts'])), e['iscrowd'][gi])
                bad += v != e['iou'][di][gi]
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--check', help='fixtures root: compare with coco_eval/* and rle/cases.json')
    ap.add_argument('--case', help='evaluate one case folder and print JSON')
    ap.add_argument('--mmdet-maxdets', action='store_true')
    a = ap.parse_args()
    md = (100, 300, 1000) if a.mmdet_maxdets else (1, 10, 100)
    if a.case:
        print(json.dumps(eval_case(a.case, md), indent=1))
        return 0
    if a.check:
        nbad = check_rle_cases(os.path.join(a.check, 'rle', 'cases.json'))
        print('rle cases: %d mismatches' % nbad)
        root = os.path.join(a.check, 'coco_eval')
        for case in sorted(os.listdir(root)):
            got = eval_case(os.path.join(root, case))
            exp = json.load(open(os.path.join(root, case, 'expected.json')))
            for iou in ('bbox', 'segm'):
                ok = got[iou]['stats_hex'] == exp[iou]['stats_hex'] and got[iou]['summary'] == exp[iou]['summary']
                ok = ok and all(x['ap'] == y['ap'] for x, y in zip(got[iou]['per_category_ap'],
                                                                    exp[iou]['per_category_ap']))
                nbad += not ok
                print('%s %s: %s' % (case, iou, 'identical' if ok else 'DIFFERENT'))
        return 1 if nbad else 0
    ap.print_help()
    return 2


if __name__ == '__main__':
    sys.exit(main())
