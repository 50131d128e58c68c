#!/usr/bin/env python3
"""Time the official RAVLT backbone (GLTA in qhfan/RALA's detection/mmdet/models/backbones/
RALA.py) in PyTorch, for bench/bench_models.sh's "official" column.

The official file is not part of this repository: point --rala (or RAVLT_OFFICIAL_RALA) at
a copy of it from a clone of https://github.com/qhfan/RALA. It imports timm, einops, fvcore,
mmcv_custom and mmdet, none of which Debian packages; the few names it takes from them are
provided here (DropPath as identity at inference, trunc_normal_, the registry decorators,
and einops.rearrange for the two patterns the file uses), so Debian's python3-torch runs it
unchanged. Random weights (the file's own init), eval mode, no_grad.

  RAVLT_OFFICIAL_RALA=~/RALA/detection/mmdet/models/backbones/RALA.py \\
      python3 tools/official_bench.py ravlt-s --size 512x512 --threads 2 --runs 3 [--json]
"""
import argparse
import importlib.util
import json
import os
import sys
import types

import torch
import torch.nn as nn

from ravlt_torch import time_forward  # the timing loop of the port's bench (tools/)

# backbone settings of the official configs (detection/configs/RALA/maskrcnn_t_1x.py, _s_1x.py;
# parameter counts equal ravlt info's: 13,347,328 and 24,040,896)
PRESETS = {
    "ravlt-t": dict(embed_dims=[64, 128, 256, 512], depths=[2, 2, 6, 2], num_heads=[1, 2, 4, 8],
                    mlp_ratios=[3.5] * 4, layerscales=[True] * 4, layer_init_values=[1] * 4),
    "ravlt-s": dict(embed_dims=[64, 128, 320, 512], depths=[3, 5, 9, 3], num_heads=[1, 2, 5, 8],
                    mlp_ratios=[3.5] * 4, layerscales=[True] * 4, layer_init_values=[1] * 4),
}


def rearrange(x, pattern, **dims):
    """einops.rearrange for the two patterns RALA.py uses."""
    p = " ".join(pattern.split())
    if p == "b (m n d) h w -> m b n (h w) d":
        b, c, h, w = x.shape
        m, n = dims["m"], dims["n"]
        return x.reshape(b, m, n, c // (m * n), h * w).permute(1, 0, 2, 4, 3)
    if p == "b n (h w) d -> b (n d) h w":
        b, n, hw, d = x.shape
        return x.permute(0, 1, 3, 2).reshape(b, n * d, dims["h"], dims["w"])
    raise NotImplementedError("rearrange pattern not provided here: " + pattern)


def unavailable(name):
    def f(*a, **k):
        raise NotImplementedError(name + " is not provided by tools/official_bench.py")
    return f


class DropPath(nn.Module):  # identity at inference (timm's is too, in eval mode)
    def __init__(self, drop_prob=0.0):
        super().__init__()

    def forward(self, x):
        return x


class Registry:
    def register_module(self, *a, **k):
        return lambda cls: cls


def install_stand_ins():
    def mod(name, **attrs):
        m = types.ModuleType(name)
        m.__dict__.update(attrs)
        m.__path__ = []  # a package, so that submodules resolve
        sys.modules[name] = m
        return m

    mod("timm")
    mod("timm.models")
    mod("timm.models.layers", DropPath=DropPath, to_2tuple=lambda v: v if isinstance(v, tuple) else (v, v),
        trunc_normal_=nn.init.trunc_normal_)
    mod("timm.models.registry", register_model=lambda f: f)
    mod("timm.models.vision_transformer", _cfg=lambda **k: dict(k))
    mod("fvcore")
    mod("fvcore.nn", FlopCountAnalysis=unavailable("FlopCountAnalysis"),
        flop_count_table=unavailable("flop_count_table"))
    mod("einops", rearrange=rearrange, einsum=unavailable("einops.einsum"))
    mod("einops.layers")
    mod("einops.layers.torch", Rearrange=unavailable("einops Rearrange"))
    mod("mmcv_custom", load_checkpoint=unavailable("load_checkpoint"))
    mod("mmdet")
    mod("mmdet.utils", get_root_logger=unavailable("get_root_logger"))
    mod("mmdet.models")
    mod("mmdet.models.builder", BACKBONES=Registry())
    mod("mmdet.models.backbones")


def load_official(path):
    install_stand_ins()
    spec = importlib.util.spec_from_file_location("mmdet.models.backbones.RALA", path)
    m = importlib.util.module_from_spec(spec)
    m.__package__ = "mmdet.models.backbones"
    sys.modules[spec.name] = m
    spec.loader.exec_module(m)
    return m


def revert_sync_bn(module):
    """SyncBatchNorm (the official PatchEmbed/PatchMerging; GPU only) as BatchNorm2d, the
    same parameters and statistics, as mmcv's revert_sync_batchnorm does for CPU inference."""
    for name, child in module.named_children():
        if isinstance(child, nn.SyncBatchNorm):
            bn = nn.BatchNorm2d(child.num_features, child.eps, child.momentum, child.affine,
                                child.track_running_stats)
            bn.load_state_dict(child.state_dict())
            setattr(module, name, bn)
        else:
            revert_sync_bn(child)
    return module


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", choices=sorted(PRESETS))
    ap.add_argument("--rala", default=os.environ.get("RAVLT_OFFICIAL_RALA"),
                    help="path of the official RALA.py (default: $RAVLT_OFFICIAL_RALA)")
    ap.add_argument("--size", default="512x512")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if not a.rala or not os.path.isfile(a.rala):
        print("official_bench.py: the official RALA.py not found (--rala or RAVLT_OFFICIAL_RALA: %s)" % a.rala,
              file=sys.stderr)
        return 1
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    official = load_official(a.rala)
    model = revert_sync_bn(official.GLTA(out_indices=(0, 1, 2, 3), drop_path_rate=0.0, **PRESETS[a.model]))
    model.eval()  # GLTA's train() (norm_eval) returns None: not chained
    h, w = (int(v) for v in a.size.lower().split("x"))
    x = torch.randn(1, 3, h, w)
    timing, outs = time_forward(model, x, a.runs)
    shapes = [list(o.shape) for o in outs]
    rss = timing["peak_rss_mb"]
    res = {"model": a.model, "size": a.size, "threads": a.threads, **timing,
           "outputs": shapes, "code": "official GLTA (" + os.path.basename(a.rala) + ")"}
    if a.json:
        print(json.dumps(res))
    else:
        print("official %s %s threads %d: median %.1f ms (min %.1f, max %.1f), peak RSS %.0f MB, outputs %s" %
              (a.model, a.size, a.threads, res["median_ms"], res["min_ms"], res["max_ms"], rss, shapes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
