#!/usr/bin/env python3
"""Python threads sharing one model (not a test): N inferences one after another in the main
thread, then the same N inferences from N Python threads at once on the same ravlt.Model;
prints one JSON line per N (wall times, their ratio, whether every output equals the first).
Uses whatever ravlt package is on PYTHONPATH and RAVLT_LIBRARY (bench/bench_shared.sh runs
it with the base's package and library, then the working tree's).

  PYTHONPATH=python RAVLT_LIBRARY=build/libravlt.so.0 python3 bench/bench_shared.py CKPT \
      [--name NAME] [--threads 2,4,8] [--rounds R] [--size HxW]
"""
import argparse
import json
import threading
import time

import numpy as np

import ravlt


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('checkpoint')
    p.add_argument('--name')
    p.add_argument('--threads', default='2,4,8')
    p.add_argument('--rounds', type=int, default=3)
    p.add_argument('--size', default='512x512')
    a = p.parse_args()
    h, w = (int(v) for v in a.size.lower().split('x'))
    m = ravlt.Model(a.checkpoint, name=a.name)
    ys, xs = np.mgrid[0:h, 0:w]
    img = np.stack([((xs // 64) * 37 + (ys // 48) * 91 + c * 53) % 200 for c in range(3)], -1).astype(np.uint8)

    def infer():
        if m.task == 'segment':
            return ravlt.inference_segmentor(m, img)[0]
        r = ravlt.inference_detector(m, img)
        return r[0] if isinstance(r, tuple) else r

    def same(x, y):
        if isinstance(x, np.ndarray):
            return np.array_equal(x, y)
        return len(x) == len(y) and all(np.array_equal(u, v) for u, v in zip(x, y))

    ref = infer()  # warm-up
    for n in (int(v) for v in a.threads.split(',')):
        tseq = tcon = float('inf')
        ok = True
        for _ in range(a.rounds):
            t0 = time.monotonic()
            outs = [infer() for _ in range(n)]
            tseq = min(tseq, time.monotonic() - t0)
            res = [None] * n
            start = threading.Barrier(n + 1)

            def run(i):
                start.wait()
                res[i] = infer()
            ts = [threading.Thread(target=run, args=(i,)) for i in range(n)]
            for t in ts:
                t.start()
            start.wait()
            t0 = time.monotonic()
            for t in ts:
                t.join()
            tcon = min(tcon, time.monotonic() - t0)
            ok = ok and all(same(ref, o) for o in outs + res)
        print(json.dumps({'checkpoint': a.checkpoint, 'python': True, 'n': n, 'sequential_s': round(tseq, 3),
                          'concurrent_s': round(tcon, 3), 'ratio': round(tcon / tseq, 3), 'identical': ok}),
              flush=True)


if __name__ == '__main__':
    main()
