"""pycocotools.mask (and pycocotools._mask) over libravlt's RLE code (eval/rle.h).

The same functions, RLE dicts (``{'size': [h, w], 'counts': bytes}``) and numbers as
pycocotools 2.0.11: encodings, areas, boxes and IoUs bit for bit, including RLEs whose counts
do not sum to h*w (pycocotools encodes and measures them as they are) and the exceptions it
raises (ValueError for a mask that is not uint8 / bool or an RLE that decodes past h*w,
AssertionError for an iscrowd of the wrong length, ...), as classes that also derive from
ravlt.Error. Where pycocotools refuses an input that has one obvious meaning (a C-ordered mask,
a list of boxes for frPyObjects / frBbox, a bbox array of integers), this module computes it;
python/README.md lists every difference.
"""
import ctypes
from typing import Any, Dict, Iterable, List, Sequence, Union

import numpy as np

from .. import _lib
from .._lib import lib, Error, take_string, str_array
from ._errors import CocoAssertionError, CocoError, CocoIndexError, CocoTypeError, CocoValueError

__all__ = ['encode', 'decode', 'area', 'toBbox', 'iou', 'merge', 'frPyObjects', 'frPoly', 'frBbox',
           'frUncompressedRLE', 'RLEs', '_frString', '_toString']

RLE = Dict[str, Any]  # {'size': [h, w], 'counts': bytes (compressed) or list of int (uncompressed)}


def _call(cls, fn, *args):
    """fn(*args, ctx), the library's error raised as cls (a pycocotools exception class)."""
    with _lib.Ctx() as c:
        st = fn(*args, c.ctx)
        if st != 0:
            msg = lib.rv_py_errmsg(c.ctx)
            raise cls(msg.decode('utf-8', 'replace') if msg else 'mask: error %d' % st)


class RLEs:
    """pycocotools._mask.RLEs: n run-length encoded masks (what _frString returns and _toString
    reads). ``n`` is their number; the masks are kept as RLE dicts."""

    def __init__(self, n: int = 0) -> None:
        self._objs: List[RLE] = [{'size': [0, 0], 'counts': b''} for _ in range(int(n))]

    @property
    def n(self) -> int:
        """The number of masks."""
        return len(self._objs)

    def __len__(self) -> int:
        return len(self._objs)

    def __iter__(self):
        return iter(self._objs)

    def __repr__(self) -> str:
        return '<ravlt.cocotools.mask.RLEs n=%d>' % self.n


def _counts(r: RLE) -> bytes:
    c = r['counts']
    if isinstance(c, str):
        return c.encode('ascii')
    if isinstance(c, (bytes, bytearray)):
        return bytes(c)
    raise CocoTypeError("mask: 'counts' must be a compressed RLE string (bytes or str), not %s; "
                        "frPyObjects converts uncompressed RLEs" % type(c).__name__)


def _objs(rleObjs) -> List[RLE]:
    if isinstance(rleObjs, RLEs):
        return rleObjs._objs
    return list(rleObjs)


def _size(r: RLE):
    try:
        h, w = r['size']
    except (KeyError, TypeError, ValueError) as e:
        raise CocoTypeError("mask: an RLE needs 'size': [h, w] (%s)" % (e,)) from None
    return int(h), int(w)


def _rle(s: bytes, h, w) -> RLE:
    return {'size': [int(h), int(w)], 'counts': s}


def _strings(ptrs, n) -> List[bytes]:
    try:
        return [ctypes.string_at(ptrs[i]) for i in range(n)]
    finally:
        for i in range(n):
            if ptrs[i]:
                lib.rv_py_free(ptrs[i])


def encode(bimask: np.ndarray) -> Union[RLE, List[RLE]]:
    """Binary masks -> RLEs: an HxW array gives one RLE dict, an HxWxN array a list of N.

    The mask must be uint8 (or bool), as pycocotools requires (ValueError otherwise: a float
    or int mask is never cast); a run ends wherever the byte value changes, as in maskApi.
    Fortran order is what pycocotools needs; a C-ordered array is accepted here as well."""
    a = bimask if isinstance(bimask, np.ndarray) else np.asarray(bimask)
    if a.dtype != np.uint8 and a.dtype != np.bool_:
        raise CocoValueError("Buffer dtype mismatch, expected 'uint8_t' but got %s: mask.encode takes uint8 "
                             "masks (pycocotools casts nothing; use (m > 0.5).astype(np.uint8) for "
                             "probabilities)" % (a.dtype,))
    if a.ndim == 2:
        h, w = a.shape
        return encode(a.reshape((h, w, 1), order='F'))[0]
    if a.ndim != 3:
        raise CocoValueError('Buffer has wrong number of dimensions (expected 3, got %d): mask.encode takes an '
                             'HxW or HxWxN mask' % a.ndim)
    m = np.asfortranarray(a).view(np.uint8)
    h, w, n = m.shape
    out = (ctypes.c_void_p * max(n, 1))()
    try:
        _call(CocoValueError, lib.rv_py_rle_encode, _lib.ptr(m), h, w, n, out)
    except BaseException:
        _strings(out, n)
        raise
    return [_rle(s, h, w) for s in _strings(out, n)]


def decode(rleObjs: Union[RLE, List[RLE]]) -> np.ndarray:
    """RLEs -> masks: one RLE dict gives an HxW uint8 array, a list of N RLEs (all of the first
    one's size) an HxWxN array (Fortran order). Counts that run past h*w raise ValueError
    ("Invalid RLE mask representation"); counts short of it leave the rest 0."""
    if isinstance(rleObjs, dict):
        return decode([rleObjs])[:, :, 0]
    objs = _objs(rleObjs)
    n = len(objs)
    if n == 0:
        raise CocoIndexError('mask.decode: no RLEs given (pycocotools reads the first one)')
    h, w = _size(objs[0])
    for r in objs:
        if _size(r) != (h, w):
            raise CocoValueError('mask.decode: the RLEs of one call must have one size (%dx%d and %dx%d)' %
                                 ((h, w) + _size(r)))
    strs = [_counts(r) for r in objs]
    out = np.empty((h, w, n), dtype=np.uint8, order='F')
    _call(CocoValueError, lib.rv_py_rle_decode, str_array(strs), h, w, n, _lib.ptr(out))
    return out


def _area_bbox(rles: List[RLE], want_area: bool) -> np.ndarray:
    n = len(rles)
    a = np.zeros(n, dtype=np.uint32)
    b = np.zeros((n, 4), dtype=np.float64)
    groups: Dict[tuple, List[int]] = {}
    for i, r in enumerate(rles):
        groups.setdefault(_size(r), []).append(i)
    for (h, w), idx in groups.items():
        strs = [_counts(rles[i]) for i in idx]
        ga = np.empty(len(idx), dtype=np.uint32)
        gb = np.empty((len(idx), 4), dtype=np.float64)
        _call(CocoValueError, lib.rv_py_rle_area_bbox, str_array(strs), h, w, len(idx), _lib.ptr(ga), _lib.ptr(gb))
        a[idx] = ga
        b[idx] = gb
    return a if want_area else b


def area(rleObjs: Union[RLE, List[RLE]]):
    """Foreground pixel counts (uint32): an array for a list, a numpy scalar for one RLE."""
    if isinstance(rleObjs, dict):
        return _area_bbox([rleObjs], True)[0]
    return _area_bbox(_objs(rleObjs), True)


def toBbox(rleObjs: Union[RLE, List[RLE]]) -> np.ndarray:
    """Tight boxes [x, y, w, h] (float64): N x 4 for a list, 4 for one RLE (maskApi rleToBbox of
    pycocotools 2.0.x: empty foreground runs are skipped)."""
    if isinstance(rleObjs, dict):
        return _area_bbox([rleObjs], False)[0]
    return _area_bbox(_objs(rleObjs), False)


def merge(rleObjs: Sequence[RLE], intersect: int = 0) -> RLE:
    """Union (or, with intersect, intersection) of RLEs -> one RLE. RLEs of different sizes
    give an empty 0x0 RLE, as in pycocotools."""
    objs = _objs(rleObjs)
    strs = [_counts(r) for r in objs]
    hw = np.array([_size(r) for r in objs], dtype=np.uint32).reshape(-1, 2)
    out = ctypes.c_void_p()
    ohw = np.zeros(2, dtype=np.uint32)
    _call(CocoValueError, lib.rv_py_rle_merge, str_array(strs), _lib.ptr(hw), len(strs), int(bool(intersect)),
          ctypes.byref(out), _lib.ptr(ohw))
    return _rle(take_string(out), ohw[0], ohw[1])


def _preproc(objs):
    """_mask.iou's input dispatch: ('box', N x 4 float64) or ('rle', [RLE]) or ('empty', objs)."""
    if isinstance(objs, RLEs):
        return ('rle', objs._objs) if objs.n else ('empty', objs)
    if not isinstance(objs, (list, np.ndarray, dict, str, bytes)) and hasattr(objs, '__iter__'):
        objs = list(objs)  # a tuple or a generator of boxes / RLEs, read once
    if len(objs) == 0:
        return 'empty', objs
    if isinstance(objs, np.ndarray):
        if objs.ndim != 2 or objs.shape[1] != 4:
            raise CocoValueError('numpy ndarray input is only for *bounding boxes* and should have Nx4 dimension')
        return 'box', np.ascontiguousarray(objs, dtype=np.float64)
    if isinstance(objs, list):
        if all(isinstance(o, (list, np.ndarray)) and len(o) == 4 for o in objs):
            return 'box', np.ascontiguousarray(np.array(objs, dtype=np.float64).reshape(len(objs), 4))
        if all(isinstance(o, dict) for o in objs):
            return 'rle', objs
        raise CocoTypeError('list input can be bounding box (Nx4) or RLEs ([RLE]): a list of boxes [x, y, w, h] '
                            'or of RLE dicts')
    raise CocoTypeError('unrecognized type.  The following type: RLEs (rle), np.ndarray (box), and list (box) are '
                    'supported.')


def iou(dt, gt, pyiscrowd) -> Union[np.ndarray, list]:
    """IoU matrix (len(dt) x len(gt)) of boxes (N x 4 [x, y, w, h]) or RLEs; for a crowd gt the
    union is the detection's area. [] when either side is empty; -1 for masks of different
    sizes (whose boxes overlap), as maskApi."""
    crowd = np.ascontiguousarray(np.array(pyiscrowd, dtype=np.uint8).reshape(-1))
    kd, d = _preproc(dt)
    kg, g = _preproc(gt)
    m = 0 if kd == 'empty' else len(d)
    n = 0 if kg == 'empty' else len(g)
    if crowd.size != n:
        raise CocoAssertionError('iou(iscrowd=) must have the same length as gt')
    if m == 0 or n == 0:
        return []
    if kd != kg:
        raise CocoTypeError('The dt and gt should have the same data type, either RLEs, list or np.ndarray: '
                            'dt and gt must be the same kind (boxes or RLEs)')
    if kd == 'box':
        return _bbox_iou(d, g, crowd)
    out = np.empty((m, n), dtype=np.float64)
    dhw = np.array([_size(r) for r in d], dtype=np.uint32)
    ghw = np.array([_size(r) for r in g], dtype=np.uint32)
    _call(CocoValueError, lib.rv_py_rle_iou, str_array([_counts(r) for r in d]), _lib.ptr(dhw), m,
          str_array([_counts(r) for r in g]), _lib.ptr(ghw), n, _lib.ptr(crowd), _lib.ptr(out))
    return np.asfortranarray(out)


def _bbox_iou(d: np.ndarray, g: np.ndarray, crowd: np.ndarray) -> np.ndarray:
    """maskApi bbIou with numpy: the same operations in the same order (fmin / fmax, a pair is
    skipped only when its overlap is <= 0, so NaN boxes give NaN), hence the same doubles."""
    ga = g[:, 2] * g[:, 3]
    da = d[:, 2] * d[:, 3]
    w = np.fmin(d[:, 2:3] + d[:, 0:1], (g[:, 2] + g[:, 0])[None, :]) - np.fmax(d[:, 0:1], g[None, :, 0])
    h = np.fmin(d[:, 3:4] + d[:, 1:2], (g[:, 3] + g[:, 1])[None, :]) - np.fmax(d[:, 1:2], g[None, :, 1])
    skip = (w <= 0) | (h <= 0)
    inter = w * h
    u = np.where(crowd[None, :] != 0, da[:, None], da[:, None] + ga[None, :] - inter)
    with np.errstate(divide='ignore', invalid='ignore'):
        out = np.where(skip, 0.0, inter / u)
    return np.asfortranarray(out)


def frPoly(poly: Sequence[Sequence[float]], h: int, w: int) -> List[RLE]:
    """Polygons ([x1, y1, x2, y2, ...] each) -> one RLE each (maskApi rleFrPoly)."""
    out = []
    for p in poly:
        xy = np.ascontiguousarray(np.asarray(p, dtype=np.float64).reshape(-1))
        s = ctypes.c_void_p()
        _call(CocoValueError, lib.rv_py_rle_from_poly, _lib.ptr(xy), xy.size // 2, int(h), int(w), ctypes.byref(s))
        out.append(_rle(take_string(s), h, w))
    return out


def frBbox(bb, h: int, w: int) -> List[RLE]:
    """Boxes (N x 4 [x, y, w, h]) -> one RLE each (maskApi rleFrBbox)."""
    b = np.ascontiguousarray(np.asarray(bb, dtype=np.float64).reshape(-1, 4))
    n = len(b)
    out = (ctypes.c_void_p * max(n, 1))()
    try:
        _call(CocoValueError, lib.rv_py_rle_from_bbox, _lib.ptr(b), n, int(h), int(w), out)
    except BaseException:
        _strings(out, n)
        raise
    return [_rle(s, h, w) for s in _strings(out, n)]


def frUncompressedRLE(ucRles: Sequence[RLE], h: int, w: int) -> List[RLE]:
    """Uncompressed RLEs ({'size': [h, w], 'counts': [int, ...]}) -> compressed ones. As in
    pycocotools each keeps its own 'size' (h and w are not used) and its counts as they are,
    whatever they sum to."""
    out = []
    for r in ucRles:
        rh, rw = _size(r)
        c = np.ascontiguousarray(np.array(r['counts'], dtype=np.uint32).reshape(-1))
        s = ctypes.c_void_p()
        _call(CocoValueError, lib.rv_py_rle_from_counts, _lib.ptr(c), c.size, rh, rw, ctypes.byref(s))
        out.append(_rle(take_string(s), rh, rw))
    return out


def _is_uc(o) -> bool:
    return isinstance(o, dict) and 'counts' in o and 'size' in o


def frPyObjects(pyobj, h: int, w: int) -> Union[RLE, List[RLE]]:
    """Polygons, boxes or uncompressed RLEs -> RLEs, with pycocotools' dispatch: a list gives a
    list (its first element decides: 4 numbers = boxes, more = polygons, a dict = uncompressed
    RLEs), a single box / polygon / uncompressed RLE gives one RLE."""
    if isinstance(pyobj, np.ndarray):
        return frBbox(pyobj, h, w)
    if isinstance(pyobj, list):
        if len(pyobj) == 0:
            raise CocoIndexError('frPyObjects: an empty list (pycocotools reads its first element)')
        first = pyobj[0]
        if _is_uc(first):
            return frUncompressedRLE(pyobj, h, w)
        if isinstance(first, (list, tuple, np.ndarray)):
            if len(first) == 4:
                return frBbox(pyobj, h, w)
            if len(first) > 4:
                return frPoly(pyobj, h, w)
        elif not isinstance(first, dict):
            if len(pyobj) == 4:
                return frBbox([pyobj], h, w)[0]
            if len(pyobj) > 4:
                return frPoly([pyobj], h, w)[0]
    if _is_uc(pyobj):
        return frUncompressedRLE([pyobj], h, w)[0]
    raise CocoError('input type is not supported.')


def _toString(Rs: RLEs) -> List[RLE]:
    """pycocotools._mask._toString: an RLEs object -> a list of RLE dicts (bytes counts)."""
    if not isinstance(Rs, RLEs):
        raise CocoTypeError("Argument 'Rs' has incorrect type (expected ravlt.cocotools.mask.RLEs, got %s)" %
                            type(Rs).__name__)
    return [{'size': list(r['size']), 'counts': r['counts']} for r in Rs._objs]


def _frString(rleObjs: Iterable[RLE]) -> RLEs:
    """pycocotools._mask._frString: RLE dicts (counts as bytes or str) -> an RLEs object."""
    objs = list(rleObjs)
    Rs = RLEs(0)
    for r in objs:
        h, w = _size(r)
        Rs._objs.append({'size': [h, w], 'counts': _counts(r)})
    return Rs
