"""Inference through the package equals the CLI's on the e2e fixtures: segmentation label maps
identical to `ravlt segment` (its PNG stores class + 1); detections identical in count and
labels to `ravlt detect --json`, scores within 1e-4, boxes within 1e-2 px and masks at IoU >=
0.99 with its .segm.json RLEs: check-fixture's detection tolerances (README).
In the gcc build the two are bit-identical. In the clang build they are not with 2 threads
(identical with OMP_NUM_THREADS=1): inside python3 numpy has already loaded OpenBLAS with
libgomp while libravlt runs its loops on LLVM's libomp, so the work is split differently and
float32 sums round differently (scores moved by up to 1.7e-5 in the cascade, measured)."""
import json
import os
import subprocess
import threading

import numpy as np
import pytest

import ravlt
from ravlt.cocotools import mask as M

from conftest import fx, BIN

SEG = ['semantic_fpn', 'upernet']
DET = ['mask_rcnn', 'retinanet', 'cascade_mask_rcnn']


def cli(*args):
    r = subprocess.run([BIN, '--quiet'] + list(args), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize('arch', SEG)
def test_segment_equals_cli(arch, tmp_path):
    ck, img = fx('e2e', arch, 'checkpoint.pth'), fx('e2e', arch, 'image.jpg')
    cli('segment', '--weights', ck, '--out-dir', str(tmp_path), '--format', 'png', img)
    ref = ravlt.imread(str(tmp_path / 'image.png'), gray=True).astype(np.int64) - 1
    model = ravlt.init_segmentor(ck)
    assert model.task == 'segment' and model.arch == arch
    res = ravlt.inference_segmentor(model, img)
    assert isinstance(res, list) and len(res) == 1
    seg = res[0]
    assert seg.dtype == np.int64 and seg.shape == ref.shape
    assert np.array_equal(seg, ref)
    # an ndarray input (BGR, as cv2.imread gives) is the same image
    assert np.array_equal(ravlt.inference_segmentor(model, ravlt.imread(img))[0], ref)


def test_segment_slide_equals_cli(tmp_path):
    ck, img = fx('e2e', 'semantic_fpn', 'checkpoint.pth'), fx('e2e', 'semantic_fpn', 'image.jpg')
    cli('segment', '--weights', ck, '--out-dir', str(tmp_path / 's'), '--format', 'png', '--mode', 'slide',
        '--crop', '256', '--stride', '171', img)
    slide = ravlt.imread(str(tmp_path / 's' / 'image.png'), gray=True).astype(np.int64) - 1
    m = ravlt.init_segmentor(ck, mode='slide', crop_size=256, stride=171)
    assert m.test_mode == 'slide'
    assert np.array_equal(ravlt.inference_segmentor(m, img)[0], slide)


def test_segment_aug_test_options():
    """aug_test reaches the library's multi-scale + flip test (`ravlt segment --aug-test`; its
    six default scales cost minutes here, so this runs one or two scales): one scale of 1.0
    without flip is the single-scale result, and a two-scale flipped run is a valid label map."""
    ck, img = fx('e2e', 'semantic_fpn', 'checkpoint.pth'), fx('e2e', 'semantic_fpn', 'image.jpg')
    m = ravlt.init_segmentor(ck)
    whole = ravlt.inference_segmentor(m, img)[0]
    one = ravlt.inference_segmentor(m, img, aug_test=True, ratios=[1.0], flip=False)[0]
    assert np.array_equal(one, whole)
    two = ravlt.inference_segmentor(m, img, aug_test=True, ratios=[0.5, 0.75], flip=True)[0]
    assert two.shape == whole.shape and two.min() >= 0 and two.max() < m.num_classes
    assert not np.array_equal(two, whole)  # other scales do change some pixels


@pytest.mark.parametrize('arch', DET)
def test_detect_equals_cli(arch, tmp_path):
    ck, img = fx('e2e', arch, 'checkpoint.pth'), fx('e2e', arch, 'image.jpg')
    out = tmp_path / 'det.json'
    cli('detect', '--weights', ck, '--out-dir', str(tmp_path / 'vis'), '--json', str(out), img)
    ref = json.load(open(out))
    model = ravlt.init_detector(ck)
    assert model.task == 'detect' and model.arch == arch
    res = ravlt.inference_detector(model, img)
    if model.with_mask:
        bbox_result, segm_result = res
        segm_ref = json.load(open(str(out)[:-5] + '.segm.json'))
    else:
        bbox_result, segm_result = res, None
        assert arch == 'retinanet'
    assert len(bbox_result) == model.num_classes
    got = []
    for k, b in enumerate(bbox_result):
        assert b.dtype == np.float32 and b.ndim == 2 and b.shape[1] == 5
        for row in b:
            got.append((model.category_ids[k], row))
    assert len(got) == len(ref) and len(ref) > 0
    for (cat, row), r in zip(got, ref):  # results2json order: by class, NMS order within it
        assert cat == r['category_id']
        assert abs(float(np.float32(r['score'])) - float(row[4])) <= 1e-4
        x1, y1, x2, y2 = (float(v) for v in row[:4])
        assert [x1, y1, x2 - x1, y2 - y1] == pytest.approx(r['bbox'], abs=1e-2)
    if segm_result is not None:
        h, w = ravlt.imread(img).shape[:2]
        masks = [m for per in segm_result for m in per]
        assert len(masks) == len(segm_ref)
        for m, r in zip(masks, segm_ref):
            assert m.dtype == np.bool_ and m.shape == (h, w)
            ref_m = M.decode(r['segmentation']).astype(bool)
            union = np.logical_or(m, ref_m).sum()
            inter = np.logical_and(m, ref_m).sum()
            assert union == 0 or inter / union >= 0.99


def test_inference_threads_release_gil():
    """Two threads run inference at once (ctypes drops the GIL in foreign calls); results equal."""
    ck, img = fx('e2e', 'semantic_fpn', 'checkpoint.pth'), fx('e2e', 'semantic_fpn', 'image.jpg')
    m = ravlt.init_segmentor(ck)
    ref = ravlt.inference_segmentor(m, img)[0]
    out = [None, None]

    def run(i):
        out[i] = ravlt.inference_segmentor(m, img)[0]
    ts = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert all(np.array_equal(o, ref) for o in out)


def test_model_errors(tmp_path):
    with pytest.raises(ravlt.Error, match='no_such_model'):
        ravlt.init_segmentor('no_such_model')
    bad = tmp_path / 'bad.pth'
    bad.write_bytes(b'not a checkpoint')
    with pytest.raises(ravlt.Error, match='bad.pth'):
        ravlt.init_detector(str(bad))
    with pytest.raises(ravlt.Error, match='not a segmentor'):
        ravlt.init_segmentor(fx('e2e', 'retinanet', 'checkpoint.pth'))
    m = ravlt.init_segmentor(fx('e2e', 'semantic_fpn', 'checkpoint.pth'))
    with pytest.raises(ravlt.Error, match='HxWx3 uint8'):
        ravlt.inference_segmentor(m, np.zeros((4, 4, 2), np.uint8))
    with pytest.raises(ravlt.Error, match='missing.jpg'):
        ravlt.inference_segmentor(m, str(tmp_path / 'missing.jpg'))


def test_precision(tmp_path, monkeypatch):
    """precision='bf16' (README 'bf16'): the CLI's `--precision bf16` label map (>= 99.9% of
    the pixels: float32 parts outside the bf16 kernel may be split differently between
    threads in the clang build), a bad value is an Error, and a CPU without AVX512_BF16
    (simulated by RAVLT_DISABLE_BF16=1) refuses with an Error naming it."""
    ck, img = fx('e2e', 'semantic_fpn', 'checkpoint.pth'), fx('e2e', 'semantic_fpn', 'image.jpg')
    with pytest.raises(ravlt.Error, match="precision must be 'f32' or 'bf16'"):
        ravlt.init_segmentor(ck, precision='fp16')
    assert ravlt.init_segmentor(ck).precision == 'f32'
    if ravlt.cpu_has_bf16():
        cli('segment', '--weights', ck, '--out-dir', str(tmp_path), '--format', 'png', '--precision', 'bf16', img)
        ref = ravlt.imread(str(tmp_path / 'image.png'), gray=True).astype(np.int64) - 1
        m = ravlt.init_segmentor(ck, precision='bf16')
        assert m.precision == 'bf16'
        seg = ravlt.inference_segmentor(m, img)[0]
        assert np.mean(seg == ref) >= 0.999
        d = ravlt.init_detector(fx('e2e', 'retinanet', 'checkpoint.pth'), precision='bf16')
        assert d.precision == 'bf16'
    monkeypatch.setenv('RAVLT_DISABLE_BF16', '1')
    assert not ravlt.cpu_has_bf16()
    with pytest.raises(ravlt.Error, match='AVX512_BF16'):
        ravlt.init_segmentor(ck, precision='bf16')


def _with_extra_key(src, dst, key):
    """src (safetensors) with one extra F32 [3] tensor `key`, written to dst."""
    import struct
    raw = open(src, 'rb').read()
    n = struct.unpack('<Q', raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    head[key] = {'dtype': 'F32', 'shape': [3], 'data_offsets': [len(data), len(data) + 12]}
    h = json.dumps(head).encode()
    h += b' ' * (-len(h) % 8)
    open(dst, 'wb').write(struct.pack('<Q', len(h)) + h + data + struct.pack('<3f', 1, 2, 3))


def test_strict(tmp_path):
    """strict=True: a key the model does not use is an error naming it; by default it loads."""
    seg = str(tmp_path / 'seg.safetensors')
    _with_extra_key(fx('e2e', 'semantic_fpn', 'weights.safetensors'), seg, 'decode_head.extra.weight')
    with pytest.warns(ravlt.RavltWarning, match="unexpected key 'decode_head.extra.weight'|decode_head.extra.weight"):
        assert ravlt.init_segmentor(seg).task == 'segment'
    with pytest.raises(ravlt.Error, match="unexpected key 'decode_head.extra.weight'"):
        ravlt.init_segmentor(seg, strict=True)
    det = str(tmp_path / 'det.safetensors')
    _with_extra_key(fx('e2e', 'retinanet', 'weights.safetensors'), det, 'bbox_head.extra.weight')
    with pytest.warns(ravlt.RavltWarning, match='bbox_head.extra.weight'):
        assert ravlt.init_detector(det).task == 'detect'
    with pytest.raises(ravlt.Error, match="unexpected key 'bbox_head.extra.weight'"):
        ravlt.init_detector(det, strict=True)
    # the fixture as it is loads strictly
    assert ravlt.init_detector(fx('e2e', 'retinanet', 'weights.safetensors'), strict=True).arch == 'retinanet'
