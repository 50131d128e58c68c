"""ravlt.mean_iou against mmseg 0.x's metrics (tests/fixtures/miou: aAcc, per-class IoU and
Acc; exact: the library computes them with numpy's summation order)."""
import json
import math
import os

import numpy as np
import pytest

import ravlt

from conftest import fx

CASES = sorted(d for d in os.listdir(fx('miou')) if os.path.isfile(fx('miou', d, 'expected.json')))


def same(a, b):
    return (b is None and math.isnan(a)) or a == b


@pytest.mark.parametrize('case', CASES)
def test_mean_iou_fixture(case):
    assert len(CASES) >= 3
    exp = json.load(open(fx('miou', case, 'expected.json')))
    conv = exp['convention']
    preds = [ravlt.imread(fx('miou', case, im['pred']), gray=True) for im in exp['images']]
    gts = [ravlt.imread(fx('miou', case, im['gt']), gray=True) for im in exp['images']]
    for pred_form in ('u8', 'i64', 'paths'):
        if pred_form == 'i64':
            res = [p.astype(np.int64) for p in preds]  # what inference_segmentor returns
        else:
            res = preds
        labels = [fx('miou', case, im['gt']) for im in exp['images']] if pred_form == 'paths' else gts
        all_acc, acc, iou = ravlt.mean_iou(res, labels, conv['num_classes'], conv['ignore_index'],
                                           reduce_zero_label=conv['reduce_zero_label'])
        assert all_acc == exp['aAcc']
        assert len(iou) == len(acc) == conv['num_classes']
        assert all(same(a, b) for a, b in zip(iou, exp['IoU']))
        assert all(same(a, b) for a, b in zip(acc, exp['Acc']))
        assert np.nanmean(iou) == pytest.approx(exp['mIoU'], abs=1e-12)
    _, acc0, iou0 = ravlt.mean_iou(preds, gts, conv['num_classes'], conv['ignore_index'], nan_to_num=-1,
                                   reduce_zero_label=conv['reduce_zero_label'])
    assert all((b is None and a == -1) or a == b for a, b in zip(iou0, exp['IoU']))


def test_mean_iou_shape_error():
    with pytest.raises(ravlt.Error, match='differ in shape'):
        ravlt.mean_iou([np.zeros((2, 3), np.int64)], [np.zeros((3, 2), np.uint8)], 4, 255)
