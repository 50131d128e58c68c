"""Loading libravlt.so and the ctypes signatures of its flat entry points (<ravlt/pyapi.h>)."""
import ctypes
import ctypes.util
import os
import sys
import sysconfig

import numpy as np

ABI = 2  # RV_PY_ABI of include/ravlt/pyapi.h


class Error(RuntimeError):
    """An error reported by libravlt; the message is the library's (rv_ctx_errmsg)."""


def _candidates():
    env = os.environ.get('RAVLT_LIBRARY')
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    names = ('libravlt.so.0', 'libravlt.so')
    # installed: <prefix>/lib/python3/dist-packages/ravlt -> <prefix>/lib[/<multiarch>]
    libdir = os.path.normpath(os.path.join(here, '..', '..', '..'))
    multiarch = sysconfig.get_config_var('MULTIARCH') or ''
    dirs = [libdir]
    if multiarch:
        dirs.append(os.path.join(libdir, multiarch))
    dirs.append(os.path.normpath(os.path.join(libdir, '..', 'lib64')))
    # build tree: RAVLT_BUILD_DIR, else build/ next to python/
    bdir = os.environ.get('RAVLT_BUILD_DIR') or os.path.normpath(os.path.join(here, '..', '..', 'build'))
    dirs.append(bdir)
    for d in dirs:
        for n in names:
            p = os.path.join(d, n)
            if os.path.exists(p):
                yield p
    p = os.path.join(bdir, 'libravlt_dev.so')  # a development build (tests/test_python.sh)
    if os.path.exists(p):
        yield p
    found = ctypes.util.find_library('ravlt')
    if found:
        yield found


def _load():
    tried = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append('%s (%s)' % (path, e))
            continue
        if not hasattr(lib, 'rv_py_abi'):
            tried.append('%s (no rv_py_abi: not a libravlt with the Python entry points)' % path)
            continue
        return lib, path
    raise ImportError('ravlt: libravlt.so not found; set RAVLT_LIBRARY to its path' +
                      ('; tried: ' + ', '.join(tried) if tried else ''))


lib, path = _load()

c_int, c_size, c_dbl, c_char_p, c_void_p = ctypes.c_int, ctypes.c_size_t, ctypes.c_double, ctypes.c_char_p, ctypes.c_void_p
P = ctypes.POINTER
pp_char = P(c_char_p)


def _sig(name, res, *args):
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = list(args)
    return f


_sig('rv_py_abi', c_int)
if lib.rv_py_abi() != ABI:
    raise ImportError('ravlt: %s has Python ABI %d, this package needs %d' % (path, lib.rv_py_abi(), ABI))
_sig('rv_py_init', c_char_p)
_sig('rv_py_ctx_new', c_void_p, c_int)
_sig('rv_py_ctx_free', None, c_void_p)
_sig('rv_py_errmsg', c_char_p, c_void_p)
_sig('rv_py_free', None, c_void_p)
_sig('rv_py_coco_load', c_int, P(c_void_p), c_char_p, c_char_p, c_size, c_char_p, c_int, c_void_p)
_sig('rv_py_coco_free', None, c_void_p)
_sig('rv_py_coco_counts', None, c_void_p, P(c_size), P(c_int))
_sig('rv_py_coco_ids', None, c_void_p, c_void_p, c_void_p)
_sig('rv_py_results_load', c_int, P(c_void_p), c_void_p, c_char_p, c_char_p, c_size, c_char_p, c_int, c_void_p)
_sig('rv_py_results_from_arrays', c_int, P(c_void_p), c_void_p, c_size, c_void_p, c_void_p, c_void_p, c_void_p,
     c_int, c_char_p, c_void_p)
_sig('rv_py_results_free', None, c_void_p)
_sig('rv_py_results_count', c_size, c_void_p)
_sig('rv_py_results_all_segm', c_int, c_void_p)
_sig('rv_py_results_copy', None, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p)
_sig('rv_py_eval_run', c_int, P(c_void_p), c_void_p, c_void_p, c_int, c_void_p, c_size, c_void_p, c_size,
     c_void_p, c_int, c_void_p, c_int, c_void_p, c_int, c_void_p, pp_char, c_int, c_int, c_int, c_void_p)
_sig('rv_py_eval_accumulate', c_int, c_void_p, c_void_p)
_sig('rv_py_eval_dims', None, c_void_p, P(c_size))
_sig('rv_py_eval_copy', c_int, c_void_p, c_void_p, c_void_p, c_void_p)
_sig('rv_py_eval_summarize', None, c_void_p, c_void_p)
_sig('rv_py_eval_summary_text', c_int, c_void_p, c_char_p, c_size)
_sig('rv_py_eval_free', None, c_void_p)
_sig('rv_py_rle_encode', c_int, c_void_p, ctypes.c_uint32, ctypes.c_uint32, c_size, P(c_void_p), c_void_p)
_sig('rv_py_rle_decode', c_int, pp_char, ctypes.c_uint32, ctypes.c_uint32, c_size, c_void_p, c_void_p)
_sig('rv_py_rle_area_bbox', c_int, pp_char, ctypes.c_uint32, ctypes.c_uint32, c_size, c_void_p, c_void_p, c_void_p)
_sig('rv_py_rle_merge', c_int, pp_char, c_void_p, c_size, c_int, P(c_void_p), c_void_p, c_void_p)
_sig('rv_py_rle_iou', c_int, pp_char, c_void_p, c_size, pp_char, c_void_p, c_size, c_void_p, c_void_p, c_void_p)
_sig('rv_py_rle_from_poly', c_int, c_void_p, c_size, ctypes.c_uint32, ctypes.c_uint32, P(c_void_p), c_void_p)
_sig('rv_py_rle_from_bbox', c_int, c_void_p, c_size, ctypes.c_uint32, ctypes.c_uint32, P(c_void_p), c_void_p)
_sig('rv_py_rle_from_counts', c_int, c_void_p, c_size, ctypes.c_uint32, ctypes.c_uint32, P(c_void_p), c_void_p)
_sig('rv_py_mean_iou', c_int, P(c_void_p), c_int, P(c_void_p), c_void_p, c_size, c_int, c_int, c_int,
     c_void_p, c_void_p, P(c_dbl), c_void_p, c_void_p)
_sig('rv_py_model_load', c_int, P(c_void_p), c_char_p, c_char_p, c_void_p)
_sig('rv_py_model_load_ex', c_int, P(c_void_p), c_char_p, c_char_p, c_int, c_void_p)
_sig('rv_py_model_free', None, c_void_p)
_sig('rv_py_model_info', None, c_void_p, P(c_int))
_sig('rv_py_model_arch', c_char_p, c_void_p)
_sig('rv_py_model_class_name', c_char_p, c_void_p, c_int)
_sig('rv_py_model_category_id', c_int, c_void_p, c_int)
_sig('rv_py_model_set_seg_mode', None, c_void_p, c_int, c_int, c_int)
_sig('rv_py_model_seg_mode', c_int, c_void_p)
_sig('rv_cpu_has_bf16', c_int)
_sig('rv_model_set_precision', c_int, c_void_p, c_int, c_void_p)
_sig('rv_model_precision', c_int, c_void_p)
_sig('rv_py_segment', c_int, c_void_p, c_void_p, c_void_p, c_int, c_int, c_int, c_void_p, c_int, c_int, c_void_p)
_sig('rv_py_imread', c_int, c_char_p, c_int, P(c_void_p), P(c_int), c_void_p)
_sig('rv_py_detect', c_int, c_void_p, P(c_void_p), c_void_p, c_int, c_int, c_void_p)
_sig('rv_py_dets_dims', None, c_void_p, P(c_int))
_sig('rv_py_dets_copy', None, c_void_p, c_void_p, c_void_p, c_void_p)
_sig('rv_py_dets_free', None, c_void_p)
_sig('rv_py_detect_tiled', c_int, c_void_p, P(c_void_p), c_void_p, c_int, c_int, c_int, c_int, c_dbl, c_dbl,
     c_int, ctypes.c_float, c_int, c_int, ctypes.c_float, c_void_p)

blas_core = lib.rv_py_init()  # the CLI's start-up (OpenBLAS kernel selection), once per process


def enc(s):
    """str / bytes / os.PathLike -> bytes for a const char * argument."""
    if isinstance(s, bytes):
        return s
    return os.fsencode(s)


def ptr(a):
    """The data pointer of a numpy array (None for None)."""
    return None if a is None else a.ctypes.data


class Ctx:
    """One rv_ctx per call: `with Ctx() as c: c.check(lib.f(..., c.ctx))`."""
    __slots__ = ('ctx',)

    def __init__(self, threads=0):
        self.ctx = lib.rv_py_ctx_new(threads)
        if not self.ctx:
            raise MemoryError('ravlt: out of memory')

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        lib.rv_py_ctx_free(self.ctx)
        self.ctx = None

    def check(self, status):
        if status != 0:
            msg = lib.rv_py_errmsg(self.ctx)
            raise Error(msg.decode('utf-8', 'replace') if msg else 'ravlt: error %d' % status)


def call(fn, *args, threads=0):
    """fn(*args, ctx); raises Error with the library's message when the status is not RV_OK."""
    with Ctx(threads) as c:
        c.check(fn(*args, c.ctx))


def take_string(p):
    """A malloc'd char * (as c_void_p) -> bytes, freed."""
    try:
        return ctypes.string_at(p)
    finally:
        lib.rv_py_free(p)


def str_array(strs):
    """A list of bytes -> char *[n] (the list keeps them alive: keep a reference)."""
    arr = (c_char_p * max(len(strs), 1))()
    arr[:len(strs)] = strs
    return arr


def as_i64(seq):
    return np.ascontiguousarray(np.asarray(seq, dtype=np.int64).reshape(-1))


def as_f64(seq):
    return np.ascontiguousarray(np.asarray(seq, dtype=np.float64).reshape(-1))
