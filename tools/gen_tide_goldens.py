#!/usr/bin/env python3
"""Generates the TIDE goldens of tests/data/analysis/ with the reference code, OUTSIDE the
repository: dbolya/tide 1.0.1 (tidecv) and pycocotools, neither of which the project installs
or vendors.

    /usr/bin/python3 tools/gen_tide_goldens.py TIDE_DIR PYCOCO_DIR OUT_DIR

TIDE_DIR: a checkout of github.com/dbolya/tide at v1.0.1 (the folder holding tidecv/);
PYCOCO_DIR: a pycocotools built in place (the PythonAPI folder of cocodataset/cocoapi or
ppwwyyxx/cocoapi after `python3 setup.py build_ext --inplace`). tidecv imports cv2, seaborn and
pandas for its plots only: when they are missing, empty stand-ins take their place (nothing
computed here uses them).

For each case (synthetic data with every error type: class, localisation, both, duplicate,
background and missed, crowd regions, ties of equal scores, more than 100 detections in an
image, a category missing from the annotations, images without gt or without detections) it
writes OUT_DIR/<case>/gt.json, dt_bbox.json, dt_segm.json and expected.json:
  {"bbox"|"segm": {"ap": TIDE's AP50, "main": {Cls..Miss}, "special": {FalsePos, FalseNeg},
                   "counts": {Cls..Miss}, "printed": what tide.summarize() printed}}
(TIDE's numbers unrounded, in AP points as it prints them with %.2f).
"""
import contextlib
import io
import json
import os
import sys
import tempfile
import types

import numpy as np


def stub_modules():
    """cv2 / seaborn / pandas are only used by tidecv's plotting."""
    for name in ("cv2", "pandas"):
        try:
            __import__(name)
        except ImportError:
            m = types.ModuleType(name)
            m.FONT_HERSHEY_SIMPLEX = 0  # a default argument value of tidecv's Error.show
            sys.modules[name] = m
    try:
        import seaborn  # noqa: F401
    except ImportError:
        sb = types.ModuleType("seaborn")
        sb.set_palette = lambda *a, **k: None
        sb.set = lambda *a, **k: None
        sb.color_palette = lambda *a, **k: [(0.1 * i, 0.5, 0.5) for i in range(10)]
        sys.modules["seaborn"] = sb
    import matplotlib
    matplotlib.use("Agg")


W, H = 160, 120
CATS = [1, 2, 3, 5, 8]


def clip_box(x, y, w, h):
    x = min(max(x, 0.0), W - 2.0)
    y = min(max(y, 0.0), H - 2.0)
    w = max(1.5, min(w, W - x))
    h = max(1.5, min(h, H - y))
    return [round(x, 2), round(y, 2), round(w, 2), round(h, 2)]


def poly_of(b, rng):
    """an octagon-ish polygon inside box b"""
    x, y, w, h = b
    pts = []
    for k in range(8):
        a = 2 * np.pi * k / 8
        r = 0.75 + 0.25 * rng.random()
        pts += [round(x + w / 2 + r * w / 2 * np.cos(a), 2), round(y + h / 2 + r * h / 2 * np.sin(a), 2)]
    return [pts]


def make_case(seed, n_img, ties, many, crowd_rate):
    rng = np.random.default_rng(seed)
    images, anns, dets = [], [], []
    aid = 1
    for i in range(n_img):
        img_id = 1000 + 7 * i
        images.append({"id": img_id, "width": W, "height": H, "file_name": "img%03d.jpg" % i})
        ng = int(rng.integers(0, 6)) if i % 9 else 0
        gts = []
        for _ in range(ng):
            w, h = rng.uniform(8, 60), rng.uniform(8, 50)
            b = clip_box(rng.uniform(0, W - w), rng.uniform(0, H - h), w, h)
            cat = int(rng.choice(CATS))
            crowd = int(rng.random() < crowd_rate)
            seg = poly_of(b, rng)
            anns.append({"id": aid, "image_id": img_id, "category_id": cat, "bbox": b, "area": b[2] * b[3],
                         "iscrowd": crowd, "segmentation": seg})
            gts.append((b, cat, crowd, seg))
            aid += 1

        def det(b, cat, score, seg=None):
            b = clip_box(*b)
            if ties:
                score = round(score * 10) / 10
            dets.append({"image_id": img_id, "category_id": cat, "bbox": b, "score": float(round(score, 4)),
                         "poly": seg if seg is not None else poly_of(b, rng)})

        for (b, cat, crowd, seg) in gts:
            x, y, w, h = b
            u = rng.random()
            if crowd:  # detections inside the crowd region (ignored), one of another class
                det([x + 1, y + 1, w * 0.5, h * 0.5], cat, rng.uniform(0.2, 0.9))
                if rng.random() < 0.5:
                    det([x + 2, y + 2, w * 0.4, h * 0.4], int(rng.choice(CATS)), rng.uniform(0.2, 0.9))
                continue
            if u < 0.45:  # true positive (+ sometimes a duplicate)
                det([x + rng.uniform(-2, 2), y + rng.uniform(-2, 2), w * rng.uniform(0.9, 1.1), h * rng.uniform(0.9, 1.1)],
                    cat, rng.uniform(0.3, 1.0), seg)
                if rng.random() < 0.35:
                    det([x + rng.uniform(-3, 3), y + rng.uniform(-3, 3), w, h], cat, rng.uniform(0.05, 0.6))
            elif u < 0.55:  # localisation error
                det([x + w * 0.45, y + h * 0.3, w, h], cat, rng.uniform(0.1, 0.9))
            elif u < 0.65:  # class error
                other = [c for c in CATS if c != cat]
                det([x, y, w, h], int(rng.choice(other)), rng.uniform(0.1, 0.9), seg)
            elif u < 0.72:  # both
                other = [c for c in CATS if c != cat]
                det([x + w * 0.5, y + h * 0.4, w, h], int(rng.choice(other)), rng.uniform(0.1, 0.9))
            elif u < 0.80:  # two localisation errors on one gt (one fixed, one suppressed)
                det([x + w * 0.4, y, w, h], cat, rng.uniform(0.1, 0.9))
                det([x, y + h * 0.45, w, h], cat, rng.uniform(0.1, 0.9))
            # else: missed
        for _ in range(int(rng.integers(0, 3))):  # background
            w, h = rng.uniform(5, 30), rng.uniform(5, 30)
            det([rng.uniform(0, W - w), rng.uniform(0, H - h), w, h], int(rng.choice(CATS)), rng.uniform(0.0, 0.8))
        if rng.random() < 0.1:  # a category the annotations do not have
            det([10, 10, 20, 20], 99, rng.uniform(0.1, 0.9))
        if many and i % 5 == 1:  # more than 100 detections: TIDE keeps the best 100
            for _ in range(130):
                w, h = rng.uniform(5, 40), rng.uniform(5, 40)
                det([rng.uniform(0, W - w), rng.uniform(0, H - h), w, h], int(rng.choice(CATS)), rng.uniform(0.0, 0.5))
    if not any(d["image_id"] == images[-1]["id"] for d in dets):
        pass  # the last image may have no detections: kept as it is
    cats = [{"id": c, "name": "cat%d" % c} for c in CATS]
    return {"images": images, "annotations": anns, "categories": cats}, dets


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    tide_dir, pycoco_dir, out = sys.argv[1:]
    sys.path.insert(0, os.path.abspath(pycoco_dir))
    sys.path.insert(0, os.path.abspath(tide_dir))
    os.environ.setdefault("TIDE_PATH", tempfile.mkdtemp(prefix="tide_"))
    stub_modules()
    from pycocotools import mask as mask_utils
    from tidecv import TIDE, datasets

    cases = {"01_mixed": (11, 40, False, False, 0.06),
             "02_ties_crowd": (22, 36, True, False, 0.15),
             "03_many_dets": (33, 30, False, True, 0.05)}
    for name, (seed, n_img, ties, many, crowd_rate) in cases.items():
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        gt, dets = make_case(seed, n_img, ties, many, crowd_rate)
        with open(os.path.join(d, "gt.json"), "w") as f:
            json.dump(gt, f)
        bbox = [{k: v for k, v in x.items() if k != "poly"} for x in dets]
        segm = []
        for x in dets:
            rle = mask_utils.merge(mask_utils.frPyObjects(x["poly"], H, W))
            rle["counts"] = rle["counts"].decode("ascii")
            segm.append({"image_id": x["image_id"], "category_id": x["category_id"], "bbox": x["bbox"],
                         "score": x["score"], "segmentation": rle})
        with open(os.path.join(d, "dt_bbox.json"), "w") as f:
            json.dump(bbox, f)
        with open(os.path.join(d, "dt_segm.json"), "w") as f:
            json.dump(segm, f)
        expected = {}
        for t, dt_file, mode in (("bbox", "dt_bbox.json", TIDE.BOX), ("segm", "dt_segm.json", TIDE.MASK)):
            tide = TIDE()
            with contextlib.redirect_stdout(io.StringIO()) as printed:
                tide.evaluate(datasets.COCO(os.path.join(d, "gt.json")),
                              datasets.COCOResult(os.path.join(d, dt_file), name="run"), mode=mode)
                tide.summarize()
            run = tide.runs["run"]
            main_e = tide.get_main_errors()["run"]
            special = tide.get_special_errors()["run"]
            counts = {k.short_name: v for k, v in run.count_errors().items()}
            expected[t] = {"ap": run.ap, "main": main_e, "special": special, "counts": counts,
                           "printed": printed.getvalue()}
        with open(os.path.join(d, "expected.json"), "w") as f:
            json.dump(expected, f, indent=1)
        print(name, {t: (round(v["ap"], 2), {k: round(x, 2) for k, x in v["main"].items()}) for t, v in expected.items()})


if __name__ == "__main__":
    main()
