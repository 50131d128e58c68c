"""ravlt.analysis: the dicts of the JSON contract from the library, TIDE against the goldens of
dbolya/tide 1.0.1's own code (tests/data/analysis/tide, within 0.01 AP points), the PR array equal
to the evaluator's precision array, the segmentation confusion matrix on hand-made maps, and
write_report."""
import json
import os

import numpy as np
import pytest

from ravlt import analysis
from ravlt.cocotools import COCO, COCOeval

from conftest import ROOT

TIDE = os.path.join(ROOT, 'tests', 'data', 'analysis', 'tide')


@pytest.mark.parametrize('case', sorted(os.listdir(TIDE)))
@pytest.mark.parametrize('iou', ['bbox', 'segm'])
def test_coco_tide_goldens(case, iou):
    d = os.path.join(TIDE, case)
    a = analysis.coco(os.path.join(d, 'gt.json'), os.path.join(d, 'dt_%s.json' % iou), iou)
    want = json.load(open(os.path.join(d, 'expected.json')))[iou]
    assert a['iou_type'] == iou
    assert abs(a['tide']['ap50'] - want['ap']) <= 0.01
    for k, v in want['main'].items():
        assert abs(a['tide']['main'][k] - v) <= 0.01, k
        assert a['tide']['counts'][k] == want['counts'][k], k
    for k, v in want['special'].items():
        assert abs(a['tide']['special'][k] - v) <= 0.01, k


def test_coco_contract_and_pr():
    d = os.path.join(TIDE, '01_mixed')
    import contextlib, io
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(os.path.join(d, 'gt.json'))
        dt = gt.loadRes(os.path.join(d, 'dt_bbox.json'))
        ev = COCOeval(gt, dt, 'bbox')
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    a = analysis.coco(gt, dt, 'bbox', compare=os.path.join(d, 'dt_bbox.json'))
    for k in ('iou_type', 'stats', 'per_category', 'pr', 'tide', 'confusion', 'f1', 'worst_images', 'compare'):
        assert k in a, k
    assert a['stats'] == list(ev.stats)
    prec = np.array(a['pr']['precision'], dtype=np.float64)
    assert prec.shape == (10, 101, len(a['per_category']))
    assert np.array_equal(prec, ev.eval['precision'][:, :, :, 0, -1])
    pc = a['per_category'][0]
    assert set(pc) >= {'id', 'name', 'ap', 'ap50', 'ap75', 'ap_small', 'ap_medium', 'ap_large', 'ar100'}
    conf = a['confusion']
    assert conf['labels'][-1] == 'background' and len(conf['counts']) == len(conf['labels'])
    assert all(len(r) == len(conf['labels']) for r in conf['counts'])
    assert set(a['f1']) >= {'overall', 'per_category', 'macro'}
    # the macro variant: faster-coco-eval's extended metrics from the evaluator's arrays
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        p = ev.eval['precision'][0, :, :, 0, -1].astype(float)
        p[p < 0] = np.nan
        r = ev.params.recThrs[:, None]
        f1 = np.nanmean(2 * p * r / (p + r), axis=1)
        j = int(f1.argmax())
        m = a['f1']['macro']
        assert m['recall'] == ev.params.recThrs[j]
        assert abs(m['f1'] - f1[j]) < 1e-12 and abs(m['precision'] - np.nanmean(p[j])) < 1e-12
        sc = ev.eval['scores'][0, j, :, 0, -1]
        assert all((x is None) == np.isnan(y) for x, y in zip(m['per_category_precision'], p[j]))
        assert all(x is None or x == y for x, y in zip(m['per_category_score'], sc))
    assert all(set(w) >= {'image_id', 'fp', 'fn'} for w in a['worst_images'])
    assert all(x['delta'] in (0, None) for x in a['compare']['per_category'])
    with pytest.raises(ValueError):
        analysis.coco(gt, dt, 'keypoints')


def test_ade20k_arrays_confusion():
    label = np.array([[0, 1, 2], [3, 255, 1], [2, 3, 3]], dtype=np.uint8)
    pred = np.array([[0, 0, 1], [2, 1, 5], [-1, 2, 0]], dtype=np.int64)
    a = analysis.ade20k([pred], [label], num_classes=3, names=['a', 'b', 'c'])
    assert a['confusion']['counts'] == [[1, 0, 0], [0, 1, 0], [1, 0, 2]]
    assert a['names'] == ['a', 'b', 'c']
    assert a['worst_images'][0]['mIoU'] == pytest.approx(0.5, abs=1e-15)
    assert set(a) >= {'aAcc', 'mIoU', 'mAcc', 'IoU', 'Acc', 'confusion', 'worst_images'}


def test_write_report(tmp_path):
    d = os.path.join(TIDE, '02_ties_crowd')
    b = analysis.coco(os.path.join(d, 'gt.json'), os.path.join(d, 'dt_bbox.json'), 'bbox')
    s = analysis.coco(os.path.join(d, 'gt.json'), os.path.join(d, 'dt_segm.json'), 'segm')
    label = np.random.default_rng(0).integers(0, 4, size=(20, 30)).astype(np.uint8)
    pred = np.random.default_rng(1).integers(0, 3, size=(20, 30))
    img = np.full((20, 30, 3), 128, dtype=np.uint8)
    seg = analysis.ade20k([pred], [label], images=[img], num_classes=3)
    assert seg['worst_images'][0]['thumbnail'].startswith('data:image/jpeg;base64,')
    out = tmp_path / 'r.html'
    analysis.write_report([b, s, seg], str(out), title='t')
    html = out.read_text()
    for sec in ('bbox-summary', 'bbox-tide', 'segm-confusion', 'ade20k-classes', 'ade20k-worst'):
        assert 'id="%s"' % sec in html, sec
    with pytest.raises(Exception):
        analysis.write_report({'report': 'x'}, str(tmp_path / 'bad.html'))
    assert not (tmp_path / 'bad.html').exists()
