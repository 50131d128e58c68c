"""pycocotools.cocoeval.COCOeval over libravlt's evaluator (eval/cocoeval.h).

The same Params, printed lines, stats and eval arrays as pycocotools 2.0.11, bit for bit, for
bbox, segm and keypoints (OKS with numpy's exp, so equal to pycocotools' on this machine). The
per-image records pycocotools keeps (``evalImgs``, ``ious``, ``_gts``, ``_dts``) are built
when first read, from the library's evaluation, so ``evaluate()`` stays fast when nobody reads
them. ``computeIoU``, ``computeOks``, ``evaluateImg`` and ``accumulate(p)`` with other
parameters than the evaluated ones work as in pycocotools (in numpy, over those records).
"""
import copy
import ctypes
import datetime
import time
from collections import defaultdict
from typing import Any, Dict, List, Optional

import numpy as np

from .. import _lib
from .._lib import lib, Ctx, Error
from . import mask as maskUtils
from ._errors import CocoError, CocoKeyError, CocoValueError
from .coco import IOU_BBOX, IOU_KEYPOINTS, IOU_SEGM, COCO, _Handle

__all__ = ['COCOeval', 'Params']

_IOU_TYPES = {'bbox': IOU_BBOX, 'segm': IOU_SEGM, 'keypoints': IOU_KEYPOINTS}

# exp over a C buffer in place, with numpy (so OKS are the doubles pycocotools' np.exp gives)
_VEXP_T = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_double), ctypes.c_size_t, ctypes.c_void_p)


def _np_exp(v, n, user):
    if n:
        a = np.ctypeslib.as_array(v, shape=(n,))
        np.exp(a, out=a)


_VEXP = _VEXP_T(_np_exp)
_sigs_done = False


def _sigs():
    """ctypes signatures of the entry points added for evalImgs and keypoints."""
    global _sigs_done
    if _sigs_done:
        return
    P, c_void_p, c_size, c_int = ctypes.POINTER, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
    f = lib.rv_py_eval_run_kpts
    f.restype = c_int
    f.argtypes = [P(c_void_p), c_void_p, c_void_p, c_void_p, c_size, c_void_p, c_size, c_void_p, c_int, c_void_p,
                  c_int, c_void_p, c_int, c_void_p, _lib.pp_char, c_int, c_int, c_int, c_void_p, c_void_p, c_void_p,
                  c_void_p, c_int, _VEXP_T, c_int, c_void_p]
    lib.rv_py_eval_num_stats.restype = c_int
    lib.rv_py_eval_num_stats.argtypes = [c_void_p]
    lib.rv_py_eval_num_pairs.restype = c_size
    lib.rv_py_eval_num_pairs.argtypes = [c_void_p]
    lib.rv_py_eval_pair_dims.restype = None
    lib.rv_py_eval_pair_dims.argtypes = [c_void_p, c_void_p]
    lib.rv_py_eval_details.restype = c_int
    lib.rv_py_eval_details.argtypes = [c_void_p] + [c_void_p] * 10 + [c_int, c_void_p]
    _sigs_done = True


class Params:
    """pycocotools' Params: the evaluation settings (bbox / segm: setDetParams, keypoints:
    setKpParams). ``kpt_oks_sigmas`` may also be a dict {category id: sigmas} (per-category
    sigmas; pycocotools takes one array)."""

    def setDetParams(self) -> None:
        """Detection defaults: 10 IoU thresholds .5:.05:.95, 101 recall thresholds, maxDets
        [1, 10, 100], areas all / small / medium / large."""
        self.imgIds = []
        self.catIds = []
        self.iouThrs = np.linspace(.5, 0.95, int(np.round((0.95 - .5) / .05)) + 1, endpoint=True)
        self.recThrs = np.linspace(.0, 1.00, int(np.round((1.00 - .0) / .01)) + 1, endpoint=True)
        self.maxDets = [1, 10, 100]
        self.areaRng = [[0 ** 2, 1e5 ** 2], [0 ** 2, 32 ** 2], [32 ** 2, 96 ** 2], [96 ** 2, 1e5 ** 2]]
        self.areaRngLbl = ['all', 'small', 'medium', 'large']
        self.useCats = 1

    def setKpParams(self) -> None:
        """Keypoint defaults: maxDets [20], areas all / medium / large, COCO's 17 sigmas."""
        self.imgIds = []
        self.catIds = []
        self.iouThrs = np.linspace(.5, 0.95, int(np.round((0.95 - .5) / .05)) + 1, endpoint=True)
        self.recThrs = np.linspace(.0, 1.00, int(np.round((1.00 - .0) / .01)) + 1, endpoint=True)
        self.maxDets = [20]
        self.areaRng = [[0 ** 2, 1e5 ** 2], [32 ** 2, 96 ** 2], [96 ** 2, 1e5 ** 2]]
        self.areaRngLbl = ['all', 'medium', 'large']
        self.useCats = 1
        self.kpt_oks_sigmas = np.array([.26, .25, .25, .35, .35, .79, .79, .72, .72, .62, .62, 1.07, 1.07, .87,
                                        .87, .89, .89]) / 10.0

    def __init__(self, iouType: str = 'segm') -> None:
        if iouType == 'segm' or iouType == 'bbox':
            self.setDetParams()
        elif iouType == 'keypoints':
            self.setKpParams()
        else:
            raise CocoError('iouType not supported')
        self.iouType = iouType
        self.useSegm = None


def _copy_params(p):
    """copy.deepcopy(p), without copying each numpy scalar of a 5,000-id list one by one (they
    are immutable): lists of scalars are copied as lists."""
    q = copy.copy(p)
    for k, v in vars(p).items():
        if isinstance(v, list) and all(isinstance(x, (int, float, str, np.generic)) for x in v):
            setattr(q, k, list(v))
        else:
            setattr(q, k, copy.deepcopy(v))
    return q


def _same(a, b) -> bool:
    try:
        return bool(np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object)))
    except Exception:
        return False


class COCOeval:
    """pycocotools.cocoeval.COCOeval: evaluate(), accumulate(), summarize() on a ground truth
    COCO and a COCO of results (cocoGt.loadRes(...)), for iouType 'bbox', 'segm' or
    'keypoints'. ``str(E)`` is the summary text."""

    def __init__(self, cocoGt: Optional[COCO] = None, cocoDt: Optional[COCO] = None, iouType: str = 'segm') -> None:
        if not iouType:
            print('iouType not specified. use default iouType segm')
        self.cocoGt = cocoGt
        self.cocoDt = cocoDt
        self.eval: Dict[str, Any] = {}
        self.params = Params(iouType=iouType)
        self._paramsEval = {}
        self.stats = []
        self._ev = None
        self._evalImgs = defaultdict(list)
        self._ious: Dict[Any, Any] = {}
        self._gts_ = defaultdict(list)
        self._dts_ = defaultdict(list)
        self._prepared = False
        self._details = None
        self._summary: List[str] = []
        if cocoGt is not None:
            self.params.imgIds = sorted(cocoGt.getImgIds())
            self.params.catIds = sorted(cocoGt.getCatIds())

    # ---- pycocotools' per-image records, built when read ----
    @property
    def evalImgs(self):
        """[K x A x I] evaluateImg records (None where an image has no gt and no detection of
        the category), in pycocotools' order: category, area range, image."""
        if self._ev is not None and self._evalImgs is None:
            self._evalImgs = self._build_evalImgs()
        return self._evalImgs

    @evalImgs.setter
    def evalImgs(self, v) -> None:
        self._evalImgs = v
        self._user_evalImgs = True

    @property
    def ious(self) -> dict:
        """{(imgId, catId): IoU (or OKS) matrix, detections (score order) x gt} of evaluate()."""
        if self._ev is not None and self._ious is None:
            self._ious = self._build_ious()
        return self._ious

    @ious.setter
    def ious(self, v) -> None:
        self._ious = v

    @property
    def _gts(self):
        if not self._prepared and self.cocoGt is not None and self._ev is not None:
            self._prepare()
        return self._gts_

    @_gts.setter
    def _gts(self, v):
        self._gts_ = v

    @property
    def _dts(self):
        if not self._prepared and self.cocoDt is not None and self._ev is not None:
            self._prepare()
        return self._dts_

    @_dts.setter
    def _dts(self, v):
        self._dts_ = v

    def _prepare(self) -> None:
        """_gts and _dts as pycocotools' _prepare makes them (segm: the segmentations become
        RLEs in place; gt 'ignore' from 'iscrowd', keypoints: also num_keypoints == 0)."""
        p = self.params
        if p.useCats:
            gts = self.cocoGt.loadAnns(self.cocoGt.getAnnIds(imgIds=p.imgIds, catIds=p.catIds))
            dts = self.cocoDt.loadAnns(self.cocoDt.getAnnIds(imgIds=p.imgIds, catIds=p.catIds))
        else:
            gts = self.cocoGt.loadAnns(self.cocoGt.getAnnIds(imgIds=p.imgIds))
            dts = self.cocoDt.loadAnns(self.cocoDt.getAnnIds(imgIds=p.imgIds))
        if p.iouType == 'segm':
            for anns, coco in ((gts, self.cocoGt), (dts, self.cocoDt)):
                for ann in anns:
                    ann['segmentation'] = coco.annToRLE(ann)
        for gt in gts:
            gt['ignore'] = gt['ignore'] if 'ignore' in gt else 0
            gt['ignore'] = 'iscrowd' in gt and gt['iscrowd']
            if p.iouType == 'keypoints':
                gt['ignore'] = (gt['num_keypoints'] == 0) or gt['ignore']
        g, d = defaultdict(list), defaultdict(list)
        for gt in gts:
            g[gt['image_id'], gt['category_id']].append(gt)
        for dt in dts:
            d[dt['image_id'], dt['category_id']].append(dt)
        self._gts_, self._dts_ = g, d
        self._prepared = True

    def _details_arrays(self) -> dict:
        """Every evaluated pair's evaluateImg, from the library (one call)."""
        if self._details is None:
            _sigs()
            ev = self._ev.p
            n = int(lib.rv_py_eval_num_pairs(ev))
            dims = np.zeros((max(n, 1), 4), dtype=np.int64)
            lib.rv_py_eval_pair_dims(ev, _lib.ptr(dims))
            dims = dims[:n]
            pe = self._paramsEval
            A, T = len(pe.areaRng), len(pe.iouThrs)
            D, G = dims[:, 2], dims[:, 3]
            sD, sG, sDG = int(D.sum()), int(G.sum()), int((D * G).sum())
            z = {
                'dt_ids': np.zeros(max(sD, 1), np.int64), 'dt_scores': np.zeros(max(sD, 1)),
                'gt_ids': np.zeros(max(sG, 1), np.int64), 'ious': np.zeros(max(sDG, 1)),
                'gt_order': np.zeros(max(A * sG, 1), np.int64), 'gt_ignore': np.zeros(max(A * sG, 1), np.uint8),
                'dt_matches': np.zeros(max(A * T * sD, 1), np.int64),
                'gt_matches': np.zeros(max(A * T * sG, 1), np.int64),
                'dt_ignore': np.zeros(max(A * T * sD, 1), np.uint8), 'has_ious': np.zeros(max(n, 1), np.uint8)}
            with Ctx() as c:
                c.check(lib.rv_py_eval_details(ev, *[_lib.ptr(z[k]) for k in (
                    'dt_ids', 'dt_scores', 'gt_ids', 'ious', 'gt_order', 'gt_ignore', 'dt_matches', 'gt_matches',
                    'dt_ignore', 'has_ious')], 0, c.ctx))
            z['dims'] = dims
            z['od'] = np.concatenate([[0], np.cumsum(D)]).astype(np.int64)
            z['og'] = np.concatenate([[0], np.cumsum(G)]).astype(np.int64)
            z['oi'] = np.concatenate([[0], np.cumsum(D * G)]).astype(np.int64)
            self._details = z
        return self._details

    def _eval_ids(self):
        pe = self._paramsEval
        cats = pe.catIds if pe.useCats else [-1]
        return pe.imgIds, cats

    def _build_ious(self) -> dict:
        z = self._details_arrays()
        imgs, cats = self._eval_ids()
        out = {(i, k): [] for i in imgs for k in cats}
        for q, (ii, kk, D, G) in enumerate(z['dims']):
            if z['has_ious'][q]:
                o = z['oi'][q]
                out[imgs[ii], cats[kk]] = z['ious'][o:o + D * G].reshape(D, G).copy()
        return out

    def _build_evalImgs(self) -> list:
        z = self._details_arrays()
        pe = self._paramsEval
        imgs, cats = self._eval_ids()
        I, A, T = len(imgs), len(pe.areaRng), len(pe.iouThrs)
        maxDet = pe.maxDets[-1]
        out = [None] * (len(cats) * A * I)
        for q, (ii, kk, D, G) in enumerate(z['dims']):
            od, og = z['od'][q], z['og'][q]
            dt_ids = z['dt_ids'][od:od + D].tolist()
            scores = z['dt_scores'][od:od + D].tolist()
            gt_ids = z['gt_ids'][og:og + G]
            for a in range(A):
                order = z['gt_order'][A * og + a * G:A * og + (a + 1) * G]
                gig = z['gt_ignore'][A * og + a * G:A * og + (a + 1) * G].astype(np.int64) if G else np.array([])
                b = A * T * od + a * T * D
                gb = A * T * og + a * T * G
                out[kk * A * I + a * I + ii] = {
                    'image_id': imgs[ii],
                    'category_id': cats[kk],
                    'aRng': pe.areaRng[a],
                    'maxDet': maxDet,
                    'dtIds': list(dt_ids),
                    'gtIds': gt_ids[order].tolist(),
                    'dtMatches': z['dt_matches'][b:b + T * D].reshape(T, D).astype(np.float64),
                    'gtMatches': z['gt_matches'][gb:gb + T * G].reshape(T, G).astype(np.float64),
                    'dtScores': list(scores),
                    'gtIgnore': gig,
                    'dtIgnore': z['dt_ignore'][b:b + T * D].reshape(T, D).astype(bool),
                }
        return out

    # ---- evaluate ----
    def _kp_inputs(self, dt_coco, cat_ids):
        """gt and dt keypoints (parallel to the library's gt annotations and results), gt
        ignore (num_keypoints == 0), sigmas."""
        p = self.params
        sig = p.kpt_oks_sigmas
        if isinstance(sig, dict):
            rows = []
            for k in cat_ids:
                if k not in sig:
                    raise CocoKeyError('kpt_oks_sigmas has no sigmas for category %r' % (k,))
                rows.append(np.asarray(sig[k], dtype=np.float64).reshape(-1))
            nk = len(rows[0]) if rows else 17
            if any(len(r) != nk for r in rows):
                raise CocoValueError('kpt_oks_sigmas: every category needs the same number of keypoints here')
            sigmas = np.ascontiguousarray(np.stack(rows) if rows else np.ones((1, nk)))
            per_cat = 1
        else:
            sigmas = np.ascontiguousarray(np.asarray(sig, dtype=np.float64).reshape(-1))
            nk = sigmas.size
            per_cat = 0
        gt = self.cocoGt
        anns = gt.dataset['annotations']
        n = ctypes.c_size_t * 3
        cnt = n()
        lib.rv_py_coco_counts(gt._gt_handle(False), cnt, None)
        if cnt[2] != len(anns):
            raise CocoValueError('keypoints: the ground truth changed since it was loaded (%d annotations, the '
                                 'library read %d): call createIndex()' % (len(anns), cnt[2]))
        evaluated = set(p.imgIds)
        ecats = set(p.catIds) if p.useCats else None
        gk = np.zeros((len(anns), 3 * nk))
        gign = np.zeros(len(anns), dtype=np.uint8)
        for i, a in enumerate(anns):
            used = a.get('image_id') in evaluated and (ecats is None or a.get('category_id') in ecats)
            if 'keypoints' in a:
                k = np.asarray(a['keypoints'], dtype=np.float64).reshape(-1)
                if k.size != 3 * nk:
                    if used:
                        raise CocoValueError('keypoints: annotation %r has %d numbers, %d sigmas need %d' %
                                             (a.get('id'), k.size, nk, 3 * nk))
                else:
                    gk[i] = k
            elif used:
                raise CocoKeyError("'keypoints' (annotation %r)" % (a.get('id'),))
            if 'num_keypoints' in a:
                gign[i] = a['num_keypoints'] == 0
            elif used:
                raise CocoKeyError("'num_keypoints' (annotation %r)" % (a.get('id'),))
        res = dt_coco._res_anns()
        dk = np.zeros((len(res), 3 * nk))
        for i, a in enumerate(res):
            if 'keypoints' not in a:
                raise CocoKeyError("'keypoints' (results[%d])" % i)
            k = np.asarray(a['keypoints'], dtype=np.float64).reshape(-1)
            if k.size != 3 * nk:
                raise CocoValueError('keypoints: results[%d] has %d numbers, %d sigmas need %d' %
                                     (i, k.size, nk, 3 * nk))
            dk[i] = k
        return nk, np.ascontiguousarray(gk), gign, np.ascontiguousarray(dk), sigmas, per_cat

    def evaluate(self) -> None:
        """Per image and category: IoUs (OKS), matching and ignore flags, in the library."""
        tic = time.time()
        print('Running per image evaluation...')
        p = self.params
        if p.useSegm is not None:
            p.iouType = 'segm' if p.useSegm == 1 else 'bbox'
            print('useSegm (deprecated) is not None. Running {} evaluation'.format(p.iouType))
        print('Evaluate annotation type *{}*'.format(p.iouType))
        if p.iouType not in _IOU_TYPES:
            raise CocoError('unknown iouType for iou computation')
        p.imgIds = list(np.unique(p.imgIds))
        if p.useCats:
            p.catIds = list(np.unique(p.catIds))
        p.maxDets = sorted(p.maxDets)
        self.params = p
        # pycocotools' _prepare resets these; the records are rebuilt when read
        self._prepared = False
        self._gts_, self._dts_ = defaultdict(list), defaultdict(list)
        self._evalImgs, self._ious, self._details, self._user_evalImgs = None, None, None, False
        self.eval = {}
        self._ev = None
        t = _IOU_TYPES[p.iouType]
        gt_coco, dt_coco = self.cocoGt, self.cocoDt
        if dt_coco._res_of is None:
            # a COCO built from a results list by hand: read as loadRes would
            dt_coco = gt_coco.loadRes([dict(a) for a in dt_coco.dataset.get('annotations', [])])
        hgt = gt_coco._gt_h(t == IOU_SEGM)
        hdt = dt_coco._res_h(t)
        gt, dt = hgt.p, hdt.p
        imgs = gt_coco._lib_img_ids(p.imgIds)
        cats = gt_coco._lib_cat_ids(p.catIds) if p.useCats else gt_coco._lib_cat_ids(p.catIds)
        iou = _lib.as_f64(p.iouThrs)
        rec = _lib.as_f64(p.recThrs)
        md = np.ascontiguousarray(np.asarray(p.maxDets, dtype=np.int32).reshape(-1))
        rng = _lib.as_f64(p.areaRng)
        if rng.size != 2 * len(p.areaRngLbl):
            raise CocoValueError('COCOeval: areaRng and areaRngLbl must have one entry per area range')
        lbl = _lib.str_array([str(s).encode('utf-8') for s in p.areaRngLbl])
        ev = ctypes.c_void_p()
        keep = None
        with Ctx() as c:
            if t == IOU_KEYPOINTS:
                _sigs()
                nk, gk, gign, dk, sigmas, per_cat = self._kp_inputs(dt_coco, list(np.unique(p.catIds)))
                keep = (gk, gign, dk, sigmas)
                st = lib.rv_py_eval_run_kpts(
                    ctypes.byref(ev), gt, dt, _lib.ptr(imgs), imgs.size, _lib.ptr(cats), cats.size, _lib.ptr(iou),
                    iou.size, _lib.ptr(rec), rec.size, _lib.ptr(md), md.size, _lib.ptr(rng), lbl, len(p.areaRngLbl),
                    int(bool(p.useCats)), nk, _lib.ptr(gk), _lib.ptr(gign), _lib.ptr(dk), _lib.ptr(sigmas), per_cat,
                    _VEXP, 0, c.ctx)
            else:
                st = lib.rv_py_eval_run(ctypes.byref(ev), gt, dt, t, _lib.ptr(imgs), imgs.size, _lib.ptr(cats),
                                        cats.size, _lib.ptr(iou), iou.size, _lib.ptr(rec), rec.size, _lib.ptr(md),
                                        md.size, _lib.ptr(rng), lbl, len(p.areaRngLbl), int(bool(p.useCats)), 0,
                                        c.ctx)
            if st != 0:
                msg = lib.rv_py_errmsg(c.ctx).decode('utf-8', 'replace')
                raise CocoValueError(msg)
        self._ev = _Handle(ev.value, lib.rv_py_eval_free)
        # what the evaluation reads stays alive with it (evalImgs are recomputed from it)
        self._ev_inputs = (gt_coco, dt_coco, hgt, hdt, keep)
        self._paramsEval = _copy_params(self.params)
        print('DONE (t={:0.2f}s).'.format(time.time() - tic))

    # ---- pycocotools' per-pair methods (numpy, over _gts / _dts) ----
    def _pair_lists(self, imgId, catId):
        p = self.params
        if p.useCats:
            return self._gts[imgId, catId], self._dts[imgId, catId]
        return ([g for cId in p.catIds for g in self._gts[imgId, cId]],
                [d for cId in p.catIds for d in self._dts[imgId, cId]])

    def computeIoU(self, imgId, catId):
        """IoUs of one image and category: detections (score order, maxDets[-1]) x gt."""
        p = self.params
        gt, dt = self._pair_lists(imgId, catId)
        if len(gt) == 0 and len(dt) == 0:
            return []
        inds = np.argsort([-d['score'] for d in dt], kind='mergesort')
        dt = [dt[i] for i in inds][:p.maxDets[-1]]
        if p.iouType == 'segm':
            g = [x['segmentation'] for x in gt]
            d = [x['segmentation'] for x in dt]
        elif p.iouType == 'bbox':
            g = [x['bbox'] for x in gt]
            d = [x['bbox'] for x in dt]
        else:
            raise CocoError('unknown iouType for iou computation')
        return maskUtils.iou(d, g, [int(o['iscrowd']) for o in gt])

    def computeOks(self, imgId, catId):
        """Object keypoint similarities of one image and category: detections x gt."""
        p = self.params
        gts, dts = self._gts[imgId, catId], self._dts[imgId, catId]
        inds = np.argsort([-d['score'] for d in dts], kind='mergesort')
        dts = [dts[i] for i in inds][:p.maxDets[-1]]
        if len(gts) == 0 or len(dts) == 0:
            return []
        sig = p.kpt_oks_sigmas
        sigmas = np.asarray(sig[catId] if isinstance(sig, dict) else sig, dtype=np.float64)
        var = (sigmas * 2) ** 2
        k = len(sigmas)
        ious = np.zeros((len(dts), len(gts)))
        for j, gt in enumerate(gts):
            g = np.array(gt['keypoints'])
            xg, yg, vg = g[0::3], g[1::3], g[2::3]
            k1 = np.count_nonzero(vg > 0)
            bb = gt['bbox']
            x0, x1 = bb[0] - bb[2], bb[0] + bb[2] * 2
            y0, y1 = bb[1] - bb[3], bb[1] + bb[3] * 2
            for i, dt in enumerate(dts):
                d = np.array(dt['keypoints'])
                xd, yd = d[0::3], d[1::3]
                if k1 > 0:
                    dx, dy = xd - xg, yd - yg
                else:
                    z = np.zeros(k)
                    dx = np.max((z, x0 - xd), axis=0) + np.max((z, xd - x1), axis=0)
                    dy = np.max((z, y0 - yd), axis=0) + np.max((z, yd - y1), axis=0)
                e = (dx ** 2 + dy ** 2) / var / (gt['area'] + np.spacing(1)) / 2
                if k1 > 0:
                    e = e[vg > 0]
                ious[i, j] = np.sum(np.exp(-e)) / e.shape[0]
        return ious

    def evaluateImg(self, imgId, catId, aRng, maxDet) -> Optional[dict]:
        """pycocotools' evaluateImg: the matching of one image, category, area range and
        maxDet (needs evaluate() first: it reads self.ious)."""
        p = self.params
        gt, dt = self._pair_lists(imgId, catId)
        if len(gt) == 0 and len(dt) == 0:
            return None
        gig = [1 if (g['ignore'] or g['area'] < aRng[0] or g['area'] > aRng[1]) else 0 for g in gt]
        gtind = np.argsort(gig, kind='mergesort')
        gt = [gt[i] for i in gtind]
        gtIg = np.array([gig[i] for i in gtind])
        dtind = np.argsort([-d['score'] for d in dt], kind='mergesort')
        dt = [dt[i] for i in dtind[0:maxDet]]
        iscrowd = [int(o['iscrowd']) for o in gt]
        ious = self.ious[imgId, catId]
        ious = ious[:, gtind] if len(ious) > 0 else ious
        T, G, D = len(p.iouThrs), len(gt), len(dt)
        gtm = np.zeros((T, G))
        dtm = np.zeros((T, D))
        dtIg = np.zeros((T, D))
        if not len(ious) == 0:
            for tind, t in enumerate(p.iouThrs):
                for dind, d in enumerate(dt):
                    best = min([t, 1 - 1e-10])
                    m = -1
                    for gind in range(G):
                        if gtm[tind, gind] > 0 and not iscrowd[gind]:
                            continue
                        if m > -1 and gtIg[m] == 0 and gtIg[gind] == 1:
                            break
                        if ious[dind, gind] < best:
                            continue
                        best = ious[dind, gind]
                        m = gind
                    if m == -1:
                        continue
                    dtIg[tind, dind] = gtIg[m]
                    dtm[tind, dind] = gt[m]['id']
                    gtm[tind, m] = d['id']
        a = np.array([d['area'] < aRng[0] or d['area'] > aRng[1] for d in dt]).reshape((1, len(dt)))
        dtIg = np.logical_or(dtIg, np.logical_and(dtm == 0, np.repeat(a, T, 0)))
        return {'image_id': imgId, 'category_id': catId, 'aRng': aRng, 'maxDet': maxDet,
                'dtIds': [d['id'] for d in dt], 'gtIds': [g['id'] for g in gt], 'dtMatches': dtm, 'gtMatches': gtm,
                'dtScores': [d['score'] for d in dt], 'gtIgnore': gtIg, 'dtIgnore': dtIg}

    # ---- accumulate / summarize ----
    def _params_unchanged(self, p) -> bool:
        pe = self._paramsEval
        if not isinstance(pe, Params):
            return False
        keys = ('imgIds', 'iouThrs', 'recThrs', 'maxDets', 'areaRng', 'useCats') + (('catIds',) if p.useCats else ())
        return all(_same(getattr(p, k), getattr(pe, k)) for k in keys)

    def accumulate(self, p: Optional[Params] = None) -> None:
        """precision [T,R,K,A,M], recall [T,K,A,M] and scores [T,R,K,A,M] in self.eval. With
        the evaluated params, in the library; with other params p (a subset of categories, area
        ranges, maxDets, images or recall thresholds), from evalImgs as pycocotools does."""
        print('Accumulating evaluation results...')
        tic = time.time()
        if self._ev is None and not self._evalImgs:
            print('Please run evaluate() first')
        if p is None:
            p = self.params
        p.catIds = p.catIds if p.useCats == 1 else [-1]
        if self._ev is not None and not getattr(self, '_user_evalImgs', False) and self._params_unchanged(p):
            with Ctx() as c:
                c.check(lib.rv_py_eval_accumulate(self._ev.p, c.ctx))
            d = (_lib.c_size * 5)()
            lib.rv_py_eval_dims(self._ev.p, d)
            T, R, K, A, M = (int(v) for v in d)
            precision = np.empty((T, R, K, A, M))
            recall = np.empty((T, K, A, M))
            scores = np.empty((T, R, K, A, M))
            lib.rv_py_eval_copy(self._ev.p, _lib.ptr(precision), _lib.ptr(recall), _lib.ptr(scores))
        else:
            T, R, K, A, M, precision, recall, scores = self._accumulate_py(p)
        self.eval = {
            'params': p,
            'counts': [T, R, K, A, M],
            'date': datetime.datetime.now().strftime('%Y-%m-%d %H:%M:%S'),
            'precision': precision,
            'recall': recall,
            'scores': scores,
        }
        print('DONE (t={:0.2f}s).'.format(time.time() - tic))

    def _accumulate_py(self, p):
        """pycocotools' accumulate over evalImgs, for parameters other than the evaluated ones."""
        T, R = len(p.iouThrs), len(p.recThrs)
        K = len(p.catIds) if p.useCats else 1
        A, M = len(p.areaRng), len(p.maxDets)
        precision = -np.ones((T, R, K, A, M))
        recall = -np.ones((T, K, A, M))
        scores = -np.ones((T, R, K, A, M))
        pe = self._paramsEval
        evalImgs = self.evalImgs
        setK = set(pe.catIds if pe.useCats else [-1])
        setA = set(map(tuple, pe.areaRng))
        setM = set(pe.maxDets)
        setI = set(pe.imgIds)
        k_list = [n for n, k in enumerate(p.catIds) if k in setK]
        m_list = [m for n, m in enumerate(p.maxDets) if m in setM]
        a_list = [n for n, a in enumerate(map(tuple, p.areaRng)) if a in setA]
        i_list = [n for n, i in enumerate(p.imgIds) if i in setI]
        I0, A0 = len(pe.imgIds), len(pe.areaRng)
        for k, k0 in enumerate(k_list):
            for a, a0 in enumerate(a_list):
                base = k0 * A0 * I0 + a0 * I0
                for m, maxDet in enumerate(m_list):
                    E = [e for e in (evalImgs[base + i] for i in i_list) if e is not None]
                    if len(E) == 0:
                        continue
                    dtScores = np.concatenate([e['dtScores'][0:maxDet] for e in E])
                    inds = np.argsort(-dtScores, kind='mergesort')
                    dtScoresSorted = dtScores[inds]
                    dtm = np.concatenate([e['dtMatches'][:, 0:maxDet] for e in E], axis=1)[:, inds]
                    dtIg = np.concatenate([e['dtIgnore'][:, 0:maxDet] for e in E], axis=1)[:, inds]
                    gtIg = np.concatenate([e['gtIgnore'] for e in E])
                    npig = np.count_nonzero(gtIg == 0)
                    if npig == 0:
                        continue
                    tps = np.logical_and(dtm, np.logical_not(dtIg))
                    fps = np.logical_and(np.logical_not(dtm), np.logical_not(dtIg))
                    tp_sum = np.cumsum(tps, axis=1).astype(dtype=float)
                    fp_sum = np.cumsum(fps, axis=1).astype(dtype=float)
                    for t, (tp, fp) in enumerate(zip(tp_sum, fp_sum)):
                        nd = len(tp)
                        rc = tp / npig
                        pr = (tp / (fp + tp + np.spacing(1))).tolist()
                        q = [0.0] * R
                        ss = np.zeros((R,))
                        recall[t, k, a, m] = rc[-1] if nd else 0
                        for i in range(nd - 1, 0, -1):
                            if pr[i] > pr[i - 1]:
                                pr[i - 1] = pr[i]
                        ri_pi = np.searchsorted(rc, p.recThrs, side='left')
                        for ri, pi in enumerate(ri_pi):
                            if pi >= nd:
                                break  # pycocotools' bare except: the rest stay 0
                            q[ri] = pr[pi]
                            ss[ri] = dtScoresSorted[pi]
                        precision[t, :, k, a, m] = np.array(q)
                        scores[t, :, k, a, m] = ss
        return T, R, K, A, M, precision, recall, scores

    def _summary_lines(self):
        if not self.eval:
            raise CocoError('Please run accumulate() first')
        p = self.params

        def one(ap=1, iouThr=None, areaRng='all', maxDets=100):
            iStr = ' {:<18} {} @[ IoU={:<9} | area={:>6s} | maxDets={:>3d} ] = {:0.3f}'
            titleStr = 'Average Precision' if ap == 1 else 'Average Recall'
            typeStr = '(AP)' if ap == 1 else '(AR)'
            iouStr = '{:0.2f}:{:0.2f}'.format(p.iouThrs[0], p.iouThrs[-1]) if iouThr is None \
                else '{:0.2f}'.format(iouThr)
            aind = [i for i, lbl in enumerate(p.areaRngLbl) if lbl == areaRng]
            mind = [i for i, mDet in enumerate(p.maxDets) if mDet == maxDets]
            if ap == 1:
                s = self.eval['precision']
                if iouThr is not None:
                    s = s[np.where(iouThr == p.iouThrs)[0]]
                s = s[:, :, :, aind, mind]
            else:
                s = self.eval['recall']
                if iouThr is not None:
                    s = s[np.where(iouThr == p.iouThrs)[0]]
                s = s[:, :, aind, mind]
            mean_s = -1 if len(s[s > -1]) == 0 else np.mean(s[s > -1])
            return mean_s, iStr.format(titleStr, typeStr, iouStr, areaRng, maxDets, mean_s)

        if p.iouType in ('segm', 'bbox'):
            md = p.maxDets
            specs = [dict(ap=1), dict(ap=1, iouThr=.5, maxDets=md[2]), dict(ap=1, iouThr=.75, maxDets=md[2]),
                     dict(ap=1, areaRng='small', maxDets=md[2]), dict(ap=1, areaRng='medium', maxDets=md[2]),
                     dict(ap=1, areaRng='large', maxDets=md[2]), dict(ap=0, maxDets=md[0]),
                     dict(ap=0, maxDets=md[1]), dict(ap=0, maxDets=md[2]),
                     dict(ap=0, areaRng='small', maxDets=md[2]), dict(ap=0, areaRng='medium', maxDets=md[2]),
                     dict(ap=0, areaRng='large', maxDets=md[2])]
        elif p.iouType == 'keypoints':
            specs = [dict(ap=1, maxDets=20), dict(ap=1, maxDets=20, iouThr=.5), dict(ap=1, maxDets=20, iouThr=.75),
                     dict(ap=1, maxDets=20, areaRng='medium'), dict(ap=1, maxDets=20, areaRng='large'),
                     dict(ap=0, maxDets=20), dict(ap=0, maxDets=20, iouThr=.5), dict(ap=0, maxDets=20, iouThr=.75),
                     dict(ap=0, maxDets=20, areaRng='medium'), dict(ap=0, maxDets=20, areaRng='large')]
        else:
            raise CocoError('iouType not supported')
        stats = np.zeros((len(specs),))
        lines = []
        for i, sp in enumerate(specs):
            stats[i], line = one(**sp)
            lines.append(line)
        return stats, lines

    def summarize(self) -> None:
        """Prints pycocotools' summary (12 lines; keypoints: 10) and sets self.stats."""
        stats, lines = self._summary_lines()
        for line in lines:
            print(line)
        self.stats = stats
        self._summary = lines

    def __str__(self) -> str:
        """The summary text (the lines summarize() prints), without printing it."""
        stats, lines = self._summary_lines()
        self.stats = stats
        return '\n'.join(lines)

    def __repr__(self) -> str:
        return '<ravlt.cocotools.COCOeval iouType=%r>' % (self.params.iouType,)
