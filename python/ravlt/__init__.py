"""ravlt: RAVLT segmentation and detection models, mmseg's mIoU and a pycocotools drop-in, in Python.

    import ravlt
    model = ravlt.init_segmentor('upernet_ravlt_s.pth')      # or a zoo name: 'upernet-ravlt-s'
    seg = ravlt.inference_segmentor(model, 'photo.jpg')[0]   # HxW int64 class indices
    det = ravlt.init_detector('mask_rcnn_ravlt_t.pth')
    bbox_result, segm_result = ravlt.inference_detector(det, img_bgr)   # mmdet 2.x format

    from ravlt.cocotools import COCO, COCOeval                # pycocotools' interface

The package is a thin layer over libravlt.so, loaded with ctypes (no compile step, so it
works with Debian's python3 and python3-numpy as installed, for any Python 3 version, with
nothing to build at install time). ctypes releases the GIL during every foreign call, so
inference and evaluation run in parallel with other Python threads, and arrays go to C as
numpy buffers (no per-element Python work on the hot paths). The library is found through,
in order: env RAVLT_LIBRARY; the installed layout (<prefix>/lib/python3/dist-packages/ravlt
-> <prefix>/lib/libravlt.so.0 or <prefix>/lib/<multiarch>/); the build tree (env
RAVLT_BUILD_DIR, else build/ next to python/); ctypes.util.find_library('ravlt').

Errors from the library raise ravlt.Error with the library's one-line message.
"""
import ctypes
import os

import numpy as np

from . import _lib
from ._lib import Error, lib, Ctx

__all__ = ['Error', 'Model', 'cpu_has_bf16', 'init_segmentor', 'inference_segmentor', 'init_detector', 'inference_detector',
           'mean_iou', 'imread', 'cocotools']
__version__ = '0.1.0'


_PRECISIONS = {'f32': 0, 'bf16': 1}  # rv_precision


def cpu_has_bf16():
    """True when this CPU can run precision='bf16' (AVX512_BF16)."""
    return bool(lib.rv_cpu_has_bf16())


class Model:
    """A loaded checkpoint (segmentor or detector). Immutable once loaded; may be shared by
    threads (each inference call has its own memory)."""

    def __init__(self, checkpoint, name=None, device=None, precision='f32', strict=False):
        """strict: checkpoint keys the model does not use are an error (Error naming them)
        instead of a warning, as torch's load_state_dict(strict=True); missing keys are
        always an error."""
        if precision not in _PRECISIONS:
            raise Error("precision must be 'f32' or 'bf16', not %r" % (precision,))
        p = ctypes.c_void_p()
        with Ctx() as c:
            c.check(lib.rv_py_model_load_ex(ctypes.byref(p), _lib.enc(checkpoint),
                                            _lib.enc(name) if name else None, int(bool(strict)), c.ctx))
        self._p = p.value
        if precision != 'f32':
            self.set_precision(precision)
        info = (ctypes.c_int * 3)()
        lib.rv_py_model_info(self._p, info)
        self.task = 'detect' if info[0] else 'segment'
        self.num_classes = info[1]
        self.with_mask = bool(info[2])
        self.arch = lib.rv_py_model_arch(self._p).decode()
        self.CLASSES = tuple(lib.rv_py_model_class_name(self._p, i).decode('utf-8', 'replace')
                             for i in range(self.num_classes))
        self.category_ids = [lib.rv_py_model_category_id(self._p, i) for i in range(self.num_classes)]
        self.checkpoint = checkpoint
        # mmseg MultiScaleFlipAug settings used by inference_segmentor(aug_test=True)
        self.aug_ratios = None
        self.aug_flip = True

    def __del__(self):
        p, self._p = getattr(self, '_p', None), None
        if p:
            lib.rv_py_model_free(p)

    def __repr__(self):
        return '<ravlt.Model %s (%s, %d classes) from %s>' % (self.arch, self.task, self.num_classes,
                                                             self.checkpoint)

    def set_test_mode(self, mode, crop_size=None, stride=None):
        """Segmentation test_cfg: mode 'whole' or 'slide' (crop_size and stride: square windows,
        as `ravlt segment --mode slide --crop N --stride N`)."""
        if mode not in ('whole', 'slide'):
            raise ValueError("mode must be 'whole' or 'slide'")
        lib.rv_py_model_set_seg_mode(self._p, 1 if mode == 'slide' else 0, int(crop_size or 0), int(stride or 0))

    def set_precision(self, precision):
        """'f32' (the default, the reference) or 'bf16': the GEMM-heavy layers with bfloat16
        operands and float32 sums (AVX512_BF16 CPUs; elsewhere an Error, the model unchanged;
        README 'bf16'). Call before sharing the model between threads."""
        if precision not in _PRECISIONS:
            raise Error("precision must be 'f32' or 'bf16', not %r" % (precision,))
        with Ctx() as c:
            c.check(lib.rv_model_set_precision(self._p, _PRECISIONS[precision], c.ctx))

    @property
    def precision(self):
        return 'bf16' if lib.rv_model_precision(self._p) == 1 else 'f32'

    @property
    def test_mode(self):
        return 'slide' if lib.rv_py_model_seg_mode(self._p) else 'whole'


def imread(path, gray=False):
    """An image file as an HxWx3 uint8 BGR array (cv2.imread's layout), or HxW when gray
    (8-bit single-channel files: label maps), read by the library (OpenCV)."""
    data = ctypes.c_void_p()
    hwc = (ctypes.c_int * 3)()
    with Ctx() as c:
        c.check(lib.rv_py_imread(_lib.enc(path), int(bool(gray)), ctypes.byref(data), hwc, c.ctx))
    try:
        h, w, ch = hwc
        buf = ctypes.string_at(data, h * w * ch)
    finally:
        lib.rv_py_free(data)
    a = np.frombuffer(buf, dtype=np.uint8).reshape((h, w, ch) if ch > 1 else (h, w)).copy()
    return a


def _image(img):
    if isinstance(img, (str, bytes, os.PathLike)):
        img = imread(img)
    a = np.asarray(img)
    if a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] != 3:
        raise Error('image: an HxWx3 uint8 BGR array (or a file name) is needed, not %s %s' % (a.dtype, a.shape))
    return np.ascontiguousarray(a)  # no copy when already contiguous


def init_segmentor(config_or_checkpoint, checkpoint=None, device='cpu', mode=None, crop_size=None, stride=None,
                   name=None, precision='f32', strict=False):
    """mmseg's init_segmentor: a checkpoint (.pth / .safetensors) or a model-zoo name; the
    architecture comes from the checkpoint's config. mmseg's (config, checkpoint) call form is
    accepted: the checkpoint is used. mode: 'whole' / 'slide' overrides the test_cfg.
    precision: 'f32' (default) or 'bf16' (Model.set_precision). strict=True: checkpoint keys
    the model does not use are an error, not a warning."""
    ck = checkpoint if checkpoint is not None else config_or_checkpoint
    m = Model(ck, name=name, precision=precision, strict=strict)
    if m.task != 'segment':
        raise Error('%s: this checkpoint is a %s detector, not a segmentor: use init_detector' % (ck, m.arch))
    if mode is not None or crop_size is not None or stride is not None:
        m.set_test_mode(mode or m.test_mode, crop_size, stride)
    return m


def inference_segmentor(model, img, aug_test=False, ratios=None, flip=None):
    """mmseg 0.x inference_segmentor: [HxW int64 ndarray] of class indices. img: a file name or
    an HxWx3 uint8 BGR array. aug_test: multi-scale (ratios, default 0.5..1.75) + flip."""
    a = _image(img)
    h, w = a.shape[:2]
    out = np.empty((h, w), dtype=np.int32)
    ratios = ratios if ratios is not None else (model.aug_ratios if aug_test else None)
    r = None if ratios is None else _lib.as_f64(ratios)
    fl = model.aug_flip if flip is None else bool(flip)
    with Ctx() as c:
        c.check(lib.rv_py_segment(model._p, _lib.ptr(out), _lib.ptr(a), h, w, int(bool(aug_test)),
                                  _lib.ptr(r), 0 if r is None else r.size, int(fl), c.ctx))
    return [out.astype(np.int64)]


def init_detector(config_or_checkpoint, checkpoint=None, device='cpu', name=None, precision='f32', strict=False):
    """mmdet's init_detector: a checkpoint or a model-zoo name (the (config, checkpoint) form
    is accepted: the checkpoint is used). precision: 'f32' (default) or 'bf16'. strict=True:
    checkpoint keys the model does not use are an error, not a warning."""
    ck = checkpoint if checkpoint is not None else config_or_checkpoint
    m = Model(ck, name=name, precision=precision, strict=strict)
    if m.task != 'detect':
        raise Error('%s: this checkpoint is a %s segmentor, not a detector: use init_segmentor' % (ck, m.arch))
    return m


def _detect(model, img):
    a = _image(img)
    h, w = a.shape[:2]
    d = ctypes.c_void_p()
    with Ctx() as c:
        c.check(lib.rv_py_detect(model._p, ctypes.byref(d), _lib.ptr(a), h, w, c.ctx))
    try:
        dims = (ctypes.c_int * 3)()
        lib.rv_py_dets_dims(d, dims)
        n, mh, mw = dims
        boxes = np.empty((n, 5), dtype=np.float32)
        labels = np.empty(n, dtype=np.int32)
        masks = np.empty((n, mh, mw), dtype=np.uint8) if mh else None
        lib.rv_py_dets_copy(d, _lib.ptr(boxes), _lib.ptr(labels), _lib.ptr(masks))
    finally:
        lib.rv_py_dets_free(d)
    return boxes, labels, masks


def inference_detector(model, imgs):
    """mmdet 2.x inference_detector: per class an (n, 5) float32 array [x1, y1, x2, y2, score];
    with masks (bbox_result, segm_result), segm_result per class a list of HxW bool arrays.
    A list of images gives a list of results."""
    if isinstance(imgs, (list, tuple)):
        return [inference_detector(model, i) for i in imgs]
    boxes, labels, masks = _detect(model, imgs)
    K = model.num_classes
    # bbox2result: by class, stable (the library's order is already by class)
    starts = np.searchsorted(labels, np.arange(K + 1), side='left')
    bbox_result = [boxes[starts[k]:starts[k + 1]] for k in range(K)]
    if not model.with_mask:
        return bbox_result
    mb = masks.view(np.bool_)  # 0/1 bytes: a view, not a copy
    segm_result = [[mb[i] for i in range(starts[k], starts[k + 1])] for k in range(K)]
    return bbox_result, segm_result


def mean_iou(results, gt_seg_maps, num_classes, ignore_index, nan_to_num=None, label_map=dict(),
             reduce_zero_label=False):
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
            raise Error('mean_iou: prediction %s and label %s differ in shape' % (r.shape, g.shape))
        if label_map:
            g = g.copy()
            src = g.copy()
            for old, new in label_map.items():
                g[src == old] = new
        if g.dtype != np.uint8:
            if g.size and (g.min() < 0 or g.max() > 255):
                raise Error('mean_iou: label values must be in 0..255')
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
        raise Error('mean_iou: %d results for %d label maps' % (len(results), len(gt_seg_maps)))
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


from . import cocotools  # noqa: E402  (after the library is loaded)
from . import analysis  # noqa: E402  (the error analysis and the HTML report)
