"""pycocotools.mask over libravlt's RLE code (eval/rle.h): the same functions, RLE dicts
({'size': [h, w], 'counts': bytes}) and numbers (encodings, areas, boxes, IoUs bit for bit)."""
import ctypes

import numpy as np

from .. import _lib
from .._lib import lib, call, take_string, str_array

__all__ = ['encode', 'decode', 'area', 'toBbox', 'iou', 'merge', 'frPyObjects', 'frPoly', 'frBbox',
           'frUncompressedRLE']


def _counts(r):
    c = r['counts']
    if isinstance(c, str):
        return c.encode('ascii')
    if isinstance(c, (bytes, bytearray)):
        return bytes(c)
    raise TypeError("mask: 'counts' must be a compressed RLE string (use frPyObjects for uncompressed RLE)")


def _rle(s, h, w):
    return {'size': [int(h), int(w)], 'counts': s}


def _group_by_size(rles):
    """[(h, w), [indices]] groups, in first-appearance order."""
    groups = {}
    for i, r in enumerate(rles):
        h, w = r['size']
        groups.setdefault((int(h), int(w)), []).append(i)
    return groups


def encode(bimask):
    """HxW (-> one RLE) or HxWxN (-> list of N RLEs) uint8 binary masks."""
    if bimask.ndim == 2:
        return encode(bimask.reshape(bimask.shape[0], bimask.shape[1], 1, order='F'))[0]
    if bimask.ndim != 3:
        raise ValueError('encode: a HxW or HxWxN mask is needed')
    m = np.asfortranarray(bimask, dtype=np.uint8)
    h, w, n = m.shape
    out = (ctypes.c_void_p * max(n, 1))()
    try:
        call(lib.rv_py_rle_encode, _lib.ptr(m), h, w, n, out)
        return [_rle(ctypes.string_at(out[i]), h, w) for i in range(n)]
    finally:
        for i in range(n):
            if out[i]:
                lib.rv_py_free(out[i])


def decode(rleObjs):
    """One RLE -> HxW uint8 mask; a list of N RLEs (one size) -> HxWxN (Fortran order)."""
    if isinstance(rleObjs, dict):
        return decode([rleObjs])[:, :, 0]
    n = len(rleObjs)
    if n == 0:
        raise ValueError('decode: no RLEs')
    h, w = (int(v) for v in rleObjs[0]['size'])
    for r in rleObjs:
        if (int(r['size'][0]), int(r['size'][1])) != (h, w):
            raise ValueError('decode: the RLEs must have one size')
    strs = [_counts(r) for r in rleObjs]
    out = np.empty((h, w, n), dtype=np.uint8, order='F')
    call(lib.rv_py_rle_decode, str_array(strs), h, w, n, _lib.ptr(out))
    return out


def _area_bbox(rles, want_area):
    n = len(rles)
    a = np.zeros(n, dtype=np.uint32)
    b = np.zeros((n, 4), dtype=np.float64)
    for (h, w), idx in _group_by_size(rles).items():
        strs = [_counts(rles[i]) for i in idx]
        ga = np.empty(len(idx), dtype=np.uint32)
        gb = np.empty((len(idx), 4), dtype=np.float64)
        call(lib.rv_py_rle_area_bbox, str_array(strs), h, w, len(idx), _lib.ptr(ga), _lib.ptr(gb))
        a[idx] = ga
        b[idx] = gb
    return a if want_area else b


def area(rleObjs):
    """Foreground pixel counts (uint32): an array for a list, a scalar for one RLE."""
    if isinstance(rleObjs, dict):
        return _area_bbox([rleObjs], True)[0]
    return _area_bbox(rleObjs, True)


def toBbox(rleObjs):
    """Tight boxes [x, y, w, h] (float64): n x 4 for a list, 4 for one RLE."""
    if isinstance(rleObjs, dict):
        return _area_bbox([rleObjs], False)[0]
    return _area_bbox(rleObjs, False)


def merge(rleObjs, intersect=0):
    """Union (or intersection) of a list of RLEs -> one RLE."""
    strs = [_counts(r) for r in rleObjs]
    hw = np.array([[int(v) for v in r['size']] for r in rleObjs], dtype=np.uint32).reshape(-1, 2)
    out = ctypes.c_void_p()
    ohw = np.zeros(2, dtype=np.uint32)
    call(lib.rv_py_rle_merge, str_array(strs), _lib.ptr(hw), len(strs), int(bool(intersect)), ctypes.byref(out),
         _lib.ptr(ohw))
    return _rle(take_string(out), ohw[0], ohw[1])


def _kind(objs):
    """'box' (n x 4 array / list of 4-lists) or 'rle' (list of dicts), as _mask._preproc."""
    if isinstance(objs, np.ndarray):
        if objs.ndim == 2 and objs.shape[1] == 4:
            return 'box'
        raise ValueError('iou: numpy ndarray input is only for *bounding boxes* and should have Nx4 dimension')
    if isinstance(objs, list):
        if all(isinstance(o, (list, np.ndarray)) and len(o) == 4 for o in objs):
            return 'box'
        if all(isinstance(o, dict) for o in objs):
            return 'rle'
    raise TypeError('iou: list input can be bounding box (Nx4) or RLEs ([RLE])')


def iou(dt, gt, pyiscrowd):
    """IoU matrix (len(dt) x len(gt)) of boxes or RLEs; crowd gt: union = the detection's area."""
    if len(dt) == 0 or len(gt) == 0:
        return []
    kd, kg = _kind(dt), _kind(gt)
    if kd != kg:
        raise TypeError('The dt and gt should have the same data type, either RLEs, list or np.ndarray')
    m, n = len(dt), len(gt)
    crowd = np.ascontiguousarray(np.asarray(pyiscrowd, dtype=np.uint8).reshape(-1))
    if crowd.size != n:
        raise ValueError('iou: iscrowd must have one entry per gt')
    if kd == 'box':
        d = np.asarray(dt, dtype=np.float64).reshape(m, 4)
        g = np.asarray(gt, dtype=np.float64).reshape(n, 4)
        return _bbox_iou(d, g, crowd)
    out = np.empty((m, n), dtype=np.float64)
    dhw = np.array([[int(v) for v in r['size']] for r in dt], dtype=np.uint32)
    ghw = np.array([[int(v) for v in r['size']] for r in gt], dtype=np.uint32)
    call(lib.rv_py_rle_iou, str_array([_counts(r) for r in dt]), _lib.ptr(dhw), m,
         str_array([_counts(r) for r in gt]), _lib.ptr(ghw), n, _lib.ptr(crowd), _lib.ptr(out))
    return out


def _bbox_iou(d, g, crowd):
    """maskApi bbIou in numpy (the same operations in the same order, so the same doubles)."""
    out = np.zeros((len(d), len(g)))
    ga = g[:, 2] * g[:, 3]
    for i in range(len(d)):
        da = d[i, 2] * d[i, 3]
        w = np.minimum(d[i, 2] + d[i, 0], g[:, 2] + g[:, 0]) - np.maximum(d[i, 0], g[:, 0])
        h = np.minimum(d[i, 3] + d[i, 1], g[:, 3] + g[:, 1]) - np.maximum(d[i, 1], g[:, 1])
        ok = (w > 0) & (h > 0)
        inter = w * h
        u = np.where(crowd != 0, da, da + ga - inter)
        with np.errstate(divide='ignore', invalid='ignore'):
            out[i] = np.where(ok, inter / u, 0.0)
    return out


def frPoly(poly, h, w):
    out = []
    for p in poly:
        xy = np.ascontiguousarray(np.asarray(p, dtype=np.float64).reshape(-1))
        s = ctypes.c_void_p()
        call(lib.rv_py_rle_from_poly, _lib.ptr(xy), xy.size // 2, int(h), int(w), ctypes.byref(s))
        out.append(_rle(take_string(s), h, w))
    return out


def frBbox(bb, h, w):
    b = np.ascontiguousarray(np.asarray(bb, dtype=np.float64).reshape(-1, 4))
    n = len(b)
    out = (ctypes.c_void_p * max(n, 1))()
    try:
        call(lib.rv_py_rle_from_bbox, _lib.ptr(b), n, int(h), int(w), out)
        return [_rle(ctypes.string_at(out[i]), h, w) for i in range(n)]
    finally:
        for i in range(n):
            if out[i]:
                lib.rv_py_free(out[i])


def frUncompressedRLE(ucRles, h, w):
    out = []
    for r in ucRles:
        c = np.ascontiguousarray(np.asarray(r['counts'], dtype=np.uint32).reshape(-1))
        s = ctypes.c_void_p()
        call(lib.rv_py_rle_from_counts, _lib.ptr(c), c.size, int(h), int(w), ctypes.byref(s))
        out.append(_rle(take_string(s), h, w))
    return out


def frPyObjects(pyobj, h, w):
    """Polygons, boxes or uncompressed RLEs -> RLEs, with pycocotools' dispatch."""
    if isinstance(pyobj, np.ndarray):
        return frBbox(pyobj, h, w)
    if isinstance(pyobj, list) and len(pyobj) and not isinstance(pyobj[0], (int, float, np.number)):
        first = pyobj[0]
        if isinstance(first, dict) and 'counts' in first and 'size' in first:
            return frUncompressedRLE(pyobj, h, w)
        if len(first) == 4:
            return frBbox(pyobj, h, w)
        if len(first) > 4:
            return frPoly(pyobj, h, w)
    if isinstance(pyobj, list) and len(pyobj) == 4:
        return frBbox([pyobj], h, w)[0]
    if isinstance(pyobj, list) and len(pyobj) > 4:
        return frPoly([pyobj], h, w)[0]
    if isinstance(pyobj, dict) and 'counts' in pyobj and 'size' in pyobj:
        return frUncompressedRLE([pyobj], h, w)[0]
    raise TypeError('input type is not supported.')
