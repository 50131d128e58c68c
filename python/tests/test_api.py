"""The mmdet 2.x / mmseg 0.x API beyond inference parity (test_inference.py): a model's lifetime
(close(), `with`, del, copies; no input sequence crashes the interpreter), the exception classes
mmdet / mmseg users catch, the library's warnings through `warnings`, devices, image inputs and
lists for both tasks, slide windows as (h, w), show_result / show_result_pyplot, model.cfg,
PALETTE / CLASSES, __version__, type hints and docstrings.

Inference is slow on a loaded 2-core machine (seconds per image at the models' test scales), so
the results the tests draw and compare are computed once per module."""
import copy
import inspect
import os
import pathlib
import pickle
import subprocess
import sys
import threading
import time
import types
import typing
import warnings

import numpy as np
import pytest

import ravlt
import ravlt.apis
import ravlt.config
from conftest import fx, BIN

SEG_CK, SEG_IMG = fx('e2e', 'semantic_fpn', 'checkpoint.pth'), fx('e2e', 'semantic_fpn', 'image.jpg')
DET_CK, DET_IMG = fx('e2e', 'mask_rcnn', 'checkpoint.pth'), fx('e2e', 'mask_rcnn', 'image.jpg')


@pytest.fixture(scope='module')
def seg():
    m = ravlt.init_segmentor(SEG_CK)
    return m, ravlt.inference_segmentor(m, SEG_IMG)[0]


@pytest.fixture(scope='module')
def det():
    m = ravlt.init_detector(DET_CK)
    return m, ravlt.inference_detector(m, DET_IMG)


def run_py(code):
    """code in a fresh interpreter (same environment): its exit status and output. A crash of the
    interpreter shows as a negative status (a signal), not as a failed assertion here."""
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=600)
    return r.returncode, r.stdout + r.stderr


# ---- lifetime -------------------------------------------------------------------------------

def test_closed_model_raises_in_a_fresh_interpreter():
    """The sequences of issue 38 (exit 139 before): every use after close() / __del__() / the end
    of a `with` block raises ClosedError, and nothing crashes."""
    code = '''
import ravlt, numpy as np
seg_ck, det_ck = %r, %r
img = np.zeros((32, 48, 3), np.uint8)
n = 0
for how in ('close', '__del__', 'with'):
    for ck, init, infer in ((seg_ck, ravlt.init_segmentor, ravlt.inference_segmentor),
                            (det_ck, ravlt.init_detector, ravlt.inference_detector)):
        if how == 'with':
            with init(ck) as m:
                pass
        else:
            m = init(ck)
            getattr(m, how)()
        getattr(m, how if how != 'with' else 'close')()  # twice: idempotent
        for use in (lambda: infer(m, img), lambda: m.precision, lambda: m.set_precision('f32'),
                    lambda: m.test_mode, lambda: copy.copy(m),
                    lambda: pickle.dumps(m), lambda: m.set_test_mode('whole')):
            try:
                use()
            except ravlt.ClosedError as e:
                assert isinstance(e, ValueError) and isinstance(e, ravlt.Error)
                assert 'closed' in str(e)
                n += 1
            except ravlt.ArgumentError:  # set_test_mode on a detector: checked before the pointer
                n += 1
        assert m.closed and 'closed' in repr(m)
        del m
print('raised', n)
''' % (SEG_CK, DET_CK)
    rc, out = run_py('import copy, pickle\n' + code)
    assert rc == 0, out
    assert 'raised 42' in out  # 3 ways x 2 tasks x 7 uses


def test_with_block_and_close(seg):
    _, ref = seg
    with ravlt.init_segmentor(SEG_CK) as m:
        assert not m.closed
        assert m.test_mode == 'whole'
    assert m.closed
    with pytest.raises(ravlt.ClosedError, match='closed'):
        ravlt.inference_segmentor(m, SEG_IMG)
    with pytest.raises(ValueError):  # the builtin mmdet users catch, as for a closed file
        m.precision
    # an exception inside the block closes it too
    with pytest.raises(KeyError):
        with ravlt.init_segmentor(SEG_CK) as m2:
            raise KeyError('x')
    assert m2.closed


def test_close_while_another_thread_runs(seg):
    """close() during an inference in another thread: that inference finishes with the right
    result (the model is freed after it), later calls raise."""
    _, ref = seg
    m = ravlt.init_segmentor(SEG_CK)
    out = {}

    def run():
        out['seg'] = ravlt.inference_segmentor(m, SEG_IMG)[0]
    t = threading.Thread(target=run)
    t.start()
    deadline = time.time() + 120
    while m._busy == 0 and t.is_alive() and time.time() < deadline:
        time.sleep(0.001)
    assert m._busy == 1, 'the inference thread did not start'
    m.close()  # returns at once; the running call keeps the model
    assert m.closed
    t.join()
    assert np.array_equal(out['seg'], ref)
    assert m._p is None  # freed by the last call
    with pytest.raises(ravlt.ClosedError):
        ravlt.inference_segmentor(m, SEG_IMG)


def test_settings_wait_for_running_calls(seg):
    """set_test_mode while an inference runs: that inference keeps the settings it started with."""
    _, ref = seg
    m = ravlt.init_segmentor(SEG_CK)
    out = {}
    t = threading.Thread(target=lambda: out.setdefault('seg', ravlt.inference_segmentor(m, SEG_IMG)[0]))
    t.start()
    deadline = time.time() + 120
    while m._busy == 0 and t.is_alive() and time.time() < deadline:
        time.sleep(0.001)
    assert m._busy == 1
    m.set_test_mode('slide', 256, 171)  # waits for the running call
    assert m._busy == 0
    t.join()
    assert np.array_equal(out['seg'], ref)
    assert m.test_mode == 'slide'
    m.close()


def test_copies_reload_the_checkpoint():
    m = ravlt.init_segmentor(SEG_CK, mode='slide', crop_size=(256, 224), stride=(171, 150))
    for c in (copy.copy(m), copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert c is not m and c._p != m._p
        assert c.test_cfg == m.test_cfg == dict(mode='slide', crop_size=(256, 224), stride=(171, 150))
        c.close()
        assert not m.closed and m.test_mode == 'slide'  # one copy closed, the original untouched
    m.close()


def test_not_a_model():
    with pytest.raises(TypeError, match='ravlt.Model'):
        ravlt.inference_segmentor('model.pth', SEG_IMG)
    with pytest.raises(TypeError, match='ravlt.Model'):
        ravlt.inference_detector(None, DET_IMG)


def test_wrong_task(seg, det):
    with pytest.raises(TypeError, match='use inference_detector'):
        ravlt.inference_segmentor(det[0], np.zeros((8, 8, 3), np.uint8))
    with pytest.raises(TypeError, match='use inference_segmentor'):
        ravlt.inference_detector(seg[0], np.zeros((8, 8, 3), np.uint8))
    with pytest.raises(ValueError, match='not a segmentor: use init_detector'):
        ravlt.init_segmentor(DET_CK)
    with pytest.raises(ValueError, match='not a detector: use init_segmentor'):
        ravlt.init_detector(SEG_CK)


# ---- exception classes ----------------------------------------------------------------------

def test_exception_classes(tmp_path, seg):
    m, _ = seg
    cases = [
        (lambda: ravlt.init_detector(str(tmp_path / 'none.pth')), FileNotFoundError, 'none.pth'),
        (lambda: ravlt.init_segmentor('no_such_model'), FileNotFoundError, 'not a model name'),
        (lambda: ravlt.imread(str(tmp_path / 'none.jpg')), FileNotFoundError, 'none.jpg'),
        (lambda: ravlt.inference_segmentor(m, str(tmp_path / 'none.jpg')), FileNotFoundError, 'none.jpg'),
        (lambda: ravlt.imread(str(tmp_path)), IsADirectoryError, str(tmp_path)),
        (lambda: ravlt.inference_segmentor(m, np.zeros((4, 4, 3), np.float32)), TypeError, 'uint8'),
        (lambda: ravlt.inference_segmentor(m, np.zeros((4, 4, 2), np.uint8)), ValueError, 'HxWx3'),
        (lambda: ravlt.inference_segmentor(m, np.zeros((0, 4, 3), np.uint8)), ValueError, 'pixels'),
        (lambda: ravlt.inference_segmentor(m, 42), TypeError, 'file name or an HxWx3'),
        (lambda: ravlt.init_segmentor(SEG_CK, precision='fp16'), ValueError, "'f32' or 'bf16'"),
        (lambda: ravlt.init_segmentor(SEG_CK, mode='sliding'), ValueError, "'whole' or 'slide'"),
        (lambda: ravlt.Config.fromstring('model = dict(type=)', name='cfg.py'), ValueError, 'cfg.py:1:'),
        (lambda: ravlt.imread('bad\0name.jpg'), ValueError, 'null byte'),
        (lambda: ravlt.imread(3), TypeError, 'file name'),
        (lambda: ravlt.mean_iou([np.zeros((2, 2))], [np.zeros((3, 3), np.uint8)], 2, 255), ValueError, 'shape'),
    ]
    bad = tmp_path / 'bad.jpg'
    bad.write_bytes(b'not an image at all')
    cases.append((lambda: ravlt.imread(str(bad)), ValueError, 'bad.jpg'))
    for fn, cls, msg in cases:
        with pytest.raises(cls, match=msg.replace('(', r'\(').replace(')', r'\)')) as e:
            fn()
        assert isinstance(e.value, ravlt.Error), (msg, type(e.value))  # both, as the issue asks
    cfg_py = tmp_path / 'cfg.py'
    cfg_py.write_text("model = dict(type='EncoderDecoder')\n")
    with pytest.raises(ValueError, match='a config file has no weights'):
        ravlt.init_segmentor(str(cfg_py))


def test_device():
    for ok in ('cpu', 'cpu:0', None):
        ravlt.init_segmentor(SEG_CK, device=ok).close()
    ravlt.init_detector(DET_CK, device='cpu:0').close()
    for bad in ('cuda', 'cuda:0', 'banana', 'CPU', 'mps', ''):
        with pytest.raises(ValueError, match='CPU only'):
            ravlt.init_segmentor(SEG_CK, device=bad)
        with pytest.raises(ValueError, match='CPU only'):
            ravlt.init_detector(DET_CK, device=bad)
    with pytest.raises(TypeError, match='device'):
        ravlt.init_detector(DET_CK, device=0)
    # mmdet's positional form init_detector(config, checkpoint, device)
    with pytest.raises(ValueError, match="device 'cuda:0'"):
        ravlt.init_detector('configs/x.py', DET_CK, 'cuda:0')
    with pytest.raises(ValueError, match='cfg_options'):
        ravlt.init_detector(DET_CK, cfg_options={'model.test_cfg.rcnn.score_thr': 0.5})


# ---- warnings -------------------------------------------------------------------------------

def test_library_warnings_reach_python(tmp_path):
    """Unused checkpoint keys and a truncated JPEG: RavltWarning (a UserWarning) at the caller's
    line; with warnings as errors the call raises it."""
    from test_inference import _with_extra_key
    ck = str(tmp_path / 'seg.safetensors')
    _with_extra_key(fx('e2e', 'semantic_fpn', 'weights.safetensors'), ck, 'decode_head.extra.weight')
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')
        m = ravlt.init_segmentor(ck)
    msgs = [x for x in w if issubclass(x.category, ravlt.RavltWarning)]
    assert len(msgs) == 1 and "decode_head.extra.weight" in str(msgs[0].message)
    assert issubclass(msgs[0].category, UserWarning)
    assert msgs[0].filename == __file__  # the caller's line, not the package's
    m.close()
    with warnings.catch_warnings():
        warnings.simplefilter('error', ravlt.RavltWarning)
        with pytest.raises(ravlt.RavltWarning, match='extra'):
            ravlt.init_segmentor(ck)
    raw = open(SEG_IMG, 'rb').read()
    trunc = tmp_path / 'trunc.jpg'
    trunc.write_bytes(raw[:len(raw) // 2])
    with pytest.warns(ravlt.RavltWarning, match='truncated JPEG'):
        a = ravlt.imread(str(trunc))
    assert a.shape == ravlt.imread(SEG_IMG).shape
    # a clean call warns nothing
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        ravlt.imread(SEG_IMG)


# ---- inputs ---------------------------------------------------------------------------------

def test_segmentor_image_forms(seg):
    m, ref = seg
    img = ravlt.imread(SEG_IMG)
    # lists / tuples of paths and arrays (mmseg: one map per image); pathlib paths
    out = ravlt.inference_segmentor(m, [img, pathlib.Path(SEG_IMG)])
    assert isinstance(out, list) and len(out) == 2
    assert all(o.dtype == np.int64 and np.array_equal(o, ref) for o in out)
    assert len(ravlt.inference_segmentor(m, (SEG_IMG,))) == 1
    assert np.array_equal(ravlt.inference_segmentor(m, imgs=[img])[0], ref)  # later mmseg 0.x's keyword
    with pytest.raises(TypeError, match='once'):
        ravlt.inference_segmentor(m)
    assert ravlt.inference_segmentor(m, []) == []
    # a view that is not contiguous (a crop) is the same as its copy
    crop = img[40:200:1, 30:250]
    a = ravlt.inference_segmentor(m, crop)[0]
    b = ravlt.inference_segmentor(m, np.ascontiguousarray(crop))[0]
    assert a.shape == (160, 220) and np.array_equal(a, b)
    # grey and BGRA arrays: as cv2.imread(IMREAD_COLOR) converts such files
    g = np.ascontiguousarray(crop[:, :, 1])
    assert np.array_equal(ravlt.inference_segmentor(m, g)[0],
                          ravlt.inference_segmentor(m, np.repeat(g[:, :, None], 3, axis=2))[0])
    bgra = np.concatenate([crop, np.full(crop.shape[:2] + (1,), 7, np.uint8)], axis=2)
    assert np.array_equal(ravlt.inference_segmentor(m, bgra)[0], b)


def test_detector_image_forms(det):
    m, ref = det
    out = ravlt.inference_detector(m, [pathlib.Path(DET_IMG)])
    assert isinstance(out, list) and len(out) == 1
    bbox, segm = out[0]
    assert all(np.array_equal(x, y) for x, y in zip(bbox, ref[0]))
    assert ravlt.inference_detector(m, ()) == []


def test_slide_windows_rectangular(seg, tmp_path):
    """crop_size / stride as mmseg's (h, w) tuples: (256, 256) is the CLI's --crop 256; a
    rectangular window is used as given; without mode='slide' (on a 'whole' checkpoint) or with
    a stride past the window they are errors, not ignored."""
    r = subprocess.run([BIN, '--quiet', 'segment', '--weights', SEG_CK, '--out-dir', str(tmp_path), '--format', 'png',
                        '--mode', 'slide', '--crop', '256', '--stride', '171', SEG_IMG], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    cli = ravlt.imread(str(tmp_path / 'image.png'), gray=True).astype(np.int64) - 1
    m = ravlt.init_segmentor(SEG_CK, mode='slide', crop_size=(256, 256), stride=(171, 171))
    assert m.test_cfg == dict(mode='slide', crop_size=(256, 256), stride=(171, 171))
    assert np.array_equal(ravlt.inference_segmentor(m, SEG_IMG)[0], cli)
    m.set_test_mode('slide', crop_size=(256, 384), stride=(171, 256))
    assert m.test_cfg.crop_size == (256, 384) and m.test_cfg.stride == (171, 256)
    rect = ravlt.inference_segmentor(m, SEG_IMG)[0]
    assert rect.shape == cli.shape and not np.array_equal(rect, cli)
    m.set_test_mode('whole')
    assert m.test_cfg == dict(mode='whole')
    assert np.array_equal(ravlt.inference_segmentor(m, SEG_IMG)[0], seg[1])
    m.close()
    with pytest.raises(ValueError, match="pass mode='slide'"):
        ravlt.init_segmentor(SEG_CK, crop_size=256)
    with pytest.raises(ValueError, match="pass mode='slide'"):
        ravlt.init_segmentor(SEG_CK, stride=(100, 100))
    with pytest.raises(ValueError, match='stride'):
        ravlt.init_segmentor(SEG_CK, mode='slide', crop_size=256, stride=300)
    for bad in ((256, 'a'), (256, 256, 3), 2.5, '256', (True, 3)):
        with pytest.raises(TypeError, match='crop_size must be an int or an'):
            ravlt.init_segmentor(SEG_CK, mode='slide', crop_size=bad)
    with pytest.raises(ValueError, match='crop_size must be in 1..65536'):
        ravlt.init_segmentor(SEG_CK, mode='slide', crop_size=(0, 256))


# ---- show_result ----------------------------------------------------------------------------

def mmseg_show(img, seg, palette, opacity):
    """mmseg 0.x BaseSegmentor.show_result's drawing, line by line."""
    palette = np.array(palette)
    color_seg = np.zeros((seg.shape[0], seg.shape[1], 3), dtype=np.uint8)
    for label, color in enumerate(palette):
        color_seg[seg == label, :] = color
    color_seg = color_seg[..., ::-1]
    img = img * (1 - opacity) + color_seg * opacity
    return img.astype(np.uint8)


def test_segmentor_show_result(seg, tmp_path):
    m, res = seg
    img = ravlt.imread(SEG_IMG)
    keep = img.copy()
    drawn = m.show_result(img, [res])
    assert np.array_equal(img, keep)  # the input is not drawn on
    assert drawn.dtype == np.uint8 and drawn.shape == img.shape
    assert np.array_equal(drawn, mmseg_show(img, res, m.PALETTE, 0.5))
    pal = np.random.RandomState(3).randint(0, 256, (m.num_classes, 3))
    assert np.array_equal(m.show_result(SEG_IMG, res, palette=pal, opacity=0.3), mmseg_show(img, res, pal, 0.3))
    # mmseg's positional order: (img, result, palette, win_name, show, wait_time, out_file, opacity)
    assert np.array_equal(m.show_result(img, [res], pal, '', False, 0, None, 0.3), mmseg_show(img, res, pal, 0.3))
    with pytest.raises(TypeError):
        m.show_result(img, [res], score_thr=0.5)  # a detector's keyword
    out = tmp_path / 'a' / 'b' / 'overlay.png'
    assert m.show_result(SEG_IMG, [res], out_file=str(out)) is None
    assert np.array_equal(ravlt.imread(str(out)), drawn)
    with pytest.raises(ValueError, match='opacity'):
        m.show_result(img, [res], opacity=0)
    with pytest.raises(ValueError, match='segmentation result'):
        m.show_result(img, [res[:10]])
    with pytest.raises(ValueError, match='palette'):
        m.show_result(img, [res], palette=[[1, 2, 3]])


def test_detector_show_result(det, tmp_path):
    m, res = det
    img = ravlt.imread(DET_IMG)
    assert np.array_equal(m.show_result(img, res, score_thr=1.0), img)  # nothing above 1.0: unchanged
    bbox, segm = res
    k = max(range(m.num_classes), key=lambda c: bbox[c][:, 4].max() if len(bbox[c]) else -1)
    i = int(np.argmax(bbox[k][:, 4]))
    x1, y1, x2, y2, s = bbox[k][i]
    only = ([b[:0] if c != k else b[i:i + 1] for c, b in enumerate(bbox)],
            [[] if c != k else [segm[k][i]] for c in range(m.num_classes)])
    drawn = m.show_result(img, only, score_thr=0.0, bbox_color='red', mask_color=(0, 0, 255))
    assert drawn.shape == img.shape and drawn.dtype == np.uint8
    changed = np.any(drawn != img, axis=2)
    mask = segm[k][i]
    # pixels changed only on the mask, the box's outline (thickness 2, anti-aliased) and the label tag
    ys, xs = np.nonzero(changed & ~mask)
    near_box = (xs >= x1 - 4) & (xs <= x2 + 4) & (ys >= y1 - 30) & (ys <= y2 + 4)
    assert near_box.all()
    inside = mask & (np.abs(np.arange(img.shape[1])[None, :] - x1) > 4) & (np.abs(np.arange(img.shape[0])[:, None] - y1) > 30)
    if inside.any():  # mmdet's mask blend: half the image, half the colour (blue in RGB: BGR (255, 0, 0))
        want = (img[inside].astype(np.float64) * 0.5 + np.array([255, 0, 0]) * 0.5).astype(np.uint8)
        got = drawn[inside]
        assert np.mean(np.all(got == want, axis=1)) > 0.9  # except where the box line / label cross it
    out = tmp_path / 'det.jpg'
    assert m.show_result(DET_IMG, res, out_file=out) is None and ravlt.imread(str(out)).shape == img.shape
    assert m.show_result(img, res[0], score_thr=0.5).shape == img.shape  # bbox_result alone
    # mmdet's positional order: (img, result, score_thr, bbox_color, text_color, mask_color, ...)
    assert np.array_equal(m.show_result(img, only, 0.0, 'red', (72, 101, 241), (0, 0, 255)), drawn)
    with pytest.raises(TypeError):
        m.show_result(img, res, opacity=0.5)  # a segmentor's keyword
    with pytest.raises(ValueError, match='bbox_color'):
        m.show_result(img, res, bbox_color='chartreuse')


def fake_pyplot(monkeypatch):
    calls = []
    plt = types.ModuleType('matplotlib.pyplot')
    for name in ('figure', 'imshow', 'title', 'tight_layout', 'show', 'pause', 'axis', 'close'):
        setattr(plt, name, (lambda n: lambda *a, **k: calls.append((n, a, k)))(name))
    mpl = types.ModuleType('matplotlib')
    mpl.pyplot = plt
    monkeypatch.setitem(sys.modules, 'matplotlib', mpl)
    monkeypatch.setitem(sys.modules, 'matplotlib.pyplot', plt)
    return calls


def test_show_with_and_without_matplotlib(seg, monkeypatch, tmp_path):
    m, res = seg
    img = ravlt.imread(SEG_IMG)
    calls = fake_pyplot(monkeypatch)
    assert m.show_result(img, [res], show=True, win_name='w') is None
    shown = [a[0] for n, a, k in calls if n == 'imshow']
    assert len(shown) == 1 and np.array_equal(shown[0], m.show_result(img, [res])[:, :, ::-1])  # RGB
    assert ('show', (), {}) in calls
    calls.clear()
    drawn = ravlt.show_result_pyplot(m, SEG_IMG, [res], title='t', fig_size=(4, 3), block=False,
                                     out_file=tmp_path / 'p.png')
    names = [n for n, a, k in calls]
    assert names == ['figure', 'imshow', 'title', 'tight_layout', 'show']
    assert calls[0][2] == {'figsize': (4, 3)} and calls[2][1] == ('t',) and calls[4][2] == {'block': False}
    assert np.array_equal(ravlt.imread(str(tmp_path / 'p.png')), drawn)
    # no matplotlib: a clear ImportError for showing, drawing still works
    monkeypatch.setitem(sys.modules, 'matplotlib', None)
    monkeypatch.setitem(sys.modules, 'matplotlib.pyplot', None)
    with pytest.raises(ImportError, match='python3-matplotlib'):
        m.show_result(img, [res], show=True)
    with pytest.raises(ImportError, match='needs matplotlib'):
        ravlt.show_result_pyplot(m, img, [res])
    assert m.show_result(img, [res]).shape == img.shape
    assert m.show_result(img, [res], show=True, out_file=str(tmp_path / 'o.png')) is None  # out_file wins


# ---- cfg, PALETTE, CLASSES ------------------------------------------------------------------

def test_cfg(seg, det, tmp_path):
    m, _ = seg
    cfg = m.cfg
    assert isinstance(cfg, ravlt.Config)
    assert cfg.filename == SEG_CK + ':config'
    assert cfg.model.type == 'EncoderDecoder' == cfg['model']['type']
    assert cfg.model.decode_head.num_classes == m.num_classes == cfg['model']['decode_head']['num_classes']
    assert cfg.model.backbone.type == 'GLTA'
    assert 'model' in cfg and 'no_such_key' not in cfg and 'model' in list(cfg)
    with pytest.raises(AttributeError):
        cfg.no_such_key
    with pytest.raises(KeyError):
        cfg['no_such_key']
    assert cfg.get('no_such_key', 3) == 3
    assert 'decode_head' in cfg.text and cfg.pretty_text == cfg.text
    cfg.dump(tmp_path / 'c.json')
    assert ravlt.Config.fromfile(tmp_path / 'c.json') == cfg
    (tmp_path / 'c.py').write_text(cfg.text)
    assert ravlt.Config.fromfile(tmp_path / 'c.py').to_dict() == cfg.to_dict()
    # the text a config without source gets parses back to the same values
    plain = ravlt.Config(cfg.to_dict())
    assert ravlt.Config.fromstring(plain.pretty_text).to_dict() == cfg.to_dict()
    # the training config beside the checkpoint (mmcv text)
    tc = ravlt.Config.fromfile(fx('e2e', 'semantic_fpn', 'train_config.py'))
    assert tc.model.decode_head.num_classes == m.num_classes
    d, _ = det
    assert d.cfg.model.type == 'MaskRCNN' and d.cfg.model.test_cfg.rcnn.score_thr == 0.05
    assert d.test_cfg.rcnn.mask_thr_binary == 0.5
    # a checkpoint without a config: what ravlt found
    w = ravlt.init_segmentor(fx('e2e', 'semantic_fpn', 'weights.safetensors'))
    assert w.cfg.model.type == 'EncoderDecoder' and w.cfg.model.decode_head.num_classes == w.num_classes
    assert w.cfg.model.test_cfg.mode == 'whole' and w.cfg.filename is None
    w.close()
    cd = ravlt.ConfigDict(a=dict(b=[dict(c=1)]))
    assert cd.a.b[0].c == 1
    cd.x = dict(y=2)
    assert cd['x'].y == 2 and copy.deepcopy(cd) == cd and pickle.loads(pickle.dumps(cd)) == cd


def test_palette_and_classes(seg, det):
    m, _ = seg
    assert len(m.PALETTE) == len(m.CLASSES) == m.num_classes
    assert all(len(c) == 3 and all(0 <= v <= 255 for v in c) for c in m.PALETTE)
    u = ravlt.init_segmentor(fx('e2e', 'upernet', 'checkpoint.pth'))
    assert u.num_classes == 150 and u.CLASSES[:3] == ('wall', 'building', 'sky')
    assert u.PALETTE[:3] == [[120, 120, 120], [180, 120, 120], [6, 230, 230]]  # mmseg's ADE20K palette
    u.close()
    d, _ = det
    assert d.CLASSES[:3] == ('person', 'bicycle', 'car') and len(d.PALETTE) == 80


# ---- package --------------------------------------------------------------------------------

def test_version():
    ver = ravlt.__version__
    cm = open(os.path.join(os.path.dirname(__file__), '..', '..', 'CMakeLists.txt')).read() \
        if os.path.exists(os.path.join(os.path.dirname(__file__), '..', '..', 'CMakeLists.txt')) else None
    if cm is not None:
        import re
        assert ver == re.search(r'project\(ravlt VERSION ([0-9.]+)', cm).group(1)
    assert ver == ravlt._lib.lib.rv_version().decode()
    assert os.path.exists(os.path.join(os.path.dirname(ravlt.__file__), 'py.typed'))


PUBLIC_MODULES = [ravlt, ravlt.apis, ravlt.config]


def public_names():
    for mod in PUBLIC_MODULES:
        for name in getattr(mod, '__all__', []):
            if name in ('cocotools', '__version__'):
                continue
            yield mod, name, getattr(mod, name)


def test_docstrings_and_type_hints():
    missing, unhinted = [], []
    for mod in PUBLIC_MODULES:
        if not (mod.__doc__ or '').strip():
            missing.append(mod.__name__)
    for mod, name, obj in public_names():
        if not (inspect.getdoc(obj) or '').strip():
            missing.append('%s.%s' % (mod.__name__, name))
        fns = []
        if inspect.isfunction(obj):
            fns.append(('%s.%s' % (mod.__name__, name), obj))
        elif inspect.isclass(obj) and obj.__module__.startswith('ravlt'):
            for mname, member in vars(obj).items():
                if mname.startswith('_') and mname not in ('__init__',):
                    continue
                f = member.fget if isinstance(member, property) else member
                f = f.__func__ if isinstance(f, staticmethod) else f
                if inspect.isfunction(f):
                    if mname != '__init__' and not (inspect.getdoc(f) or '').strip():
                        missing.append('%s.%s.%s' % (mod.__name__, name, mname))
                    fns.append(('%s.%s.%s' % (mod.__name__, name, mname), f))
        for label, f in fns:
            hints = typing.get_type_hints(f)
            params = [p for p in inspect.signature(f).parameters.values()
                      if p.name != 'self' and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
            if 'return' not in hints or any(p.name not in hints for p in params):
                unhinted.append(label)
    assert not missing, 'no docstring: %s' % missing
    assert not unhinted, 'incomplete type hints: %s' % unhinted
