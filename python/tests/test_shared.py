"""One model shared by Python threads, and Ctrl-C during a call (python/ravlt/_lib.py
`interruptible`, rv_ctx_cancel):
- four threads running inference on one model at once get outputs identical to one call made
  alone (segmentor: label maps; detector with masks: boxes, scores, labels and masks);
- SIGINT to a python3 running a long aug-test segmentation raises KeyboardInterrupt within 1 s
  (10 s under the sanitizers, whose instrumented library runs a layer ~10x slower), and the
  same model then gives the same labels as before."""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np

import ravlt

from conftest import fx, ROOT

DEMO_SEG = os.path.join(ROOT, 'models', 'demo_seg.safetensors')


def _in_threads(fn, n=4):
    out = [None] * n
    errs = []
    start = threading.Barrier(n)

    def run(i):
        try:
            start.wait()
            out[i] = fn()
        except BaseException as e:  # reported below
            errs.append(e)
    ts = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errs, errs
    return out


def test_threads_share_segmentor():
    img = fx('e2e', 'upernet', 'image.jpg')
    m = ravlt.init_segmentor(DEMO_SEG)
    ref = ravlt.inference_segmentor(m, img)[0]
    for seg in _in_threads(lambda: ravlt.inference_segmentor(m, img)[0]):
        assert np.array_equal(seg, ref)


def test_threads_share_detector():
    ck, img = fx('e2e', 'mask_rcnn', 'checkpoint.pth'), fx('e2e', 'mask_rcnn', 'image.jpg')
    m = ravlt.init_detector(ck)
    ref_boxes, ref_masks = ravlt.inference_detector(m, img)
    assert sum(len(b) for b in ref_boxes) > 0
    for boxes, masks in _in_threads(lambda: ravlt.inference_detector(m, img)):
        assert len(boxes) == len(ref_boxes)
        for b, rb in zip(boxes, ref_boxes):
            assert np.array_equal(b, rb)
        for ms, rms in zip(masks, ref_masks):
            assert len(ms) == len(rms)
            assert all(np.array_equal(x, y) for x, y in zip(ms, rms))


CHILD = textwrap.dedent('''
    import sys, time
    import numpy as np
    import ravlt
    m = ravlt.init_segmentor(sys.argv[1])
    img = ravlt.imread(sys.argv[2])
    ref = ravlt.inference_segmentor(m, img)[0]
    print('calling', flush=True)
    t0 = time.monotonic()
    try:
        ravlt.inference_segmentor(m, img, aug_test=True, ratios=[3.0] * 32, flip=True)
        print('finished %.3f' % (time.monotonic() - t0), flush=True)
    except KeyboardInterrupt:
        print('interrupted', flush=True)
    again = ravlt.inference_segmentor(m, img)[0]
    print('same' if np.array_equal(again, ref) else 'different', flush=True)
''')


def test_ctrl_c_interrupts_a_call():
    sanitized = 'asan' in os.environ.get('LD_PRELOAD', '')
    bound = 10.0 if sanitized else 1.0
    p = subprocess.Popen([sys.executable, '-c', CHILD, DEMO_SEG, fx('e2e', 'upernet', 'image.jpg')],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == 'calling'
        time.sleep(0.5)  # inside the 64-pass call (seconds)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        line = p.stdout.readline().strip()
        waited = time.monotonic() - t0
        assert line == 'interrupted', (line, p.stderr.read())
        assert waited < bound, 'KeyboardInterrupt %.2f s after SIGINT' % waited
        assert p.stdout.readline().strip() == 'same'
        assert p.wait(timeout=120) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
