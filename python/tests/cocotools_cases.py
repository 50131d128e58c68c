"""The pycocotools API cases of the cocotools goldens: inputs made from fixed seeds, and one
runner that calls them on a pycocotools-like module set. tools/gen_cocotools_goldens.py runs
it on pycocotools 2.0.11 (outside the repository) and writes tests/fixtures/cocotools/; the
tests run it on ravlt.cocotools and compare (test_cocotools_golden.py)."""
import base64
import builtins
import contextlib
import io
import json
import zlib

import numpy as np


def make_inputs():
    """The datasets and results of the evaluation cases (deterministic)."""
    rng = np.random.RandomState(38)
    cats = [{'id': c, 'name': 'c%d' % c, 'supercategory': 's'} for c in (1, 2, 5)]
    images = [{'id': i, 'width': int(rng.randint(40, 120)), 'height': int(rng.randint(40, 120)),
               'file_name': '%d.jpg' % i} for i in range(1, 13)]
    anns, dets, segdets = [], [], []
    aid = 1
    for im in images:
        W, H = im['width'], im['height']
        for _ in range(rng.randint(0, 5)):
            w, h = float(rng.randint(3, W // 2)), float(rng.randint(3, H // 2))
            x, y = float(rng.randint(0, W - int(w))), float(rng.randint(0, H - int(h)))
            c = int(rng.choice([1, 2, 5]))
            crowd = int(rng.rand() < 0.15)
            poly = [x, y, x + w, y, x + w * 0.7, y + h, x, y + h * 0.8]
            if crowd:
                m = np.zeros((H, W), np.uint8)
                m[int(y):int(y + h), int(x):int(x + w)] = 1
                cnts, p, run = [], 0, 0
                for v in np.asfortranarray(m).reshape(-1, order='F'):
                    if v != p:
                        cnts.append(run)
                        run, p = 0, v
                    run += 1
                cnts.append(run)
                seg = {'size': [H, W], 'counts': [int(v) for v in cnts]}
            else:
                seg = [poly]
            anns.append({'id': aid, 'image_id': im['id'], 'category_id': c, 'bbox': [x, y, w, h],
                         'area': float(w * h * (0.8 if not crowd else 1.0)), 'iscrowd': crowd, 'segmentation': seg})
            aid += 1
            # detections near this object
            for _ in range(rng.randint(0, 4)):
                j = rng.randn(4) * 1.5
                b = [x + j[0], y + j[1], max(1.0, w + j[2]), max(1.0, h + j[3])]
                sc = float(np.round(rng.rand(), 3))
                cc = c if rng.rand() < 0.8 else int(rng.choice([1, 2, 5]))
                dets.append({'image_id': im['id'], 'category_id': cc, 'bbox': [float(v) for v in b], 'score': sc})
        for _ in range(rng.randint(0, 3)):  # false positives
            b = [float(rng.randint(0, W - 5)), float(rng.randint(0, H - 5)), 5.0, 5.0]
            dets.append({'image_id': im['id'], 'category_id': int(rng.choice([1, 2, 5])), 'bbox': b,
                         'score': float(np.round(rng.rand(), 3))})
    gt = {'info': {'description': 'golden'}, 'images': images, 'categories': cats, 'annotations': anns}
    # an annotation with an uncompressed RLE whose counts do not sum to h*w (bbox eval reads
    # only its box; pycocotools never looks at the mask there)
    im = images[0]
    gt_badrle = json.loads(json.dumps(gt))
    gt_badrle['annotations'].append({'id': 999, 'image_id': im['id'], 'category_id': 1, 'bbox': [1, 1, 5, 5],
                                     'area': 25.0, 'iscrowd': 0,
                                     'segmentation': {'size': [im['height'], im['width']], 'counts': [3, 4]}})
    # segm results: masks from boxes, some without a bbox, one with a size other than its image
    for k, d in enumerate(dets):
        imd = images[d['image_id'] - 1]
        H, W = imd['height'], imd['width']
        m = np.zeros((H, W), np.uint8)
        x, y, w, h = d['bbox']
        m[max(0, int(y)):int(y + h), max(0, int(x)):int(x + w)] = 1
        segdets.append({'image_id': d['image_id'], 'category_id': d['category_id'], 'score': d['score'],
                        'segmentation': {'size': [H, W], 'mask': m.tolist()}})
    segdets[3]['segmentation']['mask'] = np.ones((7, 9), np.uint8).tolist()  # size differs from the image
    # keypoints: one 'person' category, 17 keypoints
    kcats = [{'id': 1, 'name': 'person', 'supercategory': 'person', 'keypoints': ['k%d' % i for i in range(17)],
              'skeleton': [[1, 2], [2, 3]]}]
    kanns, kdets = [], []
    aid = 1
    for im in images:
        W, H = im['width'], im['height']
        for _ in range(rng.randint(0, 4)):
            w, h = float(rng.randint(20, W - 5)), float(rng.randint(20, H - 5))
            x, y = float(rng.randint(0, W - int(w))), float(rng.randint(0, H - int(h)))
            kx = x + rng.rand(17) * w
            ky = y + rng.rand(17) * h
            v = rng.choice([0, 1, 2], size=17, p=[0.3, 0.2, 0.5])
            if rng.rand() < 0.15:
                v[:] = 0
            kp = []
            for a, b, c in zip(kx, ky, v):
                kp += [float(np.round(a, 2)) if c else 0.0, float(np.round(b, 2)) if c else 0.0, int(c)]
            crowd = int(rng.rand() < 0.1)
            kanns.append({'id': aid, 'image_id': im['id'], 'category_id': 1, 'bbox': [x, y, w, h],
                          'area': float(w * h * 0.6), 'iscrowd': crowd, 'keypoints': kp,
                          'num_keypoints': int(np.count_nonzero(v)), 'segmentation': []})
            aid += 1
            for _ in range(rng.randint(0, 3)):
                dk = []
                for a, b in zip(kx, ky):
                    dk += [float(np.round(a + rng.randn() * 0.4, 2)), float(np.round(b + rng.randn() * 0.4, 2)), 1]
                kdets.append({'image_id': im['id'], 'category_id': 1, 'keypoints': dk,
                              'score': float(np.round(rng.rand(), 3))})
        if rng.rand() < 0.5:
            dk = []
            for _ in range(17):
                dk += [float(rng.randint(0, W)), float(rng.randint(0, H)), 1]
            kdets.append({'image_id': im['id'], 'category_id': 1, 'keypoints': dk, 'score': 0.05})
    kgt = {'images': images, 'categories': kcats, 'annotations': kanns}
    return {'gt': gt, 'gt_badrle': gt_badrle, 'dets': dets, 'segdets': segdets, 'kgt': kgt, 'kdets': kdets}


def _exc(e):
    """The builtin exception classes an exception is an instance of (what code catches)."""
    return sorted(c.__name__ for c in type(e).__mro__ if getattr(builtins, c.__name__, None) is c
                  and c not in (BaseException, object))


def _j(v):
    """JSON-able form of an output (floats kept exactly by json's repr)."""
    if isinstance(v, np.ndarray):
        if v.size > 64 and v.dtype == np.float64:  # exact and compact: the doubles' bytes
            b = base64.b64encode(zlib.compress(np.ascontiguousarray(v).tobytes(), 9)).decode()
            return {'f64z': b, 'dtype': 'f', 'shape': list(v.shape)}
        return {'ndarray': v.tolist(), 'dtype': v.dtype.kind, 'shape': list(v.shape)}
    if isinstance(v, np.generic):
        return _j(v.item())
    if isinstance(v, bytes):
        return {'bytes': v.decode('latin-1')}
    if isinstance(v, dict):
        return {str(k): _j(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_j(x) for x in v]
    return v


def unpack(v):
    """An array written by _j -> numpy (other values unchanged)."""
    if isinstance(v, dict) and 'f64z' in v:
        return np.frombuffer(zlib.decompress(base64.b64decode(v['f64z'])), dtype=np.float64).reshape(v['shape'])
    if isinstance(v, dict) and 'ndarray' in v:
        return np.array(v['ndarray'], dtype={'f': np.float64, 'b': bool, 'u': np.uint32, 'i': np.int64}.get(
            v['dtype'], None)).reshape(v['shape'])
    return v


def call(out, name, f):
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            r = f()
        out[name] = {'value': _j(r)}
    except Exception as e:  # noqa: BLE001 - the class is the result
        out[name] = {'raises': _exc(e)}


def _seg_results(segdets, mask):
    res = []
    for d in segdets:
        m = np.asfortranarray(np.array(d['segmentation']['mask'], dtype=np.uint8))
        r = mask.encode(m)
        r['counts'] = r['counts'].decode()
        res.append({'image_id': d['image_id'], 'category_id': d['category_id'], 'score': d['score'],
                    'segmentation': r})
    return res


def _evaluate(COCO, COCOeval, Params, gt, res, iou, tweak=None, extra=None):
    """COCO / loadRes / evaluate / accumulate / summarize and every record pycocotools keeps."""
    out = {}
    with contextlib.redirect_stdout(io.StringIO()) as so:
        cg = COCO()
        cg.dataset = json.loads(json.dumps(gt))
        cg.createIndex()
        cd = cg.loadRes(json.loads(json.dumps(res)))
        E = COCOeval(cg, cd, iou)
        if tweak:
            tweak(E.params)
        E.evaluate()
        E.accumulate()
        E.summarize()
    out['printed'] = [line for line in so.getvalue().splitlines() if line.startswith(' Average')]
    out['stats'] = _j(E.stats)
    for k in ('precision', 'recall', 'scores'):
        out[k] = _j(E.eval[k])
    out['counts'] = _j(E.eval['counts'])
    out['evalImgs'] = [None if e is None else {k: _j(v) for k, v in e.items()} for e in E.evalImgs]
    out['ious'] = sorted([[_j(k), _j(v)] for k, v in E.ious.items()], key=lambda kv: json.dumps(kv[0]))
    out['paramsEval'] = {'imgIds': _j(E._paramsEval.imgIds), 'catIds': _j(E._paramsEval.catIds)}
    out['dt_dataset'] = [{k: _j(a[k]) for k in sorted(a) if k != 'segmentation'} for a in cd.dataset['annotations']]
    if extra:
        extra(E, out)
    return out


def run_all(COCO, COCOeval, Params, mask, _mask, inputs):
    """Every case on the given modules: {case name: output or {'raises': [...]}}."""
    I = inputs
    out = {}
    # ---- mask API ----
    m = np.zeros((6, 5), np.uint8)
    m[1:4, 2:5] = 1
    mf = np.asfortranarray(m)
    call(out, 'encode_2d', lambda: mask.encode(mf))
    call(out, 'encode_3d', lambda: mask.encode(np.asfortranarray(np.stack([m, 1 - m], 2))))
    call(out, 'encode_bool', lambda: mask.encode(np.asfortranarray(m.astype(bool))))
    call(out, 'encode_values', lambda: mask.encode(np.asfortranarray(np.array([[0, 2], [3, 0], [3, 3]], np.uint8))))
    call(out, 'encode_255', lambda: mask.encode(np.asfortranarray(m * 255)))
    call(out, 'encode_float', lambda: mask.encode(np.asfortranarray(m.astype(np.float64) * 0.7)))
    call(out, 'encode_int256', lambda: mask.encode(np.asfortranarray(m.astype(np.int64) * 256)))
    call(out, 'encode_empty', lambda: mask.encode(np.asfortranarray(np.zeros((0, 3, 1), np.uint8))))
    r = mask.encode(mf)
    call(out, 'decode_one', lambda: mask.decode(r))
    call(out, 'decode_list', lambda: mask.decode([r, r]))
    call(out, 'decode_str_counts', lambda: mask.decode({'size': r['size'], 'counts': r['counts'].decode()}))
    call(out, 'decode_long', lambda: mask.decode(mask.frPyObjects({'size': [3, 4], 'counts': [2, 30]}, 3, 4)))
    call(out, 'decode_short_covered', lambda: mask.decode(
        mask.frPyObjects({'size': [3, 4], 'counts': [2, 3, 1]}, 3, 4)).reshape(-1, order='F')[:6])
    rles = {
        'valid': {'size': [10, 10], 'counts': [5, 10, 20, 3, 62]},
        'zero_runs': {'size': [10, 10], 'counts': [5, 0, 3, 2, 0, 4, 86]},
        'issue': {'size': [600, 800], 'counts': [0, 0, 3181458, 1350]},
        'first_zero': {'size': [10, 10], 'counts': [0, 7, 93]},
        'all_fg_empty': {'size': [10, 10], 'counts': [5, 0, 95]},
        'short': {'size': [3, 4], 'counts': [2, 3]},
        'long': {'size': [3, 4], 'counts': [2, 30]},
        'cross_cols': {'size': [4, 5], 'counts': [3, 6, 11]},
        'trailing_fg': {'size': [4, 4], 'counts': [10, 6]},
        'odd_zero_end': {'size': [4, 4], 'counts': [4, 4, 0, 8]},
    }
    for name, uc in rles.items():
        call(out, 'uc_' + name, lambda uc=uc: mask.frPyObjects(uc, 1, 1))
        c = mask.frPyObjects(uc, 1, 1)
        call(out, 'area_' + name, lambda c=c: mask.area(c))
        call(out, 'toBbox_' + name, lambda c=c: mask.toBbox(c))
        call(out, 'area_list_' + name, lambda c=c: mask.area([c, c]))
        call(out, 'toBbox_list_' + name, lambda c=c: mask.toBbox([c]))
    call(out, 'frUncompressedRLE_size', lambda: mask.frPyObjects([{'size': [2, 2], 'counts': [1, 3]}], 3, 4))
    call(out, 'frPyObjects_boxes_array', lambda: mask.frPyObjects(np.array([[1.0, 2, 3, 4], [0, 0, 9.5, 2]]), 10, 12))
    call(out, 'frPyObjects_polys', lambda: mask.frPyObjects([[1.5, 2, 8, 2.5, 7, 9, 2, 8], [0, 0, 3, 0, 3, 3]], 10, 12))
    call(out, 'frPyObjects_poly', lambda: mask.frPyObjects([1.5, 2, 8, 2.5, 7, 9, 2, 8], 10, 12))
    call(out, 'frPyObjects_empty', lambda: mask.frPyObjects([], 10, 12))
    call(out, 'frPyObjects_int', lambda: mask.frPyObjects(42, 10, 12))
    call(out, 'frPoly', lambda: _mask.frPoly([[0.2, 0.3, 9.7, 0.5, 5, 9.9]], 10, 10))
    call(out, 'frBbox', lambda: _mask.frBbox(np.array([[0.5, 0.5, 4.2, 3.3]]), 10, 10))
    a = mask.encode(mf)
    b = mask.encode(np.asfortranarray(np.roll(m, 1, axis=1)))
    other = mask.encode(np.asfortranarray(np.ones((6, 4), np.uint8)))
    call(out, 'merge_union', lambda: mask.merge([a, b]))
    call(out, 'merge_intersect', lambda: mask.merge([a, b], intersect=1))
    call(out, 'merge_sizes', lambda: mask.merge([a, other]))
    call(out, 'merge_one', lambda: mask.merge([a]))
    call(out, 'merge_empty', lambda: mask.merge([]))
    call(out, 'iou_rle', lambda: mask.iou([a, b], [b, a, other], [0, 1, 0]))
    call(out, 'iou_box', lambda: mask.iou([[0, 0, 4, 4], [1, 1, 5, 2.5]], [[2, 2, 4, 4], [0, 0, 1, 1], [9, 9, 1, 1]],
                                         [0, 1, 0]))
    call(out, 'iou_box_array', lambda: mask.iou(np.array([[0, 0, 4, 4.]]), np.array([[2, 2, 4, 4.]]), [1]))
    call(out, 'iou_empty', lambda: mask.iou([], [a], [0]))
    call(out, 'iou_crowd_len', lambda: mask.iou([a], [b], [0, 1]))
    call(out, 'iou_mixed', lambda: mask.iou([a], [[0, 0, 1, 1]], [0]))
    call(out, 'iou_bad_list', lambda: mask.iou([a, [1, 2]], [a], [0]))
    call(out, 'frString_toString', lambda: _mask._toString(_mask._frString([a, {'size': [2, 2], 'counts': '4'}])))
    call(out, 'frString_n', lambda: _mask._frString([a, b]).n)
    # ---- evaluation ----
    res_seg = _seg_results(I['segdets'], mask)
    for k in range(len(res_seg)):  # loadRes' bbox branch (every result needs its box)
        res_seg[k]['bbox'] = I['dets'][k]['bbox']
    # segm results whose first has no bbox: the mask branch (area = mask pixels, bbox = toBbox)
    res_seg_nobox = [dict(x) for x in res_seg]
    for x in res_seg_nobox:
        x.pop('bbox', None)

    def sub(p):  # accumulate(p) with a subset of the evaluated parameters
        def f(E, o):
            q = Params(iouType=E.params.iouType)
            q.imgIds = list(E.params.imgIds)[:7]
            q.catIds = list(E.params.catIds)[1:] if E.params.useCats else list(E.params.catIds)
            q.areaRng = [E.params.areaRng[0], E.params.areaRng[2]]
            q.areaRngLbl = [E.params.areaRngLbl[0], E.params.areaRngLbl[2]]
            q.maxDets = list(E.params.maxDets)[-2:] if len(E.params.maxDets) > 1 else list(E.params.maxDets)
            q.recThrs = np.linspace(0, 1, 11)
            q.useCats = E.params.useCats
            with contextlib.redirect_stdout(io.StringIO()):
                E.accumulate(q)
            o['acc_p'] = {k: _j(E.eval[k]) for k in ('precision', 'recall', 'scores', 'counts')}
            i0, c0 = E.params.imgIds[1], (E.params.catIds[0] if E.params.useCats else -1)
            with contextlib.redirect_stdout(io.StringIO()):
                o['evaluateImg'] = _j(E.evaluateImg(i0, c0, [10.0, 2000.0], 2))
                if E.params.iouType != 'keypoints':
                    o['computeIoU'] = _j(E.computeIoU(i0, c0))
                else:
                    o['computeOks'] = _j(E.computeOks(i0, c0))
        return f

    def box_tweak(p):
        p.maxDets = [1, 3, 100]

    call(out, 'eval_bbox', lambda: _evaluate(COCO, COCOeval, Params, I['gt'], I['dets'], 'bbox', extra=sub(0)))
    call(out, 'eval_bbox_maxdets', lambda: _evaluate(COCO, COCOeval, Params, I['gt'], I['dets'], 'bbox', box_tweak))
    call(out, 'eval_bbox_badrle', lambda: _evaluate(COCO, COCOeval, Params, I['gt_badrle'], I['dets'], 'bbox'))

    def nocats(p):
        p.useCats = 0

    call(out, 'eval_bbox_usecats0', lambda: _evaluate(COCO, COCOeval, Params, I['gt'], I['dets'], 'bbox', nocats,
                                                      extra=sub(0)))
    call(out, 'eval_segm', lambda: _evaluate(COCO, COCOeval, Params, I['gt'], res_seg, 'segm', extra=sub(0)))
    call(out, 'eval_segm_nobox', lambda: _evaluate(COCO, COCOeval, Params, I['gt'], res_seg_nobox, 'segm'))
    call(out, 'eval_bbox_of_segm_results', lambda: _evaluate(COCO, COCOeval, Params, I['gt'], res_seg_nobox, 'bbox'))
    call(out, 'eval_kpts', lambda: _evaluate(COCO, COCOeval, Params, I['kgt'], I['kdets'], 'keypoints', extra=sub(0)))

    def sig(p):
        p.kpt_oks_sigmas = np.linspace(0.03, 0.12, 17)

    call(out, 'eval_kpts_sigmas', lambda: _evaluate(COCO, COCOeval, Params, I['kgt'], I['kdets'], 'keypoints', sig))

    def kp_nocats(p):
        p.useCats = 0

    call(out, 'eval_kpts_usecats0', lambda: _evaluate(COCO, COCOeval, Params, I['kgt'], I['kdets'], 'keypoints',
                                                      kp_nocats))
    # string image ids
    sgt = json.loads(json.dumps(I['gt']))
    for im in sgt['images']:
        im['id'] = 'img%03d' % im['id']
    for a in sgt['annotations']:
        a['image_id'] = 'img%03d' % a['image_id']
    sdets = [dict(d, image_id='img%03d' % d['image_id']) for d in I['dets']]
    call(out, 'eval_bbox_string_ids', lambda: _evaluate(COCO, COCOeval, Params, sgt, sdets, 'bbox'))

    # ---- loadRes and the COCO getters ----
    def getters():
        with contextlib.redirect_stdout(io.StringIO()):
            cg = COCO()
            cg.dataset = json.loads(json.dumps(I['gt']))
            cg.createIndex()
        return {'getAnnIds': cg.getAnnIds(imgIds=[1, 2, 3], catIds=[1, 5], areaRng=[10, 500]),
                'getAnnIds_crowd': cg.getAnnIds(iscrowd=True), 'getCatIds': cg.getCatIds(catNms=['c2', 'c5']),
                'getImgIds': sorted(cg.getImgIds(catIds=[1, 2])), 'loadImgs': cg.loadImgs(3),
                'loadCats': cg.loadCats([5, 1]), 'annToMask': cg.annToMask(cg.anns[2]).tolist(),
                'annToRLE': cg.annToRLE(cg.anns[3])}
    call(out, 'getters', getters)

    def loadres_numpy():
        with contextlib.redirect_stdout(io.StringIO()):
            cg = COCO()
            cg.dataset = json.loads(json.dumps(I['gt']))
            cg.createIndex()
            arr = np.array([[d['image_id']] + d['bbox'] + [d['score'], d['category_id']] for d in I['dets']])
            cd = cg.loadRes(arr)
            E = COCOeval(cg, cd, 'bbox')
            E.evaluate()
            E.accumulate()
            E.summarize()
        return {'stats': E.stats, 'n': len(cd.dataset['annotations'])}
    call(out, 'loadres_numpy', loadres_numpy)

    def loadres_bad_image():
        with contextlib.redirect_stdout(io.StringIO()):
            cg = COCO()
            cg.dataset = json.loads(json.dumps(I['gt']))
            cg.createIndex()
            cg.loadRes([{'image_id': 12345, 'category_id': 1, 'bbox': [1, 1, 2, 2], 'score': 0.5}])
    call(out, 'loadres_bad_image', loadres_bad_image)

    def loadres_not_list():
        with contextlib.redirect_stdout(io.StringIO()):
            cg = COCO()
            cg.dataset = json.loads(json.dumps(I['gt']))
            cg.createIndex()
            cg.loadRes({'image_id': 1})
    call(out, 'loadres_not_list', loadres_not_list)

    def summarize_first():
        with contextlib.redirect_stdout(io.StringIO()):
            cg = COCO()
            cg.dataset = json.loads(json.dumps(I['gt']))
            cg.createIndex()
            E = COCOeval(cg, cg.loadRes(json.loads(json.dumps(I['dets']))), 'bbox')
            E.summarize()
    call(out, 'summarize_before_accumulate', summarize_first)
    call(out, 'params_bad_type', lambda: Params('polygon'))
    call(out, 'params_kp', lambda: {k: v for k, v in vars(Params('keypoints')).items()})
    return out
