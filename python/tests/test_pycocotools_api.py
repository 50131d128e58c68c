"""A conformance check of the pycocotools API on ravlt.cocotools, in the way third-party
drop-ins (faster-coco-eval, hotcoco) test theirs: the spellings and call forms that code
written for pycocotools uses, the types it gets back, the exceptions its except clauses catch,
and ``init_as_pycocotools()``. Numbers against pycocotools itself are test_cocotools_golden.py's
job; here the expected values follow from the small inputs by hand."""
import contextlib
import importlib
import io
import json
import pathlib
import sys

import numpy as np
import pytest

import ravlt
from ravlt import cocotools
from ravlt.cocotools import COCO, COCOeval, Params, mask


def dataset():
    return {
        'info': {'description': 'conformance'},
        'images': [{'id': i, 'width': 100, 'height': 80, 'file_name': '%d.jpg' % i} for i in (1, 2, 3)],
        'categories': [{'id': 1, 'name': 'person', 'supercategory': 'p'},
                       {'id': 2, 'name': 'dog', 'supercategory': 'a'}],
        'annotations': [
            {'id': 1, 'image_id': 1, 'category_id': 1, 'bbox': [10, 10, 30, 30], 'area': 900, 'iscrowd': 0,
             'segmentation': [[10, 10, 40, 10, 40, 40, 10, 40]]},
            {'id': 2, 'image_id': 2, 'category_id': 2, 'bbox': [50, 50, 20, 20], 'area': 400, 'iscrowd': 1,
             'segmentation': {'size': [80, 100], 'counts': [4050, 20, 80, 20, 3830]}},
            {'id': 3, 'image_id': 3, 'category_id': 1, 'bbox': [0, 0, 5, 5], 'area': 25, 'iscrowd': 0,
             'segmentation': [[0, 0, 5, 0, 5, 5, 0, 5]]},
        ],
    }


DETS = [{'image_id': 1, 'category_id': 1, 'bbox': [10, 10, 30, 30], 'score': 0.9},
        {'image_id': 1, 'category_id': 1, 'bbox': [60, 10, 10, 10], 'score': 0.8},
        {'image_id': 3, 'category_id': 1, 'bbox': [0, 0, 5, 6], 'score': 0.7},
        {'image_id': 2, 'category_id': 2, 'bbox': [50, 50, 20, 20], 'score': 0.6}]


def quiet(f, *a, **k):
    with contextlib.redirect_stdout(io.StringIO()):
        return f(*a, **k)


@pytest.fixture
def gt_path(tmp_path):
    p = tmp_path / 'gt.json'
    p.write_text(json.dumps(dataset()))
    return p


# ---- COCO ----
@pytest.mark.parametrize('form', ['path', 'str', 'dict'])
def test_coco_sources(gt_path, form):
    src = {'path': gt_path, 'str': str(gt_path), 'dict': dataset()}[form]
    c = quiet(COCO, src)
    assert sorted(c.getImgIds()) == [1, 2, 3]
    assert c.getCatIds() == [1, 2]
    assert sorted(c.getAnnIds()) == [1, 2, 3]
    assert set(c.anns) == {1, 2, 3} and set(c.imgs) == {1, 2, 3} and set(c.cats) == {1, 2}
    assert [a['id'] for a in c.imgToAnns[1]] == [1]
    assert sorted(c.catToImgs[1]) == [1, 3]


@pytest.mark.parametrize('make', [list, tuple, set, frozenset, np.array, lambda v: dict.fromkeys(v).keys()])
def test_id_lists_any_iterable(gt_path, make):
    c = quiet(COCO, gt_path)
    assert sorted(c.getAnnIds(imgIds=make([1, 2]))) == [1, 2]
    assert sorted(c.getAnnIds(catIds=make([1]))) == [1, 3]
    assert sorted(c.getImgIds(imgIds=make([1, 2]))) == [1, 2]
    assert sorted(c.getImgIds(catIds=make([1]))) == [1, 3]
    assert sorted(x['id'] for x in c.loadAnns(make([1, 3]))) == [1, 3]
    assert sorted(x['id'] for x in c.loadImgs(make([2]))) == [2]


def test_getters_filters(gt_path):
    c = quiet(COCO, gt_path)
    assert c.getAnnIds(iscrowd=True) == [2] and c.getAnnIds(iscrowd=0) == [1, 3]
    assert c.getAnnIds(areaRng=[100, 1000]) == [1, 2]
    assert c.getAnnIds(areaRng=[]) == [1, 2, 3]
    assert c.getAnnIds(imgIds=1) == [1]  # a single id
    assert c.getCatIds(catNms=['dog']) == [2] and c.getCatIds(supNms='p') == [1]
    assert c.loadCats(2) == [dataset()['categories'][1]] and c.loadImgs(3)[0]['file_name'] == '3.jpg'
    m = c.annToMask(c.anns[1])
    assert m.shape == (80, 100) and m.dtype == np.uint8 and int(m.sum()) == 900
    r = c.annToRLE(c.anns[2])
    assert r['size'] == [80, 100] and isinstance(r['counts'], bytes) and int(mask.area(r)) == 40
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        c.info()
    assert out.getvalue() == 'description: conformance\n'


def test_dataset_and_create_index():
    c = COCO()
    c.dataset = dataset()
    quiet(c.createIndex)
    assert sorted(c.getImgIds()) == [1, 2, 3]
    E = COCOeval(c, quiet(c.loadRes, list(DETS)), 'bbox')
    quiet(E.evaluate)
    quiet(E.accumulate)
    quiet(E.summarize)
    assert E.stats[0] > 0.5


@pytest.mark.parametrize('form', ['path', 'str', 'list', 'ndarray'])
def test_loadres_forms(gt_path, tmp_path, form):
    c = quiet(COCO, gt_path)
    p = tmp_path / 'dt.json'
    p.write_text(json.dumps(DETS))
    src = {'path': p, 'str': str(p), 'list': [dict(d) for d in DETS],
           'ndarray': np.array([[d['image_id']] + d['bbox'] + [d['score'], d['category_id']] for d in DETS])}[form]
    r = quiet(c.loadRes, src)
    anns = r.dataset['annotations']
    assert [a['id'] for a in anns] == [1, 2, 3, 4]
    assert [a['area'] for a in anns] == [900, 100, 30, 400]
    assert all(a['iscrowd'] == 0 for a in anns) and all('segmentation' in a for a in anns)
    assert sorted(r.getImgIds()) == [1, 2, 3] and r.dataset['info'] == {'description': 'conformance'}


def test_loadres_errors(gt_path):
    c = quiet(COCO, gt_path)
    with pytest.raises(AssertionError):
        quiet(c.loadRes, [{'image_id': 99, 'category_id': 1, 'bbox': [0, 0, 1, 1], 'score': 1.0}])
    with pytest.raises(FileNotFoundError):
        quiet(c.loadRes, str(gt_path) + '.missing')
    with pytest.raises(FileNotFoundError):
        quiet(COCO, pathlib.Path(str(gt_path) + '.missing'))


# ---- COCOeval ----
@pytest.fixture
def evaluated(gt_path):
    c = quiet(COCO, gt_path)
    E = COCOeval(c, quiet(c.loadRes, [dict(d) for d in DETS]), 'bbox')
    quiet(E.evaluate)
    quiet(E.accumulate)
    return E


def test_eval_workflow(evaluated):
    E = evaluated
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        E.summarize()
    lines = out.getvalue().splitlines()
    assert len(lines) == 12 and lines[0].startswith(' Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all')
    assert isinstance(E.stats, np.ndarray) and E.stats.shape == (12,)
    assert E.eval['precision'].shape == (10, 101, 2, 4, 3) and E.eval['recall'].shape == (10, 2, 4, 3)
    assert E.eval['scores'].shape == (10, 101, 2, 4, 3) and E.eval['counts'] == [10, 101, 2, 4, 3]
    assert str(E) == '\n'.join(lines)  # str(ev): the summary text (faster-coco-eval, hotcoco)
    assert E.params.imgIds == [1, 2, 3] and E.params.catIds == [1, 2]


def test_eval_records(evaluated):
    E = evaluated
    assert len(E.evalImgs) == 2 * 4 * 3  # K x A x I
    e = E.evalImgs[0]  # category 1, area all, image 1
    assert e['image_id'] == 1 and e['category_id'] == 1 and e['maxDet'] == 100 and e['aRng'] == [0, 1e10]
    assert e['dtIds'] == [1, 2] and e['gtIds'] == [1] and e['dtScores'] == [0.9, 0.8]
    assert e['dtMatches'].shape == (10, 2) and e['dtMatches'][0].tolist() == [1.0, 0.0]
    assert e['gtMatches'][:, 0].tolist() == [1.0] * 10 and e['dtIgnore'].dtype == bool
    assert E.evalImgs[1] is None  # category 1 has nothing on image 2
    assert set(E.ious) == {(i, k) for i in (1, 2, 3) for k in (1, 2)}
    assert E.ious[1, 1].shape == (2, 1) and E.ious[1, 1][0, 0] == 1.0 and E.ious[1, 2] == []
    assert np.array_equal(E.computeIoU(1, 1), E.ious[1, 1])
    r = E.evaluateImg(1, 1, [0, 1e10], 1)
    assert r['dtIds'] == [1] and r['gtIgnore'].tolist() == [0]


def test_accumulate_with_params(evaluated):
    E = evaluated
    full = E.eval['precision'].copy()
    p = Params('bbox')
    p.imgIds, p.catIds = [1, 2, 3], [1]
    quiet(E.accumulate, p)
    assert E.eval['precision'].shape == (10, 101, 1, 4, 3)
    assert np.array_equal(E.eval['precision'][:, :, 0], full[:, :, 0])


def test_params():
    p = Params('keypoints')
    assert p.maxDets == [20] and p.areaRngLbl == ['all', 'medium', 'large'] and p.kpt_oks_sigmas.shape == (17,)
    d = Params()
    assert d.iouType == 'segm' and d.maxDets == [1, 10, 100] and len(d.iouThrs) == 10 and len(d.recThrs) == 101
    with pytest.raises(Exception):
        Params('polygon')


def test_keypoints_eval():
    ds = {'images': [{'id': 1, 'width': 200, 'height': 200}],
          'categories': [{'id': 1, 'name': 'person', 'keypoints': ['k%d' % i for i in range(17)],
                          'skeleton': [[1, 2]]}],
          'annotations': [{'id': 1, 'image_id': 1, 'category_id': 1, 'bbox': [20, 20, 100, 150],
                           'area': 12000, 'iscrowd': 0, 'num_keypoints': 17,
                           'keypoints': sum([[30 + 4 * i, 40 + 5 * i, 2] for i in range(17)], [])}]}
    c = quiet(COCO, ds)
    det = [{'image_id': 1, 'category_id': 1, 'score': 0.9, 'keypoints': ds['annotations'][0]['keypoints']}]
    E = COCOeval(c, quiet(c.loadRes, det), 'keypoints')
    quiet(E.evaluate)
    quiet(E.accumulate)
    quiet(E.summarize)
    assert E.stats.shape == (10,) and E.stats[0] == 1 / (1 + np.spacing(1))  # a perfect detection: tp/(tp+eps)
    assert E.ious[1, 1].tolist() == [[1.0]] and len(str(E).splitlines()) == 10


# ---- mask ----
def test_mask_api():
    m = np.zeros((20, 30), np.uint8, order='F')
    m[5:15, 10:20] = 1
    r = mask.encode(m)
    assert r['size'] == [20, 30] and isinstance(r['counts'], bytes)
    assert np.array_equal(mask.decode(r), m)
    assert mask.area(r) == 100 and mask.area([r, r]).dtype == np.uint32
    assert mask.toBbox(r).tolist() == [10.0, 5.0, 10.0, 10.0] and mask.toBbox([r]).shape == (1, 4)
    rs = mask.encode(np.asfortranarray(np.stack([m, m], 2)))
    assert len(rs) == 2 and mask.decode(rs).shape == (20, 30, 2)
    assert mask.decode({'size': r['size'], 'counts': r['counts'].decode()}).sum() == 100  # str counts
    boxes = np.array([[0, 0, 10, 10], [5, 5, 10, 10]], dtype=np.float64)
    rb = mask.frPyObjects(boxes, 20, 20)
    for flag in (0, 1, np.int64(1), True):
        assert mask.merge(rb, flag)['size'] == [20, 20]
    assert mask.area(mask.merge(rb, 1)) == 25 and mask.area(mask.merge(rb)) == 175
    assert mask.frPyObjects([[1, 1, 9, 1, 9, 9, 1, 9]], 10, 10)[0]['size'] == [10, 10]
    assert mask.frPyObjects({'size': [4, 4], 'counts': [2, 14]}, 4, 4)['counts'] == b'2>'


@pytest.mark.parametrize('dtype', [np.float64, np.float32, np.int64])
@pytest.mark.parametrize('iscrowd', [[0, 0], [0, 1], [False, True], np.array([1, 0]), np.array([0.0, 1.0])])
def test_mask_iou_boxes(dtype, iscrowd):
    b = [[0.0, 0.0, 10.0, 10.0], [5.0, 5.0, 10.0, 10.0], [50.0, 50.0, 4.0, 4.0]]
    o = mask.iou(np.array(b, dtype=dtype), np.array(b[:2], dtype=dtype), iscrowd)
    assert isinstance(o, np.ndarray) and o.dtype == np.float64 and o.shape == (3, 2)
    c = np.asarray(iscrowd, dtype=bool)
    assert o[0, 0] == 1.0 and o[2].tolist() == [0.0, 0.0]
    assert o[0, 1] == (25 / 100 if c[1] else 25 / 175)
    assert np.array_equal(mask.iou(b, b[:2], iscrowd), o)
    assert np.array_equal(mask.iou((x for x in b), tuple(b[:2]), iscrowd), o)  # read once (hotcoco takes them)


def test_mask_exceptions():
    with pytest.raises(ValueError):
        mask.encode(np.ones((4, 4), np.float64, order='F'))
    with pytest.raises(ValueError):
        mask.encode(np.ones((4, 4), np.int32, order='F') * 256)
    with pytest.raises(ValueError):
        mask.decode({'size': [2, 2], 'counts': b'2d0'})
    with pytest.raises(AssertionError):
        mask.iou([[0, 0, 1, 1]], [[0, 0, 1, 1]], [0, 1])
    with pytest.raises(Exception, match='same data type'):
        mask.iou([[0, 0, 1, 1]], mask.frPyObjects(np.array([[0, 0, 1, 1.]]), 4, 4), [0])
    with pytest.raises(TypeError):  # a bare Exception in pycocotools; a TypeError too here
        mask.iou([[0, 0, 1, 1], [1, 2]], [[0, 0, 1, 1]], [0])
    assert mask.iou([], [[0, 0, 1, 1]], [0]) == []
    with pytest.raises(ravlt.Error):  # the classes also derive from ravlt.Error
        mask.encode(np.ones((4, 4), np.float64))


def test_private_mask_helpers():
    r = mask.encode(np.asfortranarray(np.eye(4, dtype=np.uint8)))
    Rs = mask._frString([r, {'size': [4, 4], 'counts': r['counts'].decode()}])
    assert Rs.n == 2
    assert mask._toString(Rs) == [r, r]


# ---- init_as_pycocotools ----
def test_init_as_pycocotools(gt_path):
    saved = {k: v for k, v in sys.modules.items() if k == 'pycocotools' or k.startswith('pycocotools.')}
    try:
        cocotools.init_as_pycocotools()
        from pycocotools.coco import COCO as C2
        from pycocotools.cocoeval import COCOeval as E2
        import pycocotools.mask as maskUtils
        from pycocotools import _mask
        assert C2 is COCO and E2 is COCOeval and maskUtils is mask and _mask._frString is mask._frString
        assert importlib.import_module('pycocotools').__version__ == '2.0.11'
        c = quiet(C2, str(gt_path))
        assert sorted(c.getImgIds()) == [1, 2, 3]
    finally:
        for k in [k for k in sys.modules if k == 'pycocotools' or k.startswith('pycocotools.')]:
            del sys.modules[k]
        sys.modules.update(saved)


def test_show_anns(gt_path):
    c = quiet(COCO, gt_path)
    anns = c.loadAnns(c.getAnnIds())
    try:
        import matplotlib
    except ImportError:
        with pytest.raises(ImportError, match='matplotlib'):
            c.showAnns(anns)
        return
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    plt.figure()
    plt.imshow(np.zeros((80, 100, 3)))
    c.showAnns(anns, draw_bbox=True)
    ax = plt.gca()
    assert len(ax.collections) == 2 and len(ax.images) == 2  # polygons + outlines; image + crowd mask
    plt.close('all')
    assert c.showAnns([]) == 0


def test_records_survive_reloads(gt_path):
    """evalImgs are built from the library's evaluation when read: a later segm loadRes (which
    reloads the ground truth with its masks) or createIndex must not pull its inputs away."""
    c = quiet(COCO, gt_path)
    E = COCOeval(c, quiet(c.loadRes, [dict(d) for d in DETS]), 'bbox')
    quiet(E.evaluate)
    m = np.zeros((80, 100), np.uint8, order='F')
    m[10:40, 10:40] = 1
    quiet(c.loadRes, [{'image_id': 1, 'category_id': 1, 'score': 0.5, 'segmentation': mask.encode(m)}])
    quiet(c.createIndex)
    assert E.evalImgs[0]['dtIds'] == [1, 2] and E.evalImgs[0]['gtIds'] == [1]
    assert E.ious[1, 1].shape == (2, 1)
