"""ravlt.cocotools.mask against pycocotools.mask's outputs (tests/fixtures/rle/cases.json):
encodings, areas, boxes and IoUs exactly."""
import json
import os

import numpy as np
import pytest

import ravlt
from ravlt.cocotools import mask as M

from conftest import fx

CASES = json.load(open(fx('rle', 'cases.json')))


def png_mask(rel):
    """The fixture PNG (row-major, nonzero = 1) as pycocotools wants it: Fortran uint8."""
    m = ravlt.imread(fx('rle', rel), gray=True)
    return np.asfortranarray((m != 0).astype(np.uint8))


def s(r):
    return r['counts'].decode() if isinstance(r['counts'], bytes) else r['counts']


@pytest.mark.parametrize('c', CASES['encode'], ids=lambda c: c['name'])
def test_encode_decode_area_bbox(c):
    m = png_mask(c['mask'])
    assert m.shape == (c['h'], c['w'])
    r = M.encode(m)
    assert isinstance(r['counts'], bytes) and r['size'] == [c['h'], c['w']]
    assert s(r) == c['counts']
    assert M.area(r) == c['area'] and isinstance(M.area(r), np.uint32)
    assert M.toBbox(r).tolist() == c['bbox']
    d = M.decode(r)
    assert d.shape == m.shape and np.array_equal(d, m)
    # the list forms: HxWxN in, list out; list in, HxWxN out
    rs = M.encode(np.asfortranarray(np.stack([m, m], axis=2)))
    assert [s(x) for x in rs] == [c['counts']] * 2
    assert M.decode(rs).shape == (c['h'], c['w'], 2)
    assert M.area(rs).tolist() == [c['area']] * 2
    assert M.toBbox(rs).tolist() == [c['bbox']] * 2
    assert s(M.frPyObjects({'size': [c['h'], c['w']], 'counts': c['uncompressed_counts']}, c['h'], c['w'])) == c['counts']


@pytest.mark.parametrize('c', CASES['frPoly'], ids=lambda c: c['name'])
def test_frpoly_merge(c):
    rs = M.frPyObjects(c['polygons'], c['h'], c['w'])
    assert [s(r) for r in rs] == [p['counts'] for p in c['per_polygon']]
    assert [int(a) for a in M.area(rs)] == [p['area'] for p in c['per_polygon']]
    mg = M.merge(rs)
    assert s(mg) == c['merged']['counts'] and mg['size'] == c['merged']['size']
    assert M.area(mg) == c['merged']['area'] and M.toBbox(mg).tolist() == c['merged']['bbox']
    assert np.array_equal(M.decode(mg), png_mask(c['merged_mask']))


@pytest.mark.parametrize('c', CASES['frBbox'], ids=lambda c: c['name'])
def test_frbbox(c):
    rs = M.frPyObjects(c['bboxes'], c['h'], c['w'])
    assert [s(r) for r in rs] == [r['counts'] for r in c['rles']]
    rs2 = M.frPyObjects(np.array(c['bboxes'], dtype=np.float64), c['h'], c['w'])
    assert [s(r) for r in rs2] == [r['counts'] for r in c['rles']]
    assert M.toBbox(rs).tolist() == [r['bbox'] for r in c['rles']]


@pytest.mark.parametrize('c', CASES['frUncompressedRLE'], ids=lambda c: c['name'])
def test_fruncompressed(c):
    h, w = c['size']
    r = M.frPyObjects({'size': c['size'], 'counts': c['counts']}, h, w)
    assert s(r) == c['rle']['counts'] and M.area(r) == c['rle']['area']
    assert np.array_equal(M.decode(r), png_mask(c['mask']))


@pytest.mark.parametrize('c', CASES['merge'], ids=lambda c: 'intersect%d' % c['intersect'])
def test_merge(c):
    r = M.merge([dict(x) for x in c['inputs']], intersect=c['intersect'])
    assert s(r) == c['result']['counts']
    assert np.array_equal(M.decode(r), png_mask(c['result_mask']))


@pytest.mark.parametrize('k', range(len(CASES['iou'])))
def test_iou(k):
    c = CASES['iou'][k]
    dt, gt = c['dt'], c['gt']
    if c['kind'] == 'rle':
        dt = [{'size': r['size'], 'counts': r['counts'].encode()} for r in dt]
        gt = [{'size': r['size'], 'counts': r['counts']} for r in gt]
    got = M.iou(dt, gt, c['iscrowd'])
    assert np.asarray(got).tolist() == c['iou']
    if c['kind'] == 'bbox':
        assert M.iou(np.array(dt), np.array(gt), c['iscrowd']).tolist() == c['iou']


def test_mask_errors():
    assert M.iou([], [{'size': [2, 2], 'counts': b'4'}], [0]) == []
    # counts past h*w: pycocotools' ValueError (the class also derives from ravlt.Error)
    with pytest.raises(ValueError, match='Invalid RLE mask representation'):
        M.decode({'size': [4, 4], 'counts': b'2d0'})  # 2 + 20 > 16
    with pytest.raises(ravlt.Error):
        M.decode({'size': [4, 4], 'counts': b'2d0'})  # 2 + 20 > 16
    with pytest.raises(Exception, match='input type is not supported'):  # a bare Exception in pycocotools
        M.frPyObjects(42, 4, 4)
