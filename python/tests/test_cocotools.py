"""ravlt.cocotools against pycocotools' golden outputs (tests/fixtures/coco_eval: stats and the
printed summary of pycocotools 8c9bcc3 on every case, bbox and segm). Tolerance: 1e-12 on the
stats (the evaluator is bit-identical; the test also counts exact matches and requires all)."""
import contextlib
import copy
import io
import json
import os

import numpy as np
import pytest

import ravlt
from ravlt.cocotools import COCO, COCOeval
from ravlt.cocotools import mask as maskUtils

from conftest import fx

CASES = sorted(d for d in os.listdir(fx('coco_eval')) if os.path.isfile(fx('coco_eval', d, 'expected.json')))


def test_cases_found():
    assert len(CASES) >= 6


def run(gt, dt, iou, setup=None):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        ev = COCOeval(gt, dt, iou)
        if setup:
            setup(ev.params)
        ev.evaluate()
        ev.accumulate()
    summ = io.StringIO()
    with contextlib.redirect_stdout(summ):
        ev.summarize()
    return ev, summ.getvalue()


def quiet(fn, *a):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*a)


@pytest.mark.parametrize('case', CASES)
@pytest.mark.parametrize('iou', ['bbox', 'segm'])
def test_fixture_file(case, iou):
    d = fx('coco_eval', case)
    exp = json.load(open(os.path.join(d, 'expected.json')))[iou]
    gt = quiet(COCO, os.path.join(d, 'gt.json'))
    dt = quiet(gt.loadRes, os.path.join(d, 'dt_%s.json' % iou))
    ev, text = run(gt, dt, iou)
    assert np.max(np.abs(np.asarray(ev.stats) - exp['stats'])) <= 1e-12
    assert [float(x).hex() for x in ev.stats] == [float.fromhex(h).hex() for h in exp['stats_hex']]  # bit-identical
    assert text == exp['summary'] if exp['summary'].endswith('\n') else text == exp['summary'] + '\n'
    # pycocotools' shapes, and the fixtures' per-category AP from eval['precision']
    T, R, K, A, M = ev.eval['counts']
    assert ev.eval['precision'].shape == (T, R, K, A, M) == (10, 101, len(ev.params.catIds), 4, 3)
    assert ev.eval['recall'].shape == (T, K, A, M)
    assert ev.eval['scores'].shape == (T, R, K, A, M)
    for k, pc in enumerate(exp['per_category_ap']):
        assert ev.params.catIds[k] == pc['category_id']
        p = ev.eval['precision'][:, :, k, 0, -1]
        p = p[p > -1]
        assert (float(np.mean(p)) if p.size else -1.0) == pc['ap']
    # scores: -1 exactly where precision is -1, scores in [0, 1] elsewhere (fixture scores are)
    undef = ev.eval['precision'] == -1
    assert np.array_equal(undef, ev.eval['scores'] == -1)
    s = ev.eval['scores'][~undef]
    assert s.size and s.min() >= 0 and s.max() <= 1


@pytest.mark.parametrize('case', CASES)
def test_fixture_from_python_objects(case):
    """COCO(dict), loadRes(list of dicts) and loadRes(N x 7 array) give the file's numbers."""
    d = fx('coco_eval', case)
    exp = json.load(open(os.path.join(d, 'expected.json')))
    gt = quiet(COCO, json.load(open(os.path.join(d, 'gt.json'))))
    for iou in ('bbox', 'segm'):
        dets = json.load(open(os.path.join(d, 'dt_%s.json' % iou)))
        if iou == 'segm':  # counts as bytes, as pycocotools.mask.encode returns them
            for r in dets:
                if isinstance(r.get('segmentation'), dict) and isinstance(r['segmentation']['counts'], str):
                    r['segmentation']['counts'] = r['segmentation']['counts'].encode()
        ev, _ = run(gt, quiet(gt.loadRes, dets), iou)
        assert list(ev.stats) == exp[iou]['stats']
    dets = json.load(open(os.path.join(d, 'dt_bbox.json')))
    arr = np.array([[r['image_id']] + list(r['bbox']) + [r['score'], r['category_id']] for r in dets])
    ev, _ = run(gt, quiet(gt.loadRes, arr), 'bbox')
    assert list(ev.stats) == exp['bbox']['stats']


def test_index_api():
    d = fx('coco_eval', '06_mixed')
    raw = json.load(open(os.path.join(d, 'gt.json')))
    gt = quiet(COCO, os.path.join(d, 'gt.json'))
    assert gt.getImgIds() == list(dict.fromkeys(i['id'] for i in raw['images']))
    assert gt.getCatIds() == [c['id'] for c in raw['categories']]
    assert gt.getAnnIds() == [a['id'] for a in raw['annotations']]
    img = raw['images'][1]['id']
    cat = raw['categories'][0]['id']
    assert gt.getAnnIds(imgIds=[img]) == [a['id'] for a in raw['annotations'] if a['image_id'] == img]
    assert gt.getAnnIds(imgIds=img, catIds=[cat], iscrowd=0) == \
        [a['id'] for a in raw['annotations'] if a['image_id'] == img and a['category_id'] == cat and not a['iscrowd']]
    assert sorted(gt.getImgIds(catIds=[cat])) == sorted({a['image_id'] for a in raw['annotations']
                                                        if a['category_id'] == cat})
    ids = gt.getAnnIds()[:3]
    assert gt.loadAnns(ids) == [a for a in raw['annotations'] if a['id'] in ids][:3]
    assert gt.loadImgs(img) == [raw['images'][1]]
    assert gt.loadCats([cat]) == [raw['categories'][0]]
    assert set(gt.imgs) == {i['id'] for i in raw['images']} and set(gt.cats) == {c['id'] for c in raw['categories']}
    assert len(gt.anns) == len(raw['annotations']) and gt.dataset == raw
    # annToRLE / annToMask: polygons merged, as pycocotools
    a = raw['annotations'][0]
    rle = gt.annToRLE(a)
    im = gt.imgs[a['image_id']]
    assert rle['size'] == [im['height'], im['width']]
    assert gt.annToMask(a).sum() == maskUtils.area(rle)


def test_loadres_dataset_view():
    d = fx('coco_eval', '02_basic')
    gt = quiet(COCO, os.path.join(d, 'gt.json'))
    raw = json.load(open(os.path.join(d, 'dt_bbox.json')))
    dt = quiet(gt.loadRes, os.path.join(d, 'dt_bbox.json'))
    anns = dt.dataset['annotations']
    assert len(anns) == len(raw)
    for i, (a, r) in enumerate(zip(anns, raw)):
        assert a['id'] == i + 1 and a['iscrowd'] == 0 and a['area'] == r['bbox'][2] * r['bbox'][3]
        assert a['segmentation'][0][:2] == [r['bbox'][0], r['bbox'][1]]
    assert dt.getImgIds() == gt.getImgIds()
    assert dt.loadAnns([1])[0]['score'] == raw[0]['score']


def test_params_variants():
    """maxDets given unsorted (evaluate sorts them), a subset of images and categories, custom
    IoU thresholds: shapes follow the params, and evaluating again is deterministic."""
    d = fx('coco_eval', '06_mixed')
    gt = quiet(COCO, os.path.join(d, 'gt.json'))
    dt = quiet(gt.loadRes, os.path.join(d, 'dt_bbox.json'))

    def setup(p):
        p.maxDets = [100, 1, 10]
        p.imgIds = p.imgIds[:3]
        p.catIds = p.catIds[1:]
        p.iouThrs = np.array([0.5, 0.75])
    ev, text = run(gt, dt, 'bbox', setup)
    assert ev.params.maxDets == [1, 10, 100]
    assert ev.eval['precision'].shape == (2, 101, len(gt.getCatIds()) - 1, 4, 3)
    assert 'IoU=0.50:0.75' in text
    ev2, text2 = run(gt, dt, 'bbox', setup)
    assert np.array_equal(ev.eval['precision'], ev2.eval['precision']) and text == text2


def test_use_cats_zero():
    """useCats=0 pools the categories (K = 1). With one category in the data it equals useCats=1;
    with several, it equals evaluating the data relabelled to one category (same order)."""
    d = fx('coco_eval', '02_basic')
    raw = json.load(open(os.path.join(d, 'gt.json')))
    dets = json.load(open(os.path.join(d, 'dt_bbox.json')))
    gt = quiet(COCO, copy.deepcopy(raw))
    ev0, _ = run(gt, quiet(gt.loadRes, copy.deepcopy(dets)), 'bbox', lambda p: setattr(p, 'useCats', 0))
    assert ev0.eval['precision'].shape[2] == 1 and ev0.params.catIds == [-1]
    one = copy.deepcopy(raw)
    first = one['categories'][0]['id']
    order = {c['id']: k for k, c in enumerate(sorted(one['categories'], key=lambda c: c['id']))}
    one['annotations'] = sorted(one['annotations'], key=lambda a: order[a['category_id']])  # stable
    for a in one['annotations']:
        a['category_id'] = first
    one['categories'] = one['categories'][:1]
    d1 = sorted(copy.deepcopy(dets), key=lambda r: order[r['category_id']])
    for r in d1:
        r['category_id'] = first
    gt1 = quiet(COCO, one)
    ev1, _ = run(gt1, quiet(gt1.loadRes, d1), 'bbox')
    assert list(ev0.stats) == list(ev1.stats)
    assert np.array_equal(ev0.eval['precision'], ev1.eval['precision'])


def test_errors_carry_library_message(tmp_path):
    d = fx('coco_eval', '01_tiny')
    with pytest.raises(ravlt.Error, match='no_such.json'):
        COCO(str(tmp_path / 'no_such.json'))
    gt = quiet(COCO, os.path.join(d, 'gt.json'))
    bad = [{'image_id': 987654321, 'category_id': 1, 'bbox': [1, 2, 3, 4], 'score': 0.5}]
    with pytest.raises(ravlt.Error, match='image_id 987654321 is not in the ground truth'):
        quiet(gt.loadRes, bad)
    p = tmp_path / 'broken.json'
    p.write_text('[{"image_id": 1, "bbox": [1, 2, 3]')
    with pytest.raises(ravlt.Error, match='broken.json'):
        quiet(gt.loadRes, str(p))
    assert issubclass(ravlt.Error, Exception)
