"""pycocotools.cocoeval.COCOeval over libravlt's evaluator (eval/cocoeval.h): the same Params,
the same printed summary, stats and eval arrays, bit for bit (bbox and segm)."""
import copy
import ctypes
import datetime
import sys
import time

import numpy as np

from .. import _lib
from .._lib import lib, Ctx, Error
from .coco import IOU_BBOX, IOU_SEGM, _Handle

__all__ = ['COCOeval', 'Params']


class Params:
    """pycocotools' Params (detection: bbox / segm)."""

    def setDetParams(self):
        self.imgIds = []
        self.catIds = []
        self.iouThrs = np.linspace(.5, 0.95, int(np.round((0.95 - .5) / .05)) + 1, endpoint=True)
        self.recThrs = np.linspace(.0, 1.00, int(np.round((1.00 - .0) / .01)) + 1, endpoint=True)
        self.maxDets = [1, 10, 100]
        self.areaRng = [[0 ** 2, 1e5 ** 2], [0 ** 2, 32 ** 2], [32 ** 2, 96 ** 2], [96 ** 2, 1e5 ** 2]]
        self.areaRngLbl = ['all', 'small', 'medium', 'large']
        self.useCats = 1

    def __init__(self, iouType='segm'):
        if iouType in ('segm', 'bbox'):
            self.setDetParams()
        else:
            raise Error('iouType %s not supported (ravlt.cocotools evaluates bbox and segm)' % iouType)
        self.iouType = iouType
        self.useSegm = None


class COCOeval:
    def __init__(self, cocoGt=None, cocoDt=None, iouType='segm'):
        if not iouType:
            print('iouType not specified. use default iouType segm')
        self.cocoGt = cocoGt
        self.cocoDt = cocoDt
        self.evalImgs = []  # per-image records are not materialised (the library keeps them)
        self.eval = {}
        self._gts = {}
        self._dts = {}
        self.params = Params(iouType=iouType)
        self._paramsEval = {}
        self.stats = []
        self.ious = {}
        self._ev = None
        if cocoGt is not None:
            self.params.imgIds = sorted(cocoGt.getImgIds())
            self.params.catIds = sorted(cocoGt.getCatIds())

    def evaluate(self):
        """Per image and category: IoUs, matching and ignore flags (in the library)."""
        tic = time.time()
        print('Running per image evaluation...')
        p = self.params
        if p.useSegm is not None:
            p.iouType = 'segm' if p.useSegm == 1 else 'bbox'
            print('useSegm (deprecated) is not None. Running {} evaluation'.format(p.iouType))
        print('Evaluate annotation type *{}*'.format(p.iouType))
        if p.iouType not in ('bbox', 'segm'):
            raise Error('iouType %s not supported (ravlt.cocotools evaluates bbox and segm)' % p.iouType)
        p.imgIds = list(np.unique(p.imgIds))
        if p.useCats:
            p.catIds = list(np.unique(p.catIds))
        p.maxDets = sorted(p.maxDets)
        self.params = p
        t = IOU_SEGM if p.iouType == 'segm' else IOU_BBOX
        gt = self.cocoGt._gt_handle(t == IOU_SEGM)
        if self.cocoDt._res_of is None:
            raise Error('COCOeval: cocoDt must come from cocoGt.loadRes(...)')
        dt = self.cocoDt._res_handle(t)
        imgs = _lib.as_i64(p.imgIds)
        cats = _lib.as_i64(p.catIds)
        iou = _lib.as_f64(p.iouThrs)
        rec = _lib.as_f64(p.recThrs)
        md = np.ascontiguousarray(np.asarray(p.maxDets, dtype=np.int32).reshape(-1))
        rng = _lib.as_f64(p.areaRng)
        if rng.size != 2 * len(p.areaRngLbl):
            raise Error('COCOeval: areaRng and areaRngLbl must have one entry per area range')
        lbl = _lib.str_array([str(s).encode('utf-8') for s in p.areaRngLbl])
        ev = _lib.c_void_p()
        self._ev = None
        with Ctx() as c:
            c.check(lib.rv_py_eval_run(ctypes.byref(ev), gt, dt, t, _lib.ptr(imgs), imgs.size, _lib.ptr(cats),
                                       cats.size, _lib.ptr(iou), iou.size, _lib.ptr(rec), rec.size, _lib.ptr(md),
                                       md.size, _lib.ptr(rng), lbl, len(p.areaRngLbl), int(bool(p.useCats)), 0,
                                       c.ctx))
        self._ev = _Handle(ev.value, lib.rv_py_eval_free)
        self._ev_inputs = (self.cocoGt, self.cocoDt)  # the arrays the evaluation reads stay alive
        self._paramsEval = copy.deepcopy(self.params)
        print('DONE (t={:0.2f}s).'.format(time.time() - tic))

    def accumulate(self, p=None):
        """precision [T,R,K,A,M], recall [T,K,A,M] and scores [T,R,K,A,M] in self.eval."""
        print('Accumulating evaluation results...')
        tic = time.time()
        if self._ev is None:
            print('Please run evaluate() first')
            raise Error('accumulate: run evaluate() first')
        if p is not None and p is not self.params:
            raise Error('accumulate(p): only the evaluated params are supported; set COCOeval.params '
                        'and run evaluate() again')
        p = self.params
        p.catIds = p.catIds if p.useCats == 1 else [-1]
        with Ctx() as c:
            c.check(lib.rv_py_eval_accumulate(self._ev.p, c.ctx))
        d = (_lib.c_size * 5)()
        lib.rv_py_eval_dims(self._ev.p, d)
        T, R, K, A, M = (int(v) for v in d)
        precision = np.empty((T, R, K, A, M))
        recall = np.empty((T, K, A, M))
        scores = np.empty((T, R, K, A, M))
        lib.rv_py_eval_copy(self._ev.p, _lib.ptr(precision), _lib.ptr(recall), _lib.ptr(scores))
        self.eval = {
            'params': p,
            'counts': [T, R, K, A, M],
            'date': datetime.datetime.now().strftime('%Y-%m-%d %H:%M:%S'),
            'precision': precision,
            'recall': recall,
            'scores': scores,
        }
        print('DONE (t={:0.2f}s).'.format(time.time() - tic))

    def summarize(self):
        """Prints pycocotools' 12 lines and sets self.stats."""
        if not self.eval:
            raise Exception('Please run accumulate() first')
        stats = np.zeros(12)
        lib.rv_py_eval_summarize(self._ev.p, _lib.ptr(stats))
        n = lib.rv_py_eval_summary_text(self._ev.p, None, 0)
        buf = ctypes.create_string_buffer(n + 1)
        lib.rv_py_eval_summary_text(self._ev.p, buf, n + 1)
        sys.stdout.write(buf.value.decode('ascii'))
        self.stats = stats

    def __str__(self):
        self.summarize()
        return ''
