"""Tiled detection through the package (docs/large-images.md): inference_detector(model, img,
tile=(h, w), overlap=...) equals `ravlt detect --tile` on the Mask R-CNN fixture (boxes and
scores bit for bit, masks equal to its whole-image RLEs), one tile over the image equals the
plain call, and bad options are refused."""
import json
import subprocess

import numpy as np
import pytest

import ravlt
from ravlt.cocotools import mask as M

from conftest import fx, BIN

CK, IMG = fx('e2e', 'mask_rcnn', 'checkpoint.pth'), fx('e2e', 'mask_rcnn', 'image.jpg')


@pytest.fixture(scope='module')
def model():
    return ravlt.init_detector(CK)


def test_one_tile_is_the_plain_call(model):
    h, w = ravlt.imread(IMG).shape[:2]
    boxes, masks = ravlt.inference_detector(model, IMG)
    tb, tm = ravlt.inference_detector(model, IMG, tile=(h, w))
    assert len(tb) == len(boxes) == model.num_classes
    for k in range(model.num_classes):
        assert np.array_equal(tb[k], boxes[k])
        assert len(tm[k]) == len(masks[k]) and all(np.array_equal(a, b) for a, b in zip(tm[k], masks[k]))


@pytest.mark.parametrize('merge', ['nms', 'nmm'])
def test_tiles_equal_cli(model, merge, tmp_path):
    out = tmp_path / 'd.json'
    r = subprocess.run([BIN, '--quiet', 'detect', '--weights', CK, '--no-draw', '--tile', '200x300', '--tile-overlap',
                        '0.25', '--tile-merge', merge, '--json', str(out), IMG], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    ref = json.load(open(str(out)))
    segm = json.load(open(str(tmp_path / 'd.segm.json')))
    boxes, masks = ravlt.inference_detector(model, IMG, tile=(200, 300), overlap=0.25, merge=merge)
    got = [(k, b) for k in range(model.num_classes) for b in boxes[k]]
    assert len(got) == len(ref) > 0
    flat = [m for k in range(model.num_classes) for m in masks[k]]
    for i, ((k, b), e, s) in enumerate(zip(got, ref, segm)):  # the same order: by class, then score
        assert e['category_id'] == model.category_ids[k] == s['category_id']
        assert np.float32(e['score']) == b[4]
        x1, y1, x2, y2 = (float(v) for v in b[:4])
        assert [x1, y1, x2 - x1, y2 - y1] == e['bbox']
        rle = {'size': s['segmentation']['size'], 'counts': s['segmentation']['counts'].encode()}
        assert np.array_equal(M.decode(rle).astype(bool), flat[i])


def test_tile_options(model):
    img = ravlt.imread(IMG)
    capped = ravlt.inference_detector(model, img, tile=256, merge='nmm', full=True, max_dets=5)[0]
    assert sum(len(b) for b in capped) <= 5
    with pytest.raises(ValueError):
        ravlt.inference_detector(model, img, tile=(0, 100))
    with pytest.raises(TypeError):
        ravlt.inference_detector(model, img, tile=(100, 100, 3))
    with pytest.raises(ValueError):
        ravlt.inference_detector(model, img, tile=(100, 100), merge='union')
    with pytest.raises(ValueError, match='overlap'):
        ravlt.inference_detector(model, img, tile=(100, 100), overlap=1.0)
