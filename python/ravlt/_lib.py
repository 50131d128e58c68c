"""Loading libravlt.so and the ctypes signatures of its flat entry points (<ravlt/pyapi.h>)."""
import ctypes
import ctypes.util
import os
import _thread
import sys
import sysconfig
import threading
import warnings

import numpy as np

ABI = 4  # the RV_PY_ABI of include/ravlt/pyapi.h this package needs (a newer library only adds)


class Error(RuntimeError):
    """An error reported by libravlt; the message is the library's (rv_ctx_errmsg).

    Where mmdet / mmseg / pycocotools users would catch a builtin class, the error raised is
    a subclass deriving from both Error and that builtin (ValueError, TypeError, OSError and
    its FileNotFoundError / PermissionError / IsADirectoryError, MemoryError), so both
    `except ravlt.Error` and `except ValueError` catch it."""


class ArgumentError(Error, ValueError):
    """An invalid argument or option value (RV_ERR_ARG), or a size that does not fit (RV_ERR_SHAPE)."""


class FormatError(Error, ValueError):
    """Malformed or corrupt file contents (RV_ERR_FORMAT), or valid contents this build does not
    handle (RV_ERR_UNSUPPORTED)."""


class ArgumentTypeError(Error, TypeError):
    """An argument of the wrong type (raised by the Python layer, e.g. crop_size=(h, w, 3))."""


class FileError(Error, OSError):
    """A file that cannot be read or written (RV_ERR_IO)."""


class MissingFileError(FileError, FileNotFoundError):
    """A file (or model name) that does not exist."""


class FilePermissionError(FileError, PermissionError):
    """A file the process may not read or write."""


class IsAFolderError(FileError, IsADirectoryError):
    """A folder where a file is needed."""


class OutOfMemoryError(Error, MemoryError):
    """An allocation failed (RV_ERR_NOMEM)."""


class ClosedError(Error, ValueError):
    """An operation on a closed model (Model.close(), `with`, or del), as on a closed file."""


class RavltWarning(UserWarning):
    """A warning of libravlt (its log hook's warnings: checkpoint keys the model does not use, a
    truncated JPEG decoded partially, ...), issued through Python's `warnings` module."""


def error_class(status, msg):
    """The exception class for an rv_status and the library's message."""
    if status == 1:  # RV_ERR_IO
        low = msg.lower()
        if 'no such file' in low:
            return MissingFileError
        if 'permission denied' in low:
            return FilePermissionError
        if 'is a folder' in low or 'is a directory' in low:
            return IsAFolderError
        return FileError
    if status == 7 and 'no such file' in msg.lower():  # RV_ERR_NOTFOUND: not a file nor a model name
        return MissingFileError
    return _STATUS_CLASS.get(status, Error)


# RV_ERR_FORMAT, RV_ERR_UNSUPPORTED, RV_ERR_ARG, RV_ERR_SHAPE, RV_ERR_NOMEM; RV_ERR_NOTFOUND (a
# missing key), RV_ERR_MODEL (a checkpoint that does not fit), RV_ERR_INTERNAL stay Error:
# torch's load_state_dict raises RuntimeError for those.
_STATUS_CLASS = {2: FormatError, 3: FormatError, 4: ArgumentError, 5: ArgumentError, 6: OutOfMemoryError}


def _candidates():
    env = os.environ.get('RAVLT_LIBRARY')
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    names = ('libravlt.so.0', 'libravlt.so')
    # a wheel / `pip install .`: the library inside the package
    p = os.path.join(here, 'libravlt.so.0')
    if os.path.exists(p):
        yield p
    # cmake --install: <prefix>/lib/python3.X/dist-packages/ravlt (or lib/python3/dist-packages,
    # lib/python3.X/site-packages) -> <prefix>/lib[/<multiarch>]
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
    p = os.path.join(bdir, 'libravlt_dev.so')  # a development build (tests/cli/test_python.sh)
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


class _Lib:
    """libravlt.so, opened on the first use of one of its functions (so that `import ravlt`
    costs no dlopen of the library and the ~260 libraries OpenCV pulls in); `lib.f` is the
    ctypes function f with the signature _sig gave it."""

    def __getattr__(self, name):
        f = getattr(_open(), name)
        if name in _INTERRUPTIBLE and _cancel_fn() is not None:
            f = interruptible(f)  # Ctrl-C cancels the call (below)
        self.__dict__[name] = f
        return f


_sigs = []
_real = None
_open_lock = threading.Lock()
blas_core = None


def _open():
    global _real, blas_core, path
    if _real is None:
        with _open_lock:
            if _real is None:
                real, path = _load()
                for name, res, args in _sigs:
                    f = getattr(real, name)
                    f.restype = res
                    f.argtypes = list(args)
                if real.rv_py_abi() < ABI:
                    raise ImportError('ravlt: %s has Python ABI %d, this package needs %d or newer (an older '
                                      'libravlt: install the library and the package from one build)' %
                                      (path, real.rv_py_abi(), ABI))
                blas_core = real.rv_py_init()  # the CLI's start-up (OpenBLAS kernel selection), once
                _real = real
    return _real


lib = _Lib()
path = next(_candidates(), None)  # the library that will be opened (found now: a clear ImportError)
if path is None:
    raise ImportError('ravlt: libravlt.so not found; set RAVLT_LIBRARY to its path')

c_int, c_size, c_dbl, c_char_p, c_void_p = ctypes.c_int, ctypes.c_size_t, ctypes.c_double, ctypes.c_char_p, ctypes.c_void_p
P = ctypes.POINTER
pp_char = P(c_char_p)


def _sig(name, res, *args):
    """Declares the signature of library function name (applied when the library opens)."""
    _sigs.append((name, res, args))


_sig('rv_py_abi', c_int)
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
_sig('rv_version', c_char_p)
_sig('rv_model_config_text', c_char_p, c_void_p)
_sig('rv_model_class_color', None, c_void_p, c_int, c_void_p)
_sig('rv_model_has_class_names', c_int, c_void_p)
_sig('rv_py_config_json', c_int, c_char_p, c_char_p, P(c_void_p), c_void_p)
_sig('rv_py_model_set_seg_cfg', None, c_void_p, c_int, c_int, c_int, c_int, c_int)
_sig('rv_py_model_seg_cfg', None, c_void_p, P(c_int))
_sig('rv_py_draw_rect', c_int, c_void_p, c_int, c_int, c_int, c_int, c_int, c_int, c_int, c_char_p, c_int,
     ctypes.c_float, c_void_p)
_sig('rv_py_draw_text', c_int, c_void_p, c_int, c_int, c_int, c_char_p, c_int, c_int, c_dbl, c_char_p, c_int,
     c_void_p)
_sig('rv_py_text_size', None, c_char_p, c_dbl, c_int, P(c_int))
_sig('rv_py_imwrite', c_int, c_char_p, c_void_p, c_int, c_int, c_int, c_void_p)
# ABI 4: the error analysis and the HTML report (ravlt.analysis)
_sig('rv_py_coco_analyze', c_int, P(c_void_p), c_void_p, c_void_p, c_int, c_void_p, c_char_p, c_char_p, c_char_p,
     c_dbl, c_dbl, c_int, c_int, c_void_p)
_sig('rv_py_seg_analysis_new', c_int, P(c_void_p), c_int, pp_char, c_int, c_int, c_void_p)
_sig('rv_py_seg_analysis_add', c_int, c_void_p, c_char_p, c_void_p, c_void_p, c_void_p, c_int, c_int, c_void_p)
_sig('rv_py_seg_analysis_add_dirs', c_int, c_void_p, c_char_p, c_char_p, c_char_p, c_int, P(c_size), c_void_p)
_sig('rv_py_seg_analysis_json', c_int, c_void_p, P(c_void_p), c_void_p)
_sig('rv_py_seg_analysis_free', None, c_void_p)
_sig('rv_py_write_report', c_int, c_char_p, pp_char, c_size, c_char_p, c_void_p)
_sig('rv_ctx_set_log', None, c_void_p, c_void_p, c_void_p)
_sig('rv_ctx_set_log_level', None, c_void_p, c_int)
_sig('rv_py_detect_tiled', c_int, c_void_p, P(c_void_p), c_void_p, c_int, c_int, c_int, c_int, c_dbl, c_dbl,
     c_int, ctypes.c_float, c_int, c_int, ctypes.c_float, c_void_p)


RV_ERR_CANCELLED = 11  # rv_status of <ravlt/core.h>


def interruptible(fn):
    """fn(..., ctx), a long foreign call, made interruptible by Ctrl-C.

    Python runs signal handlers in the main thread only, between bytecodes: while the main
    thread waits in a foreign call, Ctrl-C would be seen when the call returns (seconds later
    for an aug-test segmentation). Called from the main thread, fn runs in a helper thread
    while the main thread waits in short slices; an exception there (KeyboardInterrupt from
    Ctrl-C, or whatever a handler raises) cancels the call through its context
    (rv_ctx_cancel: the library stops at its next check between layers, RV_ERR_CANCELLED),
    waits for the helper to return (the context and the arrays stay alive until then; a
    further Ctrl-C meanwhile does not abandon it), then propagates. The model stays usable.
    From other threads (which receive no signals) fn is called directly. The helper is a
    fresh thread: its OpenMP settings are the defaults, as in any thread of the process."""
    def call(*args):
        if threading.current_thread() is not threading.main_thread():
            return fn(*args)
        box = []
        done = threading.Event()
        lock = threading.Lock()
        state = ['new']  # -> 'running' -> done, or -> 'abandoned' (never started: nothing to wait for)

        def run():
            try:
                with lock:
                    if state[0] == 'abandoned':
                        return
                    state[0] = 'running'
                box.append((True, fn(*args)))
            except BaseException as e:  # ctypes argument errors: raised in the caller
                box.append((False, e))
            finally:
                done.set()

        # (_thread and an Event, not threading.Thread and join: a Ctrl-C inside Thread.start()
        # or Python 3.11's Thread.join() can leave a running thread marked as stopped)
        try:
            _thread.start_new_thread(run, ())
            while not done.wait(0.05):
                pass
        except BaseException:
            _stop(lock, state, done, args[-1])
            raise
        ok, value = box[0]
        if not ok:
            raise value
        return value
    call.__name__ = getattr(fn, '__name__', 'call')
    call.__doc__ = fn.__doc__
    return call


def _stop(lock, state, done, ctx):
    """After an exception in the waiting caller: a helper that has not started never will
    (abandoned); one that has is cancelled and waited for, whatever else arrives meanwhile."""
    while True:
        try:
            with lock:
                if state[0] == 'new':
                    state[0] = 'abandoned'
                    return
            break
        except BaseException:
            continue
    _cancel_fn()(ctx)
    while True:
        try:
            if done.wait(0.05):
                return
        except BaseException:
            pass


# The inference entry points (their last argument is the context): lib.rv_py_segment and
# lib.rv_py_detect are these wrapped by interruptible, where the library has rv_ctx_cancel (one
# older than the package runs them directly, not interruptible).
_INTERRUPTIBLE = ('rv_py_segment', 'rv_py_detect', 'rv_py_detect_tiled')


def _cancel_fn():
    f = getattr(_real, 'rv_ctx_cancel', None)
    if f is not None:
        f.restype = None
        f.argtypes = [c_void_p]
    return f


def enc(s):
    """str / bytes / os.PathLike -> bytes for a const char * argument (a NUL inside is a
    ValueError, as open() raises, not a silently shortened name)."""
    b = s if isinstance(s, bytes) else os.fsencode(s)
    if b'\0' in b:
        raise ArgumentError('%r: embedded null byte' % (s,))
    return b


# The library's log hook -> Python's warnings: the C callback only collects (level, message)
# per context; Ctx.__exit__ issues them in the calling thread, after the foreign call, so
# `warnings.simplefilter('error')` turns them into exceptions there and stacklevel points at
# the caller's code. Levels below RV_LOG_WARN are not delivered (rv_ctx_set_log_level).
_LOG_FN = ctypes.CFUNCTYPE(None, c_void_p, c_int, c_char_p)
_pending = {}  # rv_ctx address -> [message, ...]
_pending_lock = threading.Lock()


def _on_log(user, level, msg):
    with _pending_lock:
        _pending.setdefault(user, []).append(msg.decode('utf-8', 'replace') if msg else '')


_log_cb = _LOG_FN(_on_log)  # kept alive as long as the module


_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _take_warnings(ctx):
    with _pending_lock:
        return _pending.pop(ctx, None)


def _warn(msgs, failing):
    """Issue the library's warnings at the first frame outside the package."""
    level, f = 2, sys._getframe(1)  # stacklevel 2: the caller of _warn
    while f is not None and f.f_code.co_filename.startswith(_PKG_DIR):
        level, f = level + 1, f.f_back
    for m in msgs:
        try:
            warnings.warn(m, RavltWarning, stacklevel=level)
        except Exception:
            if not failing:  # an error filter: raise, unless the call's own error is on its way
                raise


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
        lib.rv_ctx_set_log(self.ctx, _log_cb, self.ctx)
        lib.rv_ctx_set_log_level(self.ctx, 2)  # RV_LOG_WARN

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        ctx, self.ctx = self.ctx, None
        msgs = _take_warnings(ctx)  # before the free: a new context may reuse the address
        lib.rv_py_ctx_free(ctx)
        if msgs:
            _warn(msgs, exc[0] is not None)

    def check(self, status):
        if status != 0:
            msg = lib.rv_py_errmsg(self.ctx)
            msg = msg.decode('utf-8', 'replace') if msg else 'ravlt: error %d' % status
            raise error_class(status, msg)(msg)


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
