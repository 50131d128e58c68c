"""mmdet 2.x / mmseg 0.x inference API over libravlt: `from ravlt.apis import init_detector,
inference_detector, show_result_pyplot` reads as `from mmdet.apis import ...`.

    model = init_segmentor('upernet_ravlt_s.pth')        # or init_segmentor(config, checkpoint)
    seg = inference_segmentor(model, 'photo.jpg')[0]      # HxW int64 class indices
    model.show_result('photo.jpg', [seg], out_file='overlay.png')
    with init_detector('mask_rcnn_ravlt_t.pth') as det:  # freed at the end of the block
        bbox_result, segm_result = inference_detector(det, img_bgr)

A Model holds the library's model (a C pointer): `close()` (or the end of a `with` block, or
`del`) frees it, and a closed model raises ravlt.ClosedError (a ValueError, as a closed file
does) instead of touching freed memory. A model may be shared by threads; close() waits for
no one: the last call in flight frees it. copy / deepcopy / pickle load the checkpoint again.
"""
from __future__ import annotations

import ctypes
import numbers
import os
import re
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _lib
from ._lib import (ArgumentError, ArgumentTypeError, ClosedError, Ctx, Error, lib)
from .config import Config, ConfigDict

__all__ = ['Model', 'init_segmentor', 'inference_segmentor', 'init_detector', 'inference_detector',
           'show_result_pyplot', 'imread', 'imwrite', 'cpu_has_bf16']

PathLike = Union[str, bytes, 'os.PathLike[str]']
ImageLike = Union[PathLike, np.ndarray]
_PRECISIONS = {'f32': 0, 'bf16': 1}  # rv_precision
# the mmdet / mmseg model types of each architecture (model.cfg of a checkpoint without one)
_ARCH_TYPES = {
    'upernet': dict(type='EncoderDecoder', backbone=dict(type='GLTA'), decode_head=dict(type='UPerHead')),
    'semantic_fpn': dict(type='EncoderDecoder', backbone=dict(type='GLTA'), neck=dict(type='FPN'),
                         decode_head=dict(type='FPNHead')),
    'mask_rcnn': dict(type='MaskRCNN', backbone=dict(type='GLTA')),
    'cascade_mask_rcnn': dict(type='CascadeRCNN', backbone=dict(type='GLTA')),
    'retinanet': dict(type='RetinaNet', backbone=dict(type='GLTA')),
}


def cpu_has_bf16() -> bool:
    """True when this CPU can run precision='bf16' (AVX512_BF16)."""
    return bool(lib.rv_cpu_has_bf16())


def _check_device(device: Any) -> None:
    """'cpu' (also 'cpu:0' and torch.device('cpu'), which torch and mmdet accept); anything else
    is an error: ravlt runs on the CPU only."""
    if device is None:
        return
    s = device if isinstance(device, str) else None
    if s is None and type(device).__name__ == 'device' and hasattr(device, 'type'):  # torch.device
        s = str(device)
    if s is None:
        raise ArgumentTypeError("device must be a string such as 'cpu', not %s %r" % (type(device).__name__, device))
    if not re.fullmatch(r'cpu(:[0-9]+)?', s):
        raise ArgumentError("device %r: ravlt runs on the CPU only (device='cpu'); CUDA and other devices "
                            "are not supported" % (s,))


def _check_precision(precision: Any) -> int:
    if not isinstance(precision, str) or precision not in _PRECISIONS:
        raise ArgumentError("precision must be 'f32' or 'bf16', not %r" % (precision,))
    return _PRECISIONS[precision]


def _pair(v: Any, what: str) -> Tuple[int, int]:
    """mmseg's crop_size / stride: an int (square) or (h, w), positive."""
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        hw = (int(v), int(v))
    elif isinstance(v, (tuple, list, np.ndarray)) and len(v) == 2 and \
            all(isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in v):
        hw = (int(v[0]), int(v[1]))
    else:
        raise ArgumentTypeError('%s must be an int or an (h, w) pair of ints, not %r' % (what, v))
    if hw[0] < 1 or hw[1] < 1 or hw[0] > 65536 or hw[1] > 65536:
        raise ArgumentError('%s must be in 1..65536, not %r' % (what, v))
    return hw


class _Use:
    """`with _Use(model) as p:` -- the model's pointer, kept alive (not freed by close()) until
    the block ends; ClosedError when the model is closed."""
    __slots__ = ('m',)

    def __init__(self, m: 'Model') -> None:
        if not isinstance(m, Model):
            raise ArgumentTypeError('model must be a ravlt.Model (from init_segmentor / init_detector), not %s'
                                    % type(m).__name__)
        self.m = m

    def __enter__(self) -> int:
        return self.m._enter()

    def __exit__(self, *exc: Any) -> None:
        self.m._leave()


class Model:
    """A loaded checkpoint (segmentor or detector): init_segmentor / init_detector's result.

    Attributes as mmdet / mmseg models have them: CLASSES (class names), PALETTE (an RGB
    colour per class), cfg (the checkpoint's config, a ravlt.Config), test_cfg; and task
    ('segment' / 'detect'), arch, num_classes, category_ids (COCO ids of the classes),
    with_mask, checkpoint. Immutable once loaded (set_precision / set_test_mode wait for the
    calls in flight) and shared by threads (each call has its own memory). close() frees the
    library's model; so does the end of a `with` block or the last reference going away."""

    def __init__(self, checkpoint: PathLike, name: Optional[str] = None, device: Any = None,
                 precision: str = 'f32', strict: bool = False) -> None:
        """Load checkpoint (a .pth / .safetensors file or a model-zoo name). strict: checkpoint
        keys the model does not use are an error (naming them) instead of a warning, as torch's
        load_state_dict(strict=True); missing keys are always an error."""
        self._p: Optional[int] = None
        self._cv = threading.Condition()
        self._busy = 0
        self._closing = False
        _check_device(device)
        prec = _check_precision(precision)
        if not isinstance(checkpoint, (str, bytes, os.PathLike)):
            raise ArgumentTypeError('checkpoint must be a file name or a model name, not %s'
                                    % type(checkpoint).__name__)
        if name is not None and not isinstance(name, str):
            raise ArgumentTypeError('name must be a model name string, not %s' % type(name).__name__)
        ck = os.fsdecode(os.fspath(checkpoint))
        if ck.endswith('.py') and os.path.isfile(ck):
            raise ArgumentError('%s: a config file has no weights; pass the checkpoint (.pth / .safetensors): '
                                'its meta config describes the model' % ck)
        p = ctypes.c_void_p()
        with Ctx() as c:
            st = lib.rv_py_model_load_ex(ctypes.byref(p), _lib.enc(ck), _lib.enc(name) if name else None,
                                         int(bool(strict)), c.ctx)
            self._p = p.value  # owned (freed by __del__) even if a warnings filter raises on the way out
            c.check(st)
        self.checkpoint = ck
        self._name = name
        self._strict = bool(strict)
        if prec:
            self.set_precision(precision)
        info = (ctypes.c_int * 3)()
        lib.rv_py_model_info(self._p, info)
        self.task = 'detect' if info[0] else 'segment'
        self.num_classes = info[1]
        self.with_mask = bool(info[2])
        self.arch = lib.rv_py_model_arch(self._p).decode()
        self.CLASSES = tuple(lib.rv_py_model_class_name(self._p, i).decode('utf-8', 'replace')
                             for i in range(self.num_classes))
        rgb = (ctypes.c_ubyte * 3)()
        pal = []
        for i in range(self.num_classes):
            lib.rv_model_class_color(self._p, i, rgb)
            pal.append([rgb[0], rgb[1], rgb[2]])
        self.PALETTE = pal
        self.category_ids = [lib.rv_py_model_category_id(self._p, i) for i in range(self.num_classes)]
        text = lib.rv_model_config_text(self._p)
        self._cfg_text = text.decode('utf-8', 'replace') if text else None
        self._cfg: Optional[Config] = None
        # mmseg MultiScaleFlipAug settings used by inference_segmentor(aug_test=True)
        self.aug_ratios: Optional[Sequence[float]] = None
        self.aug_flip = True

    # ---- lifetime ----
    def _enter(self) -> int:
        with self._cv:
            if self._p is None or self._closing:
                raise ClosedError('%s: the model is closed' % getattr(self, 'checkpoint', 'model'))
            self._busy += 1
            return self._p

    def _leave(self) -> None:
        with self._cv:
            self._busy -= 1
            if self._busy == 0:
                self._cv.notify_all()
                if self._closing:
                    self._free()

    def _free(self) -> None:
        p, self._p = self._p, None
        if p:
            lib.rv_py_model_free(p)

    def close(self) -> None:
        """Free the library's model now (idempotent). Calls in flight in other threads finish
        first (the last one frees it); later calls raise ClosedError."""
        cv = getattr(self, '_cv', None)
        if cv is None:
            return
        with cv:
            self._closing = True
            if self._busy == 0:
                self._free()

    @property
    def closed(self) -> bool:
        """True after close()."""
        return self._p is None or self._closing

    def __enter__(self) -> 'Model':
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone already
            pass

    def __reduce__(self) -> Any:
        """copy / deepcopy / pickle: the checkpoint loaded again with the same settings."""
        if self.closed:
            raise ClosedError('%s: the model is closed' % self.checkpoint)
        state = dict(precision=self.precision, test=self._seg_cfg(), aug_ratios=self.aug_ratios,
                     aug_flip=self.aug_flip)
        return (_reload, (self.checkpoint, self._name, self._strict, state))

    def __repr__(self) -> str:
        return '<ravlt.Model %s (%s, %d classes) from %s%s>' % (
            getattr(self, 'arch', '?'), getattr(self, 'task', '?'), getattr(self, 'num_classes', 0),
            getattr(self, 'checkpoint', '?'), ', closed' if self.closed else '')

    # ---- settings ----
    def _exclusive_call(self, fn: Any) -> Any:
        """fn(pointer) with no call in flight on this model (settings are not changed under a
        running inference)."""
        with self._cv:
            self._cv.wait_for(lambda: self._busy == 0)
            if self._p is None or self._closing:
                raise ClosedError('%s: the model is closed' % self.checkpoint)
            return fn(self._p)

    def set_test_mode(self, mode: str, crop_size: Any = None, stride: Any = None) -> None:
        """Segmentation test_cfg (mmseg's): mode 'whole' or 'slide'; crop_size and stride an int
        or (h, w) (stride <= crop_size); values not given keep the current ones."""
        if self.task != 'segment':
            raise ArgumentError('%s: set_test_mode is for segmentors; this is a %s detector'
                                % (self.checkpoint, self.arch))
        if mode not in ('whole', 'slide'):
            raise ArgumentError("mode must be 'whole' or 'slide', not %r" % (mode,))
        crop = _pair(crop_size, 'crop_size') if crop_size is not None else None
        step = _pair(stride, 'stride') if stride is not None else None

        def apply(p: int) -> None:
            cur = (ctypes.c_int * 5)()
            lib.rv_py_model_seg_cfg(p, cur)
            c = crop or (cur[1], cur[2])
            s = step or (cur[3], cur[4])
            if mode == 'slide' and (s[0] > c[0] or s[1] > c[1]):
                raise ArgumentError('stride %s is larger than crop_size %s: slide windows would leave pixels '
                                    'uncovered (pass stride <= crop_size)' % (tuple(s), tuple(c)))
            lib.rv_py_model_set_seg_cfg(p, 1 if mode == 'slide' else 0, c[0], c[1], s[0], s[1])
        self._exclusive_call(apply)

    def set_precision(self, precision: str) -> None:
        """'f32' (the default, the reference) or 'bf16': the GEMM-heavy layers with bfloat16
        operands and float32 sums (AVX512_BF16 CPUs; elsewhere an Error, the model unchanged;
        README 'bf16')."""
        prec = _check_precision(precision)

        def apply(p: int) -> None:
            with Ctx() as c:
                c.check(lib.rv_model_set_precision(p, prec, c.ctx))
        self._exclusive_call(apply)

    @property
    def precision(self) -> str:
        """'f32' or 'bf16'."""
        with _Use(self) as p:
            return 'bf16' if lib.rv_model_precision(p) == 1 else 'f32'

    def _seg_cfg(self) -> Tuple[int, ...]:
        cur = (ctypes.c_int * 5)()
        with _Use(self) as p:
            lib.rv_py_model_seg_cfg(p, cur)
        return tuple(cur)

    @property
    def test_mode(self) -> str:
        """The segmentation test mode in use: 'whole' or 'slide'."""
        return 'slide' if self._seg_cfg()[0] else 'whole'

    @property
    def test_cfg(self) -> ConfigDict:
        """The test settings in use, as mmseg's model.test_cfg (mode, and crop_size / stride as
        (h, w) in slide mode); for a detector the config's model.test_cfg (empty without one)."""
        if self.task == 'segment':
            m, ch, cw, sh, sw = self._seg_cfg()
            if m:
                return ConfigDict(mode='slide', crop_size=(ch, cw), stride=(sh, sw))
            return ConfigDict(mode='whole')
        model = self.cfg.get('model') or {}
        return ConfigDict(model.get('test_cfg') or self.cfg.get('test_cfg') or {})

    @property
    def cfg(self) -> Config:
        """The checkpoint's config (mmcv Config-like: cfg.model.decode_head.num_classes,
        cfg['data']...), parsed from its meta config text; a checkpoint without one gives the
        architecture ravlt found (model.type, backbone, test_cfg)."""
        if self._cfg is None:
            if self._cfg_text is not None:
                try:
                    cfg = Config.fromstring(self._cfg_text, name=self.checkpoint + ':config')
                except Error:
                    cfg = None  # the library used the weights (and warned at load)
                if cfg is not None:
                    object.__setattr__(cfg, '_filename', self.checkpoint + ':config')
                    self._cfg = cfg
            if self._cfg is None:
                model = dict(_ARCH_TYPES.get(self.arch, dict(type=self.arch)))
                if self.task == 'segment':
                    model['decode_head'] = dict(model['decode_head'], num_classes=self.num_classes)
                    model['test_cfg'] = self.test_cfg.to_dict()
                d: Dict[str, Any] = dict(model=model)
                self._cfg = Config(d, filename=None)
        return self._cfg

    # ---- mmdet BaseDetector / mmseg BaseSegmentor ----
    def show_result(self, img: ImageLike, result: Any, *args: Any, **kwargs: Any) -> Optional[np.ndarray]:
        """Draw result on img (a file name or a BGR array; not modified), with the signature of
        the model's task, positional arguments included:

        - detectors, mmdet 2.x BaseDetector.show_result(img, result, score_thr=0.3,
          bbox_color=(72, 101, 241), text_color=(72, 101, 241), mask_color=None, thickness=2,
          font_size=13, win_name='', show=False, wait_time=0, out_file=None): boxes with score >
          score_thr, 'name|score' labels, masks; colours RGB tuples, mmcv colour names, a list
          per class, or None for the class palette;
        - segmentors, mmseg 0.x BaseSegmentor.show_result(img, result, palette=None, win_name='',
          show=False, wait_time=0, out_file=None, opacity=0.5): each class's palette colour (RGB;
          None: model.PALETTE) blended at opacity, mmseg's arithmetic.

        Returns the BGR uint8 drawing unless show or out_file is given (as they do): out_file
        writes it (folders created, the format by the extension; show is then ignored), show
        displays it with matplotlib (an ImportError naming python3-matplotlib without it)."""
        if self.task == 'segment':
            return self._show_seg(img, result, *args, **kwargs)
        return self._show_det(img, result, *args, **kwargs)

    def _show_det(self, img: ImageLike, result: Any, score_thr: float = 0.3, bbox_color: Any = (72, 101, 241),
                  text_color: Any = (72, 101, 241), mask_color: Any = None, thickness: int = 2,
                  font_size: float = 13, win_name: str = '', show: bool = False, wait_time: float = 0,
                  out_file: Optional[PathLike] = None) -> Optional[np.ndarray]:
        from . import _draw
        drawn = _draw.det_overlay(_image(img).copy(), result, self.CLASSES, self.PALETTE, score_thr, bbox_color,
                                  text_color, mask_color, thickness, font_size)
        return self._shown(drawn, win_name, show, wait_time, out_file)

    def _show_seg(self, img: ImageLike, result: Any, palette: Any = None, win_name: str = '', show: bool = False,
                  wait_time: float = 0, out_file: Optional[PathLike] = None,
                  opacity: float = 0.5) -> Optional[np.ndarray]:
        from . import _draw
        drawn = _draw.seg_overlay(_image(img).copy(), result, self.PALETTE if palette is None else palette,
                                  len(self.CLASSES), opacity)
        return self._shown(drawn, win_name, show, wait_time, out_file)

    @staticmethod
    def _shown(drawn: np.ndarray, win_name: str, show: bool, wait_time: float,
               out_file: Optional[PathLike]) -> Optional[np.ndarray]:
        from . import _draw
        if out_file is not None:
            show = False
            imwrite(drawn, out_file)
        if show:
            _draw.pyplot_show(drawn, win_name, wait_time)
        if not (show or out_file is not None):
            return drawn
        return None


def _reload(checkpoint: str, name: Optional[str], strict: bool, state: Dict[str, Any]) -> Model:
    m = Model(checkpoint, name=name, precision=state['precision'], strict=strict)
    t = state['test']
    if m.task == 'segment' and t[1] > 0:
        m.set_test_mode('slide' if t[0] else 'whole', (t[1], t[2]), (t[3], t[4]))
    m.aug_ratios, m.aug_flip = state['aug_ratios'], state['aug_flip']
    return m


def imread(path: PathLike, gray: bool = False) -> np.ndarray:
    """An image file as an HxWx3 uint8 BGR array (cv2.imread's layout), or HxW when gray
    (8-bit single-channel files: label maps), read by the library (OpenCV)."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise ArgumentTypeError('imread: a file name is needed, not %s' % type(path).__name__)
    data = ctypes.c_void_p()
    hwc = (ctypes.c_int * 3)()
    try:  # freed also when a warnings filter turns the library's warning into an exception
        with Ctx() as c:
            c.check(lib.rv_py_imread(_lib.enc(path), int(bool(gray)), ctypes.byref(data), hwc, c.ctx))
        h, w, ch = hwc
        buf = ctypes.string_at(data, h * w * ch)
    finally:
        if data.value:
            lib.rv_py_free(data)
    return np.frombuffer(buf, dtype=np.uint8).reshape((h, w, ch) if ch > 1 else (h, w)).copy()


def imwrite(img: np.ndarray, file_path: PathLike, auto_mkdir: bool = True) -> bool:
    """mmcv.imwrite: write a uint8 HxW / HxWx3 (BGR) / HxWx4 array, the format by the extension
    (.png, .jpg, ...), through a temporary file renamed into place; folders are created when
    auto_mkdir. Returns True."""
    a = np.asarray(img)
    if a.dtype != np.uint8:
        raise ArgumentTypeError('imwrite: a uint8 image is needed, not %s' % a.dtype)
    if not (a.ndim == 2 or (a.ndim == 3 and a.shape[2] in (1, 3, 4))) or a.size == 0:
        raise ArgumentError('imwrite: an HxW, HxWx3 or HxWx4 image is needed, not shape %s' % (a.shape,))
    path = os.fsdecode(os.fspath(file_path))
    d = os.path.dirname(path)
    if auto_mkdir and d:
        os.makedirs(d, exist_ok=True)
    a = np.ascontiguousarray(a)
    with Ctx() as c:
        c.check(lib.rv_py_imwrite(_lib.enc(path), _lib.ptr(a), a.shape[0], a.shape[1],
                                  1 if a.ndim == 2 else a.shape[2], c.ctx))
    return True


def _image(img: Any) -> np.ndarray:
    """A file name or an image array -> a contiguous HxWx3 uint8 BGR array (not copied when it
    already is one). Grey (HxW, HxWx1) and BGRA (HxWx4) arrays become BGR, as cv2.imread
    (IMREAD_COLOR) converts such files."""
    if isinstance(img, (str, bytes, os.PathLike)):
        return imread(img)
    if not isinstance(img, np.ndarray):
        raise ArgumentTypeError('image: a file name or an HxWx3 uint8 BGR array is needed, not %s'
                                % type(img).__name__)
    a = img
    if a.dtype != np.uint8:
        raise ArgumentTypeError('image: an HxWx3 uint8 BGR array (or a file name) is needed, not %s %s '
                                '(convert with .astype(np.uint8) if its values are 0..255)' % (a.dtype, a.shape))
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    if a.ndim == 2:
        a = np.repeat(a[:, :, None], 3, axis=2)
    elif a.ndim == 3 and a.shape[2] == 4:
        a = a[:, :, :3]
    if a.ndim != 3 or a.shape[2] != 3:
        raise ArgumentError('image: an HxWx3 uint8 BGR array (or a file name) is needed, not shape %s' % (img.shape,))
    if a.shape[0] < 1 or a.shape[1] < 1 or a.shape[0] > 2 ** 30 // max(a.shape[1], 1):
        raise ArgumentError('image: %d x %d pixels: an image needs 1 to 2^30 pixels' % (a.shape[0], a.shape[1]))
    return np.ascontiguousarray(a)


def _is_batch(imgs: Any) -> bool:
    return isinstance(imgs, (list, tuple))


def _model(model: Any, task: str, fn: str) -> 'Model':
    if not isinstance(model, Model):
        raise ArgumentTypeError('%s: model must be a ravlt.Model (from init_%s), not %s'
                                % (fn, 'segmentor' if task == 'segment' else 'detector', type(model).__name__))
    if model.task != task:
        other = 'inference_detector' if task == 'segment' else 'inference_segmentor'
        raise ArgumentTypeError('%s: %s is a %s %s, not a %s: use %s' % (
            fn, model.checkpoint, model.arch, 'detector' if model.task == 'detect' else 'segmentor',
            'segmentor' if task == 'segment' else 'detector', other))
    return model


def init_segmentor(config_or_checkpoint: Any, checkpoint: Optional[PathLike] = None, device: Any = 'cpu',
                   mode: Optional[str] = None, crop_size: Any = None, stride: Any = None, name: Optional[str] = None,
                   precision: str = 'f32', strict: bool = False) -> Model:
    """mmseg 0.x init_segmentor: a checkpoint (.pth / .safetensors) or a model-zoo name; the
    architecture comes from the checkpoint's config. mmseg's (config, checkpoint) call form is
    accepted: the checkpoint is used. device: 'cpu' only (anything else is a ValueError).
    mode: 'whole' / 'slide' overrides the test_cfg, crop_size / stride (an int or (h, w)) its
    slide windows: crop_size or stride without mode='slide' is an error unless the checkpoint
    tests in slide mode. precision: 'f32' (default) or 'bf16' (Model.set_precision).
    strict=True: checkpoint keys the model does not use are an error, not a warning."""
    ck = checkpoint if checkpoint is not None else config_or_checkpoint
    if mode is not None and mode not in ('whole', 'slide'):
        raise ArgumentError("mode must be 'whole' or 'slide', not %r" % (mode,))
    crop = _pair(crop_size, 'crop_size') if crop_size is not None else None
    step = _pair(stride, 'stride') if stride is not None else None
    m = Model(ck, name=name, device=device, precision=precision, strict=strict)
    try:
        if m.task != 'segment':
            raise ArgumentError('%s: this checkpoint is a %s detector, not a segmentor: use init_detector'
                                % (m.checkpoint, m.arch))
        if mode is not None or crop is not None or step is not None:
            use = mode or m.test_mode
            if use != 'slide':
                raise ArgumentError("%s: crop_size / stride set the slide windows, but the test mode is 'whole': "
                                    "pass mode='slide'" % m.checkpoint)
            m.set_test_mode(use, crop, step)
    except BaseException:
        m.close()
        raise
    return m


def inference_segmentor(model: Model, img: Union[ImageLike, Sequence[ImageLike], None] = None, aug_test: bool = False,
                        ratios: Optional[Sequence[float]] = None, flip: Optional[bool] = None, *,
                        imgs: Union[ImageLike, Sequence[ImageLike], None] = None) -> List[np.ndarray]:
    """mmseg 0.x inference_segmentor: a list with one HxW int64 array of class indices per
    image. img: a file name or an HxWx3 uint8 BGR array, or a list / tuple of them (the list
    then has one map per image); `imgs=` is the same (later mmseg 0.x versions' name).
    aug_test: multi-scale (ratios, default 0.5..1.75) + flip."""
    _model(model, 'segment', 'inference_segmentor')
    if (img is None) == (imgs is None):
        raise ArgumentTypeError('inference_segmentor: pass the image(s) once, as img (or imgs=)')
    img = img if imgs is None else imgs
    imgs = list(img) if _is_batch(img) else [img]
    ratios = ratios if ratios is not None else (model.aug_ratios if aug_test else None)
    r = None if ratios is None else _lib.as_f64(ratios)
    if r is not None and (r.size == 0 or not np.all(np.isfinite(r)) or np.any(r <= 0) or np.any(r > 16)):
        raise ArgumentError('ratios must be scale factors in (0, 16], not %r' % (ratios,))
    fl = model.aug_flip if flip is None else bool(flip)
    out = []
    for one in imgs:
        a = _image(one)
        h, w = a.shape[:2]
        labels = np.empty((h, w), dtype=np.int32)
        with _Use(model) as p, Ctx() as c:
            c.check(lib.rv_py_segment(p, _lib.ptr(labels), _lib.ptr(a), h, w, int(bool(aug_test)),
                                      _lib.ptr(r), 0 if r is None else r.size, int(fl), c.ctx))
        out.append(labels.astype(np.int64))
    return out


def init_detector(config_or_checkpoint: Any, checkpoint: Optional[PathLike] = None, device: Any = 'cpu',
                  name: Optional[str] = None, precision: str = 'f32', strict: bool = False,
                  cfg_options: Optional[Dict[str, Any]] = None) -> Model:
    """mmdet 2.x init_detector: a checkpoint or a model-zoo name (the (config, checkpoint) form
    is accepted: the checkpoint is used). device: 'cpu' only (anything else is a ValueError).
    precision: 'f32' (default) or 'bf16'. strict=True: checkpoint keys the model does not use
    are an error, not a warning. cfg_options: not supported (a ValueError unless None/empty):
    the checkpoint's config decides."""
    if cfg_options:
        raise ArgumentError('cfg_options is not supported: the model follows the checkpoint\'s config')
    ck = checkpoint if checkpoint is not None else config_or_checkpoint
    m = Model(ck, name=name, device=device, precision=precision, strict=strict)
    if m.task != 'detect':
        m.close()
        raise ArgumentError('%s: this checkpoint is a %s segmentor, not a detector: use init_segmentor'
                            % (m.checkpoint, m.arch))
    return m


def _detect(model: Model, img: Any, tile: Any = None, overlap: float = 0.2, merge: str = 'nms',
            merge_thr: float = 0.5, full: bool = False, max_dets: Optional[int] = None,
            score_thr: float = 0.0) -> Tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
    a = _image(img)
    h, w = a.shape[:2]
    if tile is not None:
        th, tw = _pair(tile, 'tile')
        if merge not in ('nms', 'nmm'):
            raise ArgumentError("merge must be 'nms' or 'nmm', not %r" % (merge,))
    d = ctypes.c_void_p()
    try:
        with _Use(model) as p, Ctx() as c:
            if tile is None:
                c.check(lib.rv_py_detect(p, ctypes.byref(d), _lib.ptr(a), h, w, c.ctx))
            else:
                c.check(lib.rv_py_detect_tiled(p, ctypes.byref(d), _lib.ptr(a), h, w, th, tw, float(overlap),
                                               float(overlap), merge == 'nmm', float(merge_thr), bool(full),
                                               int(max_dets or 0), float(score_thr), c.ctx))
        dims = (ctypes.c_int * 3)()
        lib.rv_py_dets_dims(d, dims)
        n, mh, mw = dims
        boxes = np.empty((n, 5), dtype=np.float32)
        labels = np.empty(n, dtype=np.int32)
        masks = np.empty((n, mh, mw), dtype=np.uint8) if mh else None
        lib.rv_py_dets_copy(d, _lib.ptr(boxes), _lib.ptr(labels), _lib.ptr(masks))
    finally:
        if d.value:
            lib.rv_py_dets_free(d)
    return boxes, labels, masks


def inference_detector(model: Model, imgs: Union[ImageLike, Sequence[ImageLike]], tile: Any = None,
                       overlap: float = 0.2, merge: str = 'nms', merge_thr: float = 0.5, full: bool = False,
                       max_dets: Optional[int] = None, score_thr: float = 0.0) -> Any:
    """mmdet 2.x inference_detector: per class an (n, 5) float32 array [x1, y1, x2, y2, score];
    with masks (bbox_result, segm_result), segm_result per class a list of HxW bool arrays.
    imgs: a file name or an HxWx3 uint8 BGR array; a list / tuple of them gives a list of
    results.
    tile=(h, w) (or N): SAHI's tiled detection at the image's own resolution, as `ravlt detect
    --tile` (docs/large-images.md): tiles of h x w overlapping by the ratio `overlap`, merged
    class by class with merge='nms' (IoU >= merge_thr) or 'nmm' (SAHI's greedy merging on the
    intersection over the smaller box); full=True also runs the whole image; max_dets keeps the
    best N of the merged result (not cut to 100 otherwise); score_thr drops the tiles'
    detections under it before the merge."""
    _model(model, 'detect', 'inference_detector')
    if _is_batch(imgs):
        return [inference_detector(model, i, tile, overlap, merge, merge_thr, full, max_dets, score_thr) for i in imgs]
    boxes, labels, masks = _detect(model, imgs, tile, overlap, merge, merge_thr, full, max_dets, score_thr)
    K = model.num_classes
    # bbox2result: by class, stable (the library's order is already by class)
    starts = np.searchsorted(labels, np.arange(K + 1), side='left')
    bbox_result = [boxes[starts[k]:starts[k + 1]] for k in range(K)]
    if not model.with_mask:
        return bbox_result
    mb = masks.view(np.bool_)  # 0/1 bytes: a view, not a copy
    segm_result = [[mb[i] for i in range(starts[k], starts[k + 1])] for k in range(K)]
    return bbox_result, segm_result


def show_result_pyplot(model: Model, img: ImageLike, result: Any, score_thr: float = 0.3, title: str = 'result',
                       wait_time: float = 0, palette: Any = None, fig_size: Tuple[float, float] = (15, 10),
                       opacity: float = 0.5, block: bool = True, out_file: Optional[PathLike] = None) -> np.ndarray:
    """mmdet 2.x / mmseg 0.x show_result_pyplot: model.show_result's drawing shown in a
    matplotlib figure (title; mmdet's score_thr and wait_time, mmseg's palette, fig_size,
    opacity, block) and written to out_file when given. Needs matplotlib (an ImportError
    naming python3-matplotlib without it, before anything is drawn). Returns the drawing (BGR)."""
    from . import _draw
    plt = _draw.pyplot()
    if not isinstance(model, Model):
        raise ArgumentTypeError('show_result_pyplot: model must be a ravlt.Model, not %s' % type(model).__name__)
    drawn = model.show_result(img, result, score_thr=score_thr) if model.task == 'detect' else \
        model.show_result(img, result, palette=palette, opacity=opacity)
    assert drawn is not None
    plt.figure(figsize=fig_size)
    plt.imshow(drawn[:, :, ::-1])
    plt.title(title)
    plt.tight_layout()
    if wait_time and wait_time > 0:
        plt.show(block=False)
        plt.pause(wait_time)
    else:
        plt.show(block=block)
    if out_file is not None:
        imwrite(drawn, out_file)
    return drawn
