"""Evaluation that explains its numbers: the analysis behind `ravlt eval ... --report`, as
Python dicts (the JSON contract of docs/evaluation.md), and the self-contained HTML report.

    from ravlt import analysis
    a = analysis.coco('instances_val2017.json', 'dets.bbox.json', 'bbox', images='val2017')
    print(a['tide']['main'])            # {'Cls': ..., 'Loc': ..., 'Both': ..., 'Dupe': ..., 'Bkg': ..., 'Miss': ...}
    s = analysis.ade20k('pred_pngs/', 'ADEChallengeData2016/annotations/validation')
    analysis.write_report([a, s], 'report.html', title='my models')

Everything is computed by libravlt (the same C code as the CLI); these functions only pass
paths and arrays in and parse the JSON that comes back.
"""
import json
import os

import numpy as np

from . import _lib
from ._lib import Ctx, lib, enc, ptr, take_string

__all__ = ['coco', 'ade20k', 'write_report']

_IOU = {'bbox': 0, 'segm': 1}


class _Owned:
    """A library handle freed with `free` when this object goes."""
    def __init__(self, p, free):
        self.p, self._free = p, free

    def __del__(self):
        if self.p:
            self._free(self.p)
            self.p = None


def _gt_handle(gt, segm, keep):
    """rv_coco * of gt: a ravlt.cocotools.COCO, a path, or a dict in the COCO format."""
    from .cocotools import COCO
    if isinstance(gt, COCO):
        return gt._gt_handle(segm)
    p = _lib.c_void_p()
    with Ctx() as c:
        if isinstance(gt, dict):
            js = json.dumps(gt).encode()
            c.check(lib.rv_py_coco_load(_lib.ctypes.byref(p), None, js, len(js), b'ground truth', int(segm), c.ctx))
        else:
            c.check(lib.rv_py_coco_load(_lib.ctypes.byref(p), enc(gt), None, 0, None, int(segm), c.ctx))
    h = _Owned(p.value, lib.rv_py_coco_free)
    keep.append(h)
    return h.p


def _res_handle(dt, gt_h, iou, keep):
    """rv_coco_results * of dt: a COCO from loadRes, a path, or a list of result dicts."""
    from .cocotools import COCO
    if isinstance(dt, COCO):
        return dt._res_handle(iou)
    p = _lib.c_void_p()
    with Ctx() as c:
        if isinstance(dt, (list, tuple)):
            js = json.dumps(list(dt)).encode()
            c.check(lib.rv_py_results_load(_lib.ctypes.byref(p), gt_h, None, js, len(js), b'results', iou, c.ctx))
        else:
            c.check(lib.rv_py_results_load(_lib.ctypes.byref(p), gt_h, enc(dt), None, 0, None, iou, c.ctx))
    h = _Owned(p.value, lib.rv_py_results_free)
    keep.append(h)
    return h.p


def coco(gt, dt, iou_type='bbox', images=None, compare=None, conf_score_thr=0.3, conf_iou_thr=0.5, n_worst=16,
         threads=0, name=None):
    """The COCO analysis of detections dt against gt as a dict (docs/evaluation.md):
    'stats' (pycocotools' 12), 'per_category', 'pr' (accumulate()'s precision [10][101][K]),
    'tide' (dbolya/tide 1.0.1's dAPs), 'confusion' (mmdetection 2.x's matrix), 'f1',
    'worst_images' and, with compare (a second results set), 'compare'.

    gt: path, dict or ravlt.cocotools.COCO; dt / compare: path, list of result dicts or a
    COCO from loadRes; iou_type 'bbox' or 'segm'; images: the folder of the images (thumbnails
    of the worst images); conf_score_thr / conf_iou_thr: the confusion matrix's thresholds."""
    if iou_type not in _IOU:
        raise ValueError("iou_type must be 'bbox' or 'segm', not %r" % (iou_type,))
    iou = _IOU[iou_type]
    keep = []
    gt_h = _gt_handle(gt, iou == 1, keep)
    dt_h = _res_handle(dt, gt_h, iou, keep)
    other_h = _res_handle(compare, gt_h, iou, keep) if compare is not None else None
    other_name = None
    if compare is not None:
        other_name = enc(os.path.basename(compare)) if isinstance(compare, (str, bytes, os.PathLike)) else b'other'
    if name is None and isinstance(gt, (str, bytes, os.PathLike)):
        name = os.path.basename(os.fsdecode(gt))
    out = _lib.c_void_p()
    with Ctx(threads) as c:
        c.check(lib.rv_py_coco_analyze(_lib.ctypes.byref(out), gt_h, dt_h, iou, other_h, other_name,
                                       enc(images) if images is not None else None,
                                       enc(name) if name is not None else None, float(conf_score_thr),
                                       float(conf_iou_thr), int(n_worst), int(threads), c.ctx))
    del keep
    return json.loads(take_string(out.value))


def ade20k(pred, gt, images=None, num_classes=150, names=None, pred_zero_based=False, n_worst=16, threads=0):
    """The semantic segmentation analysis as a dict: 'aAcc', 'mIoU', 'mAcc', 'IoU' and 'Acc'
    (num_classes each, None where undefined), 'names', 'confusion' ({'counts': C x C}, rows
    ground truth, mmsegmentation 0.x's tools/confusion_matrix.py) and 'worst_images'.

    Either folders: pred (label PNGs; the annotation convention `ravlt segment` writes, or class
    indices with pred_zero_based) and gt (ADE20K annotation PNGs, matched by name), images (may
    be None) the folder of <name>.jpg; or sequences: pred of class-index arrays (H x W, any
    integer type; values outside 0..C-1 = no class), gt of annotation arrays (uint8: 0 ignored,
    k = class k-1), images None or a sequence of H x W x 3 BGR uint8 arrays."""
    nm = None
    if names is not None:
        if len(names) != num_classes:
            raise ValueError('names has %d entries for %d classes' % (len(names), num_classes))
        nm_bytes = [enc(x) for x in names]
        nm = _lib.str_array(nm_bytes)
    a = _lib.c_void_p()
    with Ctx(threads) as c:
        c.check(lib.rv_py_seg_analysis_new(_lib.ctypes.byref(a), int(num_classes), nm, int(n_worst), int(threads), c.ctx))
    h = _Owned(a.value, lib.rv_py_seg_analysis_free)
    if isinstance(pred, (str, bytes, os.PathLike)):
        n = _lib.c_size()
        with Ctx(threads) as c:
            c.check(lib.rv_py_seg_analysis_add_dirs(h.p, enc(pred), enc(gt), enc(images) if images is not None else None,
                                                    int(bool(pred_zero_based)), _lib.ctypes.byref(n), c.ctx))
    else:
        preds, gts = list(pred), list(gt)
        imgs = list(images) if images is not None else [None] * len(preds)
        if not (len(preds) == len(gts) == len(imgs)):
            raise ValueError('pred, gt (and images) must have the same length')
        for i, (p, g, im) in enumerate(zip(preds, gts, imgs)):
            p = np.ascontiguousarray(np.asarray(p))
            g = np.ascontiguousarray(np.asarray(g, dtype=np.uint8))
            if p.ndim != 2 or p.shape != g.shape:
                raise ValueError('image %d: prediction %s and annotation %s must be H x W of one size'
                                 % (i, p.shape, g.shape))
            p = np.ascontiguousarray(np.where((p >= 0) & (p < num_classes), p, -1).astype(np.int32))
            if im is not None:
                im = np.ascontiguousarray(np.asarray(im, dtype=np.uint8))
                if im.shape != g.shape + (3,):
                    raise ValueError('image %d: %s, expected %s x 3 BGR' % (i, im.shape, g.shape))
            with Ctx() as c:
                c.check(lib.rv_py_seg_analysis_add(h.p, enc(str(i)), ptr(im), ptr(g), ptr(p), g.shape[0], g.shape[1],
                                                   c.ctx))
    out = _lib.c_void_p()
    with Ctx() as c:
        c.check(lib.rv_py_seg_analysis_json(h.p, _lib.ctypes.byref(out), c.ctx))
    return json.loads(take_string(out.value))


def write_report(results, path, title=None):
    """One self-contained HTML file (inline SVG and JPEG, nothing fetched) from one analysis dict
    or a list of them (coco() / ade20k() results, e.g. bbox and segm of one model)."""
    if isinstance(results, dict):
        results = [results]
    texts = [json.dumps(r, allow_nan=False, default=float).encode() for r in _nan_to_none(list(results))]
    arr = _lib.str_array(texts)
    with Ctx() as c:
        c.check(lib.rv_py_write_report(enc(path), arr, len(texts), enc(title) if title is not None else None, c.ctx))


def _nan_to_none(x):
    """NaN (which JSON cannot hold) back to null, as the library writes it."""
    if isinstance(x, float) and x != x:
        return None
    if isinstance(x, dict):
        return {k: _nan_to_none(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_nan_to_none(v) for v in x]
    return x
