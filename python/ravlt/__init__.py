"""ravlt: RAVLT segmentation and detection models, mmseg's mIoU and a pycocotools drop-in, in Python.

    import ravlt
    model = ravlt.init_segmentor('upernet_ravlt_s.pth')      # or a zoo name: 'semantic-fpn-ravlt-s'
    seg = ravlt.inference_segmentor(model, 'photo.jpg')[0]   # HxW int64 class indices
    model.show_result('photo.jpg', [seg], out_file='overlay.png')
    with ravlt.init_detector('mask_rcnn_ravlt_t.pth') as det:   # freed at the end of the block
        bbox_result, segm_result = ravlt.inference_detector(det, img_bgr)   # mmdet 2.x format

    from ravlt.cocotools import COCO, COCOeval                # pycocotools' interface

docs/python.md is the reference. The package is a thin layer over libravlt.so, loaded with
ctypes (no C extension: nothing depends on the Python version's C API). ctypes releases the GIL
during every foreign call, so inference and evaluation run in parallel with other Python
threads, and arrays go to C as numpy buffers (no per-element Python work on the hot paths).
The library is found through, in order: env RAVLT_LIBRARY; libravlt.so.0 inside the package (a
wheel, `pip install .`); the cmake --install layout (<prefix>/lib/python3.X/dist-packages/ravlt
-> <prefix>/lib/libravlt.so.0 or <prefix>/lib/<multiarch>/); the build tree (env
RAVLT_BUILD_DIR, else build/ next to python/); ctypes.util.find_library('ravlt').

Errors from the library raise ravlt.Error with the library's one-line message, as a subclass
that is also the builtin class mmdet / mmseg users catch (ValueError, TypeError,
FileNotFoundError, ...); the library's warnings are issued through `warnings` (RavltWarning).
"""
import ctypes
import os
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from . import _lib
from ._lib import (Error, ArgumentError, ArgumentTypeError, FormatError, FileError, MissingFileError,
                   FilePermissionError, IsAFolderError, OutOfMemoryError, ClosedError, RavltWarning, lib, Ctx)
from .config import Config, ConfigDict
from .apis import (Model, cpu_has_bf16, init_segmentor, inference_segmentor, init_detector, inference_detector,
                   show_result_pyplot, imread, imwrite)
from .client import Client, ServerError  # `ravlt serve`'s client (urllib only)

__all__ = ['Error', 'ArgumentError', 'ArgumentTypeError', 'FormatError', 'FileError', 'MissingFileError',
           'FilePermissionError', 'IsAFolderError', 'OutOfMemoryError', 'ClosedError', 'RavltWarning',
           'Config', 'ConfigDict', 'Model', 'cpu_has_bf16', 'init_segmentor', 'inference_segmentor',
           'init_detector', 'inference_detector', 'show_result_pyplot', 'mean_iou', 'imread', 'imwrite',
           'cocotools', '__version__']


def _version() -> str:
    """The installed distribution's version (pip / wheel metadata) when this package is the one
    it installed, else the library's (rv_version: a source tree, a cmake --install)."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        from importlib import metadata
        dist = metadata.distribution('ravlt')
        loc = os.path.realpath(str(dist.locate_file('ravlt')))
        if loc == os.path.realpath(here):
            return dist.version
    except Exception:  # not installed by pip, or metadata unreadable
        pass
    return lib.rv_version().decode()


def __getattr__(name: str) -> Any:
    # __version__ is computed on first use: reading package metadata costs import time
    if name == '__version__':
        v = _version()
        globals()['__version__'] = v
        return v
    if name == 'cocotools':  # imported on first use, as the library is opened (import ravlt stays fast)
        import importlib
        return importlib.import_module(__name__ + '.cocotools')
    raise AttributeError("module 'ravlt' has no attribute %r" % (name,))


def mean_iou(results: Sequence[Any], gt_seg_maps: Sequence[Any], num_classes: int, ignore_index: int,
             nan_to_num: Optional[float] = None, label_map: Dict[int, int] = dict(),
             reduce_zero_label: bool = False) -> Tuple[float, np.ndarray, np.ndarray]:
    """mmseg 0.x mean_iou: (all_acc, acc, iou), acc and iou per class (NaN where a class is
    absent; nan_to_num replaces them). results: predicted label maps (arrays, or .npy file
    names); gt_seg_maps: label maps (arrays or PNG file names)."""
    preds, labels, keep = [], [], []
    for r, g in zip(results, gt_seg_maps):
        if isinstance(r, (str, os.PathLike)):
            r = np.load(r)
        if isinstance(g, (str, os.PathLike)):
            g = imread(g, gray=True)
        r = np.asarray(r)
        g = np.asarray(g)
        if r.shape != g.shape:
            raise ArgumentError('mean_iou: prediction %s and label %s differ in shape' % (r.shape, g.shape))
        if label_map:
            g = g.copy()
            src = g.copy()
            for old, new in label_map.items():
                g[src == old] = new
        if g.dtype != np.uint8:
            if g.size and (g.min() < 0 or g.max() > 255):
                raise ArgumentError('mean_iou: label values must be in 0..255')
            g = g.astype(np.uint8)
        if r.dtype == np.uint8:
            pu8 = True
        else:
            pu8 = False
            if r.dtype != np.int32:
                r = np.where((r < 0) | (r >= num_classes), -1, r).astype(np.int32)
        preds.append((np.ascontiguousarray(r), pu8))
        labels.append(np.ascontiguousarray(g))
    if len(preds) != len(results) or len(preds) != len(gt_seg_maps):
        raise ArgumentError('mean_iou: %d results for %d label maps' % (len(results), len(gt_seg_maps)))
    iou = np.empty(num_classes)
    acc = np.empty(num_classes)
    all_acc = ctypes.c_double()
    # one call per dtype group: the areas add up, so the split does not change the numbers
    areas_tot = np.zeros(4 * num_classes, dtype=np.int64)
    groups = [[i for i, (_, u) in enumerate(preds) if u == flag] for flag in (True, False)]
    with Ctx() as c:
        if all(len(g) == 0 or len(g) == len(preds) for g in groups):
            n = len(preds)
            pp = (ctypes.c_void_p * max(n, 1))(*[p.ctypes.data for p, _ in preds])
            lp = (ctypes.c_void_p * max(n, 1))(*[l.ctypes.data for l in labels])
            npix = np.array([l.size for l in labels], dtype=np.uint64)
            c.check(lib.rv_py_mean_iou(pp, int(bool(n) and preds[0][1]), lp, _lib.ptr(npix), n, int(num_classes),
                                       int(ignore_index), int(bool(reduce_zero_label)), _lib.ptr(iou),
                                       _lib.ptr(acc), ctypes.byref(all_acc), _lib.ptr(areas_tot), c.ctx))
        else:  # mixed uint8 / int32 predictions: convert the uint8 ones
            n = len(preds)
            conv = [p if not u else p.astype(np.int32) for p, u in preds]
            pp = (ctypes.c_void_p * n)(*[p.ctypes.data for p in conv])
            lp = (ctypes.c_void_p * n)(*[l.ctypes.data for l in labels])
            npix = np.array([l.size for l in labels], dtype=np.uint64)
            c.check(lib.rv_py_mean_iou(pp, 0, lp, _lib.ptr(npix), n, int(num_classes), int(ignore_index),
                                       int(bool(reduce_zero_label)), _lib.ptr(iou), _lib.ptr(acc),
                                       ctypes.byref(all_acc), _lib.ptr(areas_tot), c.ctx))
    a = all_acc.value
    if nan_to_num is not None:
        acc = np.nan_to_num(acc, nan=nan_to_num)
        iou = np.nan_to_num(iou, nan=nan_to_num)
    return a, acc, iou


from . import analysis  # noqa: E402  (the error analysis and the HTML report)
