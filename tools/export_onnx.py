#!/usr/bin/env python3
"""Export the repository's PyTorch ports (tools/ravlt_torch.py, seg_torch.py, det_torch.py)
to ONNX with torch.onnx (random weights as their `bench` commands build them), for
bench/ort_bench.js (ONNX Runtime) in bench/bench_models.sh. Needs only torch (Debian
python3-torch 1.13 exports without the `onnx` Python package).

  python3 tools/export_onnx.py MODEL --size HxW --out DIR [--opset 17]

MODEL and what the graph holds:
  ravlt-t/s/b/l          the backbone (GLTA, 4 outputs after extra_norms)
  upernet-t/s/b/l, fpn-t/s/b/l
                         backbone + decode head + resize to the input + softmax + argmax
                         (outputs: labels, and the decode head's logits for the check)
  cascade-t/s/b/l, maskrcnn-t/s/b/l, retinanet-t/s/b/l
                         backbone + FPN neck only: RPN proposals, RoIAlign and NMS (mmcv ops)
                         have no export here
DIR receives model.onnx, input.bin (float32 [1, 3, H, W]), ref.json (output names and
shapes) and out.N.bin (the PyTorch outputs, float32) for ort_bench.js's check.
A graph that cannot be exported (UperNet's adaptive pooling at a feature size its pool
scales do not divide) prints one line "export: REASON" and exits with status 3.
"""
import argparse
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ravlt_torch  # noqa: E402
import seg_torch  # noqa: E402


class SegGraph(nn.Module):
    """mmseg whole-mode simple_test (seg_torch.Segmentor.forward, ori size = input size),
    also returning the decode head's logits for the numeric check."""
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        logits = self.m.decode(self.m.backbone(x))
        up = seg_torch.resize(seg_torch.resize(logits, x.shape[2:]), x.shape[2:])
        return F.softmax(up, 1).argmax(1), logits


class NeckGraph(nn.Module):
    def __init__(self, backbone, neck):
        super().__init__()
        self.backbone, self.neck = backbone, neck

    def forward(self, x):
        return tuple(self.neck(list(self.backbone(x))))


def build(model):
    torch.manual_seed(0)
    arch, size = model.split("-")
    if arch == "ravlt":
        return ravlt_torch.make_model(model).eval(), "backbone"
    if arch in ("upernet", "fpn"):
        m = seg_torch.make_segmentor(model)
        seg_torch.randomize_bn(m, torch.Generator().manual_seed(1))
        return SegGraph(m).eval(), "segmentor"
    import det_torch
    bb = ravlt_torch.make_model("ravlt-" + size)
    dims = ravlt_torch.PRESETS["ravlt-" + size]["embed_dims"]
    if arch == "retinanet":
        m = det_torch.RetinaNet(bb, dims)
    else:
        m = det_torch.Detector(bb, dims, 80, det_torch.DET_PRESETS[arch])
    det_torch.randomize_bn(m, torch.Generator().manual_seed(1))
    return NeckGraph(m.backbone, m.neck).eval(), "backbone+neck"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("--size", required=True, help="input HxW")
    p.add_argument("--out", required=True)
    p.add_argument("--opset", type=int, default=17)
    a = p.parse_args()
    h, w = (int(v) for v in a.size.lower().split("x"))
    torch.set_num_threads(2)
    m, part = build(a.model)
    x = torch.randn(1, 3, h, w, generator=torch.Generator().manual_seed(2))
    os.makedirs(a.out, exist_ok=True)
    with torch.no_grad():
        outs = m(x)
        if isinstance(outs, torch.Tensor):
            outs = (outs,)
        names = ["out.%d" % i for i in range(len(outs))]
        try:
            torch.onnx.export(m, (x,), os.path.join(a.out, "model.onnx"), opset_version=a.opset,
                              input_names=["input"], output_names=names, do_constant_folding=True)
        except Exception as e:  # noqa: BLE001 (any exporter failure is reported, not raised)
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            print("export: %s" % msg[:200])
            return 3
    x.numpy().astype("float32").tofile(os.path.join(a.out, "input.bin"))
    ref = {"model": a.model, "part": part, "size": [h, w], "opset": a.opset, "outputs": []}
    for i, (n, o) in enumerate(zip(names, outs)):
        f = "out.%d.bin" % i
        o.float().numpy().tofile(os.path.join(a.out, f))
        ref["outputs"].append({"name": n, "shape": list(o.shape), "file": f,
                               "labels": o.dtype == torch.int64})
    with open(os.path.join(a.out, "ref.json"), "w") as fh:
        json.dump(ref, fh)
    print(json.dumps({"exported": a.model, "part": part, "size": [h, w],
                      "onnx_mb": os.path.getsize(os.path.join(a.out, "model.onnx")) / 1e6}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
