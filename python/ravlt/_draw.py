"""Model.show_result's drawings: mmseg 0.x's palette blend (the same arithmetic, so the same
pixels for the same palette) and mmdet 2.x's boxes, 'name|score' labels and masks (drawn by the
library: OpenCV's anti-aliased lines and Hershey text, so no matplotlib is needed to draw).
matplotlib is imported only to show a drawing."""
from __future__ import annotations

import ctypes
from typing import Any, List, Optional, Sequence

import numpy as np

from . import _lib
from ._lib import ArgumentError, ArgumentTypeError, Ctx, lib

# mmcv's colour names (mmcv.Color), as RGB
_NAMED = {'red': (255, 0, 0), 'green': (0, 255, 0), 'blue': (0, 0, 255), 'cyan': (0, 255, 255),
          'yellow': (255, 255, 0), 'magenta': (255, 0, 255), 'white': (255, 255, 255), 'black': (0, 0, 0)}


def pyplot() -> Any:
    """matplotlib.pyplot, or an ImportError that says what needs it and how to get it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError('ravlt: showing a drawing (show=True, show_result_pyplot) needs matplotlib, which is '
                          'not installed (Debian: apt-get install python3-matplotlib; pip install matplotlib); '
                          'drawing to an array or to out_file= does not need it') from e
    return plt


def pyplot_show(img: np.ndarray, win_name: str, wait_time: float) -> None:
    """mmcv.imshow's behaviour with matplotlib: a window titled win_name; wait_time > 0 shows it
    for that many seconds, 0 until it is closed."""
    plt = pyplot()
    fig = plt.figure(win_name or 'ravlt')
    plt.imshow(img[:, :, ::-1])
    if win_name:
        plt.title(win_name)
    plt.axis('off')
    if wait_time and wait_time > 0:
        plt.show(block=False)
        plt.pause(wait_time)
        plt.close(fig)
    else:
        plt.show()


def seg_overlay(img: np.ndarray, result: Any, palette: Any, num_classes: int, opacity: float) -> np.ndarray:
    """mmseg 0.x BaseSegmentor.show_result: img * (1 - opacity) + colour * opacity per pixel
    (palette RGB, drawn BGR), labels outside the palette blended with black, truncated to uint8."""
    seg = result[0] if isinstance(result, (list, tuple)) else result
    seg = np.asarray(seg)
    if seg.ndim != 2 or seg.shape != img.shape[:2]:
        raise ArgumentError('show_result: the segmentation result is %s, the image %s: pass the result of '
                            'inference_segmentor for this image' % (seg.shape, img.shape[:2]))
    if not np.issubdtype(seg.dtype, np.integer):
        raise ArgumentTypeError('show_result: the segmentation result must hold integer class indices, not %s'
                                % seg.dtype)
    pal = np.asarray(palette)
    if pal.ndim != 2 or pal.shape[1] != 3 or pal.shape[0] < num_classes:
        raise ArgumentError('show_result: palette must be %d RGB colours (a %d x 3 array), not shape %s'
                            % (num_classes, num_classes, pal.shape))
    if not (0 < opacity <= 1):
        raise ArgumentError('show_result: opacity must be in (0, 1], not %r' % (opacity,))
    pal = pal.astype(np.uint8)
    color = np.zeros(img.shape, dtype=np.uint8)
    ok = (seg >= 0) & (seg < pal.shape[0])
    color[ok] = pal[seg[ok]][:, ::-1]
    return (img * (1 - opacity) + color * opacity).astype(np.uint8)


def _rgb(c: Any, what: str) -> np.ndarray:
    if isinstance(c, str):
        if c not in _NAMED:
            raise ArgumentError('show_result: %s %r: use an (r, g, b) tuple or one of %s'
                                % (what, c, ', '.join(sorted(_NAMED))))
        return np.array(_NAMED[c], dtype=np.uint8)
    a = np.asarray(c)
    if a.shape != (3,) or not np.issubdtype(a.dtype, np.number) or np.any(a < 0) or np.any(a > 255):
        raise ArgumentError('show_result: %s must be an (r, g, b) tuple of 0..255, a colour name or None, not %r'
                            % (what, c))
    return a.astype(np.uint8)


def _colors(spec: Any, palette: Sequence[Sequence[int]], n: int, what: str) -> List[np.ndarray]:
    """One RGB colour per class: None = the model's palette, one colour for all, or a list."""
    if spec is None:
        return [np.asarray(palette[k % len(palette)], dtype=np.uint8) if len(palette) else
                np.array([72, 101, 241], np.uint8) for k in range(n)]
    if isinstance(spec, list) and spec and not isinstance(spec[0], (int, np.integer)):
        return [_rgb(spec[k % len(spec)], what) for k in range(n)]
    one = _rgb(spec, what)
    return [one] * n


def _draw_rect(img: np.ndarray, x1: int, y1: int, x2: int, y2: int, rgb: np.ndarray, thickness: int,
               alpha: float = 0.0) -> None:
    bgr = bytes(rgb[::-1].tolist())
    with Ctx() as c:
        c.check(lib.rv_py_draw_rect(_lib.ptr(img), img.shape[0], img.shape[1], img.shape[2], x1, y1, x2, y2, bgr,
                                    thickness, alpha, c.ctx))


def _draw_text(img: np.ndarray, text: str, x: int, y: int, scale: float, rgb: np.ndarray, thickness: int) -> None:
    bgr = bytes(rgb[::-1].tolist())
    with Ctx() as c:
        c.check(lib.rv_py_draw_text(_lib.ptr(img), img.shape[0], img.shape[1], img.shape[2],
                                    text.encode('ascii', 'replace'), x, y, scale, bgr, thickness, c.ctx))


def _clip(v: float) -> int:
    return int(max(-(1 << 20), min(1 << 20, round(float(v))))) if np.isfinite(v) else 0


def det_overlay(img: np.ndarray, result: Any, class_names: Sequence[str], palette: Sequence[Sequence[int]],
                score_thr: float, bbox_color: Any, text_color: Any, mask_color: Any, thickness: int,
                font_size: float) -> np.ndarray:
    """mmdet 2.x BaseDetector.show_result + imshow_det_bboxes: boxes with score > score_thr
    (all when score_thr is 0), masks blended at 0.5, 'name|score' on a dark tag."""
    if isinstance(result, tuple):
        if len(result) != 2:
            raise ArgumentError('show_result: a detection result is bbox_result or (bbox_result, segm_result)')
        bbox_result, segm_result = result
        if isinstance(segm_result, tuple):  # mmdet's MS R-CNN form
            segm_result = segm_result[0]
    else:
        bbox_result, segm_result = result, None
    if not isinstance(bbox_result, (list, tuple)):
        raise ArgumentTypeError('show_result: bbox_result must be a list of (n, 5) arrays (one per class), not %s'
                                % type(bbox_result).__name__)
    rows, labels = [], []
    for k, b in enumerate(bbox_result):
        b = np.asarray(b, dtype=np.float64).reshape(-1, 5) if np.size(b) else np.zeros((0, 5))
        rows.append(b)
        labels.extend([k] * len(b))
    bboxes = np.concatenate(rows) if rows else np.zeros((0, 5))
    labels_a = np.asarray(labels, dtype=np.int64)
    masks: Optional[List[np.ndarray]] = None
    if segm_result is not None and len(labels_a):
        masks = [np.asarray(m) for per in segm_result for m in per]
        if len(masks) != len(labels_a):
            raise ArgumentError('show_result: %d masks for %d boxes' % (len(masks), len(labels_a)))
        for m in masks:
            if m.shape != img.shape[:2]:
                raise ArgumentError('show_result: a mask is %s, the image %s' % (m.shape, img.shape[:2]))
    if not isinstance(thickness, (int, np.integer)) or not 1 <= thickness <= 1000:
        raise ArgumentError('show_result: thickness must be an int in 1..1000, not %r' % (thickness,))
    if not (0 < float(font_size) <= 1000):
        raise ArgumentError('show_result: font_size must be in (0, 1000], not %r' % (font_size,))
    n = max(len(bbox_result), len(palette), 1)
    box_cols = _colors(bbox_color, palette, n, 'bbox_color')
    text_cols = _colors(text_color, palette, n, 'text_color')
    mask_cols = _colors(mask_color, palette, n, 'mask_color')
    keep = np.arange(len(labels_a))
    if score_thr > 0:
        keep = keep[bboxes[:, 4] > score_thr]
    out = img.astype(np.float64) if masks is not None else None
    if masks is not None:
        for i in keep:
            m = masks[i].astype(bool)
            out[m] = out[m] * 0.5 + mask_cols[labels_a[i]][::-1].astype(np.float64) * 0.5
        img = out.astype(np.uint8)
    scale = float(font_size) / 26.0
    for i in keep:
        x1, y1, x2, y2, score = bboxes[i]
        k = int(labels_a[i])
        _draw_rect(img, _clip(x1), _clip(y1), _clip(x2), _clip(y2), box_cols[k], int(thickness))
        name = class_names[k] if k < len(class_names) else 'class %d' % k
        text = '%s|%.02f' % (name, score)
        size = (ctypes.c_int * 3)()
        lib.rv_py_text_size(text.encode('ascii', 'replace'), scale, 1, size)
        tx, ty = _clip(x1), _clip(y1)
        top = ty - size[1] - size[2] - 2
        if top < 0:  # no room above the box: inside it
            top = ty
        _draw_rect(img, tx, top, tx + size[0] + 3, top + size[1] + size[2] + 2, np.zeros(3, np.uint8), 1, 0.8)
        _draw_text(img, text, tx + 1, top + size[1] + 1, scale, text_cols[k], 1)
    return np.ascontiguousarray(img)
