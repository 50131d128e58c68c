#!/usr/bin/env python3
"""Float32 error of Winograd F(m x m, 3 x 3) for a choice of interpolation points, as
kernels/winograd.c uses it: the transforms built exactly (Toom-Cook, fractions), the weight
transform in float64 rounded once, the input transform, the a^2 channel GEMMs and the output
transform in float32, against a float64 direct correlation. Inputs are ReLU-like feature
maps over 256 channels, weights scaled as a trained conv's. Prints, per point set, the RMS
and the 99.9th percentile of |error| over the output RMS. Needs numpy only.

  python3 tools/winograd_points.py            # the sets compared for kernels/winograd.c
  python3 tools/winograd_points.py --show 4 0 1 -1 1/2 -2   # print A^T, G, B^T of one set
"""
import argparse
from fractions import Fraction as Fr

import numpy as np


def polymul(p, q):
    r = [Fr(0)] * (len(p) + len(q) - 1)
    for i, x in enumerate(p):
        for k, y in enumerate(q):
            r[i + k] += x * y
    return r


def toom(m, pts, r=3):
    """A^T [m x a], G [a x r], B^T [a x a] for the finite points pts (a - 1 of them) and
    infinity, such that y = A^T ((G g) * (B^T d)) is the correlation of d [a] with g [r]."""
    a = m + r - 1
    assert len(pts) == a - 1
    at = [[p ** i for p in pts] + [Fr(int(i == m - 1))] for i in range(m)]
    g = []
    for j, p in enumerate(pts):
        den = Fr(1)
        for l, q in enumerate(pts):
            if l != j:
                den *= p - q
        g.append([p ** k / den for k in range(r)])
    g.append([Fr(0)] * (r - 1) + [Fr(1)])
    bt = []
    for j in range(a - 1):
        poly = [Fr(1)]
        for l, q in enumerate(pts):
            if l != j:
                poly = polymul(poly, [-q, Fr(1)])
        bt.append(poly + [Fr(0)])
    poly = [Fr(1)]
    for q in pts:
        poly = polymul(poly, [-q, Fr(1)])
    bt.append(poly)
    return at, g, bt


def error(m, pts, cin=256, cout=64, tiles=1500, seed=1):
    rng = np.random.default_rng(seed)
    at, g, bt = (np.array([[float(x) for x in row] for row in mat]) for mat in toom(m, pts))
    a = m + 2
    d = np.abs(rng.standard_normal((tiles, cin, a, a))) + 0.5 * rng.standard_normal((tiles, cin, a, a))
    w = rng.standard_normal((cout, cin, 3, 3)) / np.sqrt(9 * cin)
    ref = np.zeros((tiles, cout, m, m))
    for i in range(m):
        for j in range(m):
            ref[:, :, i, j] = np.einsum("tcxy,kcxy->tk", d[:, :, i:i + 3, j:j + 3], w, optimize=True)
    u = np.einsum("ax,kcxy,by->kcab", g, w, g, optimize=True).astype(np.float32)
    bt32, at32 = bt.astype(np.float32), at.astype(np.float32)
    v = (bt32 @ d.astype(np.float32) @ bt32.T).astype(np.float32)
    ur = u.transpose(2, 3, 0, 1).reshape(a * a, cout, cin)
    vr = v.transpose(2, 3, 1, 0).reshape(a * a, cin, tiles)
    mm = np.matmul(ur, vr).reshape(a, a, cout, tiles).transpose(3, 2, 0, 1)
    y = at32 @ mm @ at32.T
    e = np.abs(y - ref)
    rms = np.sqrt((ref ** 2).mean())
    return np.sqrt((e ** 2).mean()) / rms, np.percentile(e, 99.9) / rms


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--show", nargs="+", metavar="M_OR_POINT",
                    help="m then the finite points: print the transforms")
    args = ap.parse_args()
    if args.show:
        m, pts = int(args.show[0]), [Fr(p) for p in args.show[1:]]
        for name, mat in zip(("A^T", "G", "B^T"), toom(m, pts)):
            print(name)
            for row in mat:
                print("  " + " ".join("%6s" % x for x in row))
        return
    sets = [(2, "0 1 -1"), (3, "0 1 -1 2"), (3, "0 1 -1 1/2"), (4, "0 1 -1 2 -2"),
            (4, "0 1 -1 1/2 -2"), (4, "0 1 -1 2 -1/2"), (4, "0 1 -1 1/2 -1/2"),
            (4, "0 1 -1 2 1/2")]
    print("m  points            rms/rms(y)  p99.9/rms(y)")
    for m, p in sets:
        rms, p999 = error(m, [Fr(x) for x in p.split()])
        print("%d  %-16s  %.3g    %.3g" % (m, p, rms, p999))


if __name__ == "__main__":
    main()
