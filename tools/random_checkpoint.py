#!/usr/bin/env python3
"""A whole segmentor with random weights as an mmseg-style checkpoint, for benchmarks that load
models through the public API (bench/bench_shared.sh): the repository's PyTorch port
(tools/seg_torch.py, official key names) with PyTorch's default initialisation, BN statistics
randomised, saved as {'state_dict': ...} (.pth, loadable with --name). Needs torch.

  python3 tools/random_checkpoint.py upernet-s OUT.pth [--seed 0]
  ravlt info OUT.pth --name upernet-ravlt-s
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seg_torch  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('model', help='upernet-s|b|l or fpn-t|s|b|l (tools/seg_torch.py names)')
    p.add_argument('out')
    p.add_argument('--seed', type=int, default=0)
    a = p.parse_args()
    torch.manual_seed(a.seed)
    m = seg_torch.make_segmentor(a.model)
    seg_torch.randomize_bn(m, torch.Generator().manual_seed(a.seed + 1))
    sd = {k: v.detach().clone() for k, v in m.state_dict().items()}
    tmp = a.out + '.part'
    torch.save({'state_dict': sd, 'meta': {}}, tmp)
    os.replace(tmp, a.out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
