"""copy.copy, copy.deepcopy and pickle of ravlt.cocotools' COCO and COCOeval, as pycocotools
2.0.11's plain Python objects allow (multiprocessing evaluation pickles them; tools deep-copy a
COCO before loadRes). The copies must hold the same content (the dataset and the evaluation:
stats against pycocotools' goldens in tests/fixtures/coco_eval, bit for bit), be independent of
the original, and nothing may print "Exception ignored" or warn."""
import contextlib
import copy
import io
import json
import os
import pickle
import shutil
import sys
import warnings

import numpy as np
import pytest

from ravlt.cocotools import COCO, COCOeval

from conftest import fx

CASE = fx('coco_eval', '06_mixed')


def quiet(fn, *a):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*a)


def expected(iou):
    with open(os.path.join(CASE, 'expected.json')) as f:
        return [float.fromhex(h) for h in json.load(f)[iou]['stats_hex']]


def evaluate(gt, dt, iou):
    ev = COCOeval(gt, dt, iou)
    with contextlib.redirect_stdout(io.StringIO()):
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return ev


@pytest.fixture
def strict():
    """Fails on any warning and on any exception Python reports as ignored (__del__)."""
    seen = []
    old = sys.unraisablehook
    sys.unraisablehook = lambda u: seen.append(u)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('error')
            yield
    finally:
        sys.unraisablehook = old
    assert not seen, 'exceptions ignored: %r' % ([(u.exc_value, u.object) for u in seen],)


@pytest.mark.parametrize('how', ['deepcopy', 'pickle', 'copy'])
def test_gt_copy_same_content(how, strict):
    gt = quiet(COCO, os.path.join(CASE, 'gt.json'))
    cp = {'deepcopy': copy.deepcopy, 'copy': copy.copy,
          'pickle': lambda o: pickle.loads(pickle.dumps(o, protocol=pickle.HIGHEST_PROTOCOL))}[how](gt)
    assert type(cp) is COCO and cp is not gt
    with open(os.path.join(CASE, 'gt.json')) as f:
        ref = json.load(f)
    assert cp.dataset == ref
    assert cp.getImgIds() == gt.getImgIds() and cp.getCatIds() == gt.getCatIds()
    assert cp.getAnnIds() == gt.getAnnIds()
    assert cp.loadAnns(cp.getAnnIds()[:3]) == gt.loadAnns(gt.getAnnIds()[:3])
    for iou in ('bbox', 'segm'):  # the copy evaluates (its library objects rebuilt) as pycocotools
        dt = quiet(cp.loadRes, os.path.join(CASE, 'dt_%s.json' % iou))
        assert [float(x).hex() for x in evaluate(cp, dt, iou).stats] == [x.hex() for x in expected(iou)]


def test_deepcopy_is_independent(strict):
    gt = quiet(COCO, os.path.join(CASE, 'gt.json'))
    n = len(gt.dataset['annotations'])
    cp = copy.deepcopy(gt)
    cp.dataset['annotations'].pop()
    cp.anns.clear()
    assert len(gt.dataset['annotations']) == n and len(gt.anns) == n
    dt = quiet(gt.loadRes, os.path.join(CASE, 'dt_bbox.json'))
    assert [float(x).hex() for x in evaluate(gt, dt, 'bbox').stats] == [x.hex() for x in expected('bbox')]


def test_pickle_carries_the_files_content(tmp_path, strict):
    """A pickled COCO (and its results) does not need the files any more (pycocotools pickles
    the data it read)."""
    for name in ('gt.json', 'dt_segm.json'):
        shutil.copy(os.path.join(CASE, name), tmp_path / name)
    gt = quiet(COCO, str(tmp_path / 'gt.json'))
    dt = quiet(gt.loadRes, str(tmp_path / 'dt_segm.json'))
    blob = pickle.dumps((gt, dt))
    for name in ('gt.json', 'dt_segm.json'):
        os.remove(tmp_path / name)
    gt2, dt2 = pickle.loads(blob)
    assert dt2._res_of is gt2  # the results' ground truth is the same object, as in pycocotools
    assert [float(x).hex() for x in evaluate(gt2, dt2, 'segm').stats] == [x.hex() for x in expected('segm')]
    ref = quiet(quiet(COCO, os.path.join(CASE, 'gt.json')).loadRes, os.path.join(CASE, 'dt_segm.json'))
    assert dt2.dataset['annotations'] == ref.dataset['annotations']
    assert gt2.dataset == ref._res_of.dataset


@pytest.mark.parametrize('how', ['deepcopy', 'pickle'])
def test_copy_of_a_gt_the_library_refused(tmp_path, how, strict):
    """A ground truth without 'bbox' (pycocotools loads it; its segm evaluation reads no box):
    a copy made after a segm evaluation evaluates segm again, and bbox still raises KeyError."""
    with open(os.path.join(CASE, 'gt.json')) as f:
        ds = json.load(f)
    for a in ds['annotations']:
        a.pop('bbox', None)
    (tmp_path / 'gt.json').write_text(json.dumps(ds))
    gt = quiet(COCO, str(tmp_path / 'gt.json'))
    dt = quiet(gt.loadRes, os.path.join(CASE, 'dt_segm.json'))
    first = [float(x).hex() for x in evaluate(gt, dt, 'segm').stats]
    cp = {'deepcopy': copy.deepcopy, 'pickle': lambda o: pickle.loads(pickle.dumps(o))}[how](gt)
    dt2 = quiet(cp.loadRes, os.path.join(CASE, 'dt_segm.json'))
    assert [float(x).hex() for x in evaluate(cp, dt2, 'segm').stats] == first
    dtb = quiet(cp.loadRes, os.path.join(CASE, 'dt_bbox.json'))
    with pytest.raises(KeyError):
        evaluate(cp, dtb, 'bbox')


@pytest.mark.parametrize('iou', ['bbox', 'segm'])
def test_cocoeval_pickle_and_deepcopy(iou, strict):
    gt = quiet(COCO, os.path.join(CASE, 'gt.json'))
    dt = quiet(gt.loadRes, os.path.join(CASE, 'dt_%s.json' % iou))
    ev = evaluate(gt, dt, iou)
    for cp in (pickle.loads(pickle.dumps(ev)), copy.deepcopy(ev)):
        assert [float(x).hex() for x in cp.stats] == [x.hex() for x in expected(iou)]
        for k in ('precision', 'recall', 'scores'):
            assert np.array_equal(cp.eval[k], ev.eval[k])
        # pycocotools' records travel: evalImgs, ious, _gts / _dts
        assert len(cp.evalImgs) == len(ev.evalImgs)
        a = [e for e in ev.evalImgs if e is not None]
        b = [e for e in cp.evalImgs if e is not None]
        assert len(a) == len(b) > 0
        for x, y in zip(a, b):
            assert x['dtIds'] == y['dtIds'] and x['gtIds'] == y['gtIds']
            assert np.array_equal(x['dtMatches'], y['dtMatches']) and np.array_equal(x['gtIgnore'], y['gtIgnore'])
        assert sorted(cp.ious) == sorted(ev.ious)
        assert sum(len(v) for v in cp._gts.values()) == sum(len(v) for v in ev._gts.values()) > 0
        # accumulate again on the copy (from evalImgs, as pycocotools does): the same arrays
        with contextlib.redirect_stdout(io.StringIO()):
            cp.accumulate()
            cp.summarize()
        for k in ('precision', 'recall', 'scores'):
            assert np.array_equal(cp.eval[k], ev.eval[k])
        assert [float(x).hex() for x in cp.stats] == [x.hex() for x in expected(iou)]
    # the original still works from the library
    with contextlib.redirect_stdout(io.StringIO()):
        ev.accumulate()
        ev.summarize()
    assert [float(x).hex() for x in ev.stats] == [x.hex() for x in expected(iou)]


def test_cocoeval_copy_before_evaluate(strict):
    gt = quiet(COCO, os.path.join(CASE, 'gt.json'))
    dt = quiet(gt.loadRes, os.path.join(CASE, 'dt_bbox.json'))
    ev = COCOeval(gt, dt, 'bbox')
    cp = pickle.loads(pickle.dumps(ev))
    assert cp.params.imgIds == ev.params.imgIds and cp.params.catIds == ev.params.catIds
    with contextlib.redirect_stdout(io.StringIO()):
        cp.evaluate()
        cp.accumulate()
        cp.summarize()
    assert [float(x).hex() for x in cp.stats] == [x.hex() for x in expected('bbox')]
