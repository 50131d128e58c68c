"""ravlt.cocotools against pycocotools 2.0.11 on every case of python/tests/cocotools_cases.py
(tests/fixtures/cocotools/goldens.json, made by tools/gen_cocotools_goldens.py outside the
tests): mask API (RLE edge cases included), bbox / segm / keypoints evaluation with every
record pycocotools keeps (evalImgs, ious, accumulate(p), evaluateImg, computeIoU / computeOks),
string image ids, loadRes branches and the exceptions raised.

Tolerance: none (values and array dtypes identical), except the keypoint cases, whose OKS
go through numpy's exp, which may differ in the last bit between machines (SIMD or libm):
there OKS values and the numbers derived from them agree to 1e-12 relative."""
import json
import math

import numpy as np
import pytest

from ravlt.cocotools import COCO, COCOeval, Params, mask
from ravlt.cocotools import mask as _mask

import cocotools_cases as cases
from conftest import fx

GOLD = json.load(open(fx('cocotools', 'goldens.json')))['outputs']
OURS = None
EXACT = bool(__import__('os').environ.get('RAVLT_GOLDEN_EXACT'))

# pycocotools raises where the input has one obvious meaning; ravlt computes it (python/README.md)
COMPUTES_WHERE_PYCOCOTOOLS_RAISES = {'frPyObjects_poly'}


def ours():
    global OURS
    if OURS is None:
        OURS = cases.run_all(COCO, COCOeval, Params, mask, _mask, cases.make_inputs())
    return OURS


def same(a, b, rel, path=''):
    """Recursive equality of two _j forms; floats within rel (0: bit for bit, NaN == NaN)."""
    a, b = cases.unpack(a), cases.unpack(b)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, '%s: shape %s != %s' % (path, a.shape, b.shape)
        assert a.dtype.kind == b.dtype.kind or a.size == 0, '%s: dtype %s != %s' % (path, a.dtype, b.dtype)
        if a.dtype.kind == 'f' and rel:
            assert np.allclose(a, b, rtol=rel, atol=rel, equal_nan=True), path
        elif a.dtype.kind == 'f':
            assert np.array_equal(a, b, equal_nan=True), '%s: %s != %s' % (path, a.ravel()[:8], b.ravel()[:8])
        else:
            assert np.array_equal(a, b), path
        return
    if isinstance(a, dict) and isinstance(b, dict):
        assert sorted(a) == sorted(b), '%s: keys %s != %s' % (path, sorted(a), sorted(b))
        for k in a:
            same(a[k], b[k], rel, path + '.' + k)
        return
    if isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), '%s: length %d != %d' % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, rel, '%s[%d]' % (path, i))
        return
    if isinstance(a, float) or isinstance(b, float):
        assert isinstance(a, (int, float)) and isinstance(b, (int, float)), '%s: %r != %r' % (path, a, b)
        if math.isnan(a) and math.isnan(b):
            return
        if rel:
            assert math.isclose(a, b, rel_tol=rel, abs_tol=rel), '%s: %r != %r' % (path, a, b)
        else:
            assert a == b, '%s: %r != %r' % (path, a, b)
        return
    assert a == b, '%s: %r != %r' % (path, a, b)


@pytest.mark.parametrize('name', sorted(GOLD))
def test_golden(name):
    g, o = GOLD[name], ours()[name]
    if 'raises' in g:
        if name in COMPUTES_WHERE_PYCOCOTOOLS_RAISES:
            assert 'value' in o, o
            return
        assert 'raises' in o, 'pycocotools raises %s, ravlt returned %r' % (g['raises'], o.get('value'))
        assert set(g['raises']) <= set(o['raises']), 'pycocotools raises %s, ravlt %s' % (g['raises'], o['raises'])
        return
    assert 'value' in o, 'pycocotools returns a value, ravlt raises %s' % (o.get('raises'),)
    same(o['value'], g['value'], 0 if EXACT else (1e-12 if 'kpts' in name else 0), name)


def test_goldens_cover_the_issue():
    """The cases the issue names are in the goldens (and not as errors)."""
    for k in ('toBbox_issue', 'toBbox_zero_runs', 'uc_short', 'uc_long', 'eval_kpts', 'eval_kpts_sigmas',
              'eval_bbox_string_ids', 'eval_segm', 'eval_bbox_badrle'):
        assert 'value' in GOLD[k], k
    for k in ('encode_float', 'encode_int256', 'decode_long'):
        assert 'ValueError' in GOLD[k]['raises']
