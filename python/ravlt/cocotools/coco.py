"""pycocotools.coco.COCO with the files read by libravlt (datasets/coco.h).

The evaluation never goes through Python objects: COCO(file) and loadRes(file | list | array)
hand the JSON (or the arrays) to the library, which reads them with pycocotools' rules. The
Python view (dataset, anns, imgs, cats, imgToAnns, catToImgs and the get*/load* methods) is
built the first time it is used, with the json module, exactly as pycocotools builds it.
Image and category ids may be strings (they are numbered in sorted order for the library);
file names may be str, bytes or pathlib paths.
"""
import copy
import ctypes
import itertools
import json
import os
import time
from collections import defaultdict
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from .. import _lib
from .._lib import lib, Ctx, Error
from . import mask as maskUtils
from ._errors import (CocoAssertionError, CocoError, CocoKeyError, CocoTypeError, CocoValueError,
                      classify_load_error, os_error)

__all__ = ['COCO']

IOU_BBOX, IOU_SEGM, IOU_KEYPOINTS = 0, 1, 2
PathLike = Union[str, bytes, 'os.PathLike[str]']


def _isArrayLike(obj) -> bool:
    return hasattr(obj, '__iter__') and hasattr(obj, '__len__')


def _jdefault(o):
    if isinstance(o, (bytes, bytearray)):
        return o.decode('ascii')
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError('%r is not JSON serialisable' % (o,))


def _dumps(obj) -> bytes:
    return json.dumps(obj, default=_jdefault, allow_nan=True).encode('utf-8')


def _check_file(path) -> None:
    """The error open() gives pycocotools (FileNotFoundError, IsADirectoryError, ...) before the
    library reads the file."""
    if not os.path.isfile(path):
        try:
            with open(path, 'rb'):
                pass
        except OSError as e:
            raise os_error(e) from None


class _Handle:
    """A C object freed with its destructor when the Python object goes."""
    __slots__ = ('p', 'free')

    def __init__(self, p, free):
        self.p, self.free = p, free

    def __del__(self):
        if self.p:
            self.free(self.p)
            self.p = None


def _is_num_id(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _string_ids(ds) -> Optional[Dict[str, Dict[Any, int]]]:
    """When image or category ids are not numbers (pycocotools takes any hashable id): the maps
    id -> library id (1, 2, ... in sorted order, so the evaluation keeps pycocotools' order)."""
    if not isinstance(ds, dict):
        return None
    imgs = [im.get('id') for im in ds.get('images', []) if isinstance(im, dict)]
    cats = [c.get('id') for c in ds.get('categories', []) if isinstance(c, dict)]
    if all(_is_num_id(v) for v in imgs) and all(_is_num_id(v) for v in cats):
        return None
    maps = {}
    for key, ids in (('image', imgs), ('category', cats)):
        u = sorted(set(ids))  # TypeError for mixed str / int ids, as pycocotools' sorted()
        maps[key] = {v: i + 1 for i, v in enumerate(u)}
    return maps


def _remap_gt(ds, maps) -> dict:
    """A copy of the dataset with the library ids (only the id fields differ)."""
    im, ca = maps['image'], maps['category']
    out = dict(ds)
    out['images'] = [dict(x, id=im[x['id']]) for x in ds.get('images', [])]
    out['categories'] = [dict(x, id=ca[x['id']]) for x in ds.get('categories', [])]
    anns = []
    for a in ds.get('annotations', []):
        b = dict(a)
        if 'image_id' in a:
            b['image_id'] = im.get(a['image_id'], -1)
        if 'category_id' in a:
            b['category_id'] = ca.get(a['category_id'], -1)
        anns.append(b)
    out['annotations'] = anns
    return out


class COCO:
    """pycocotools.coco.COCO: a COCO annotation file (or dict) and its indexes.

    ``COCO(path)`` reads and checks the file with the library now (errors name the file and
    the entry); ``dataset``, ``anns``, ``imgs``, ``cats``, ``imgToAnns`` and ``catToImgs`` are
    built the first time they are used, as pycocotools builds them."""

    def __init__(self, annotation_file: Union[PathLike, dict, None] = None) -> None:
        self._dataset = None       # the Python view, built on first use
        self._indexed = False
        self._src = None           # ('file', path) or ('json', bytes): what the library reads
        self._c = {}               # load_segm -> _Handle(rv_coco *)
        self._res_of = None        # loadRes: the ground truth COCO
        self._res_src = None       # loadRes: ('file', path) | ('json', bytes) | ('arrays', dict)
        self._res_list = None      # loadRes: the list of dicts given
        self._res_c = {}           # iou type -> _Handle(rv_coco_results *)
        self._ids = None           # string ids: {'image': {id: library id}, 'category': {...}}
        self._kp = None            # keypoints results: n x 3K array (loadRes)
        if annotation_file is None:
            self._dataset = {}
            self._index()
        elif isinstance(annotation_file, dict):
            self._dataset = annotation_file
            self._set_json_src(annotation_file)
            self._index()
            self._gt_handle(False)
        else:
            print('loading annotations into memory...')
            tic = time.time()
            _check_file(annotation_file)
            self._src = ('file', os.fsencode(annotation_file))
            try:
                self._gt_handle(False)  # reads and checks the file now (errors name the file)
            except Error as e:
                self._load_fallback(annotation_file, e)
            print('Done (t={:0.2f}s)'.format(time.time() - tic))

    def _set_json_src(self, ds) -> None:
        self._ids = _string_ids(ds)
        self._src = ('json', _dumps(_remap_gt(ds, self._ids) if self._ids else ds))

    def _load_fallback(self, path, err) -> None:
        """The library refused the file: string ids are read here (then the library reads the
        renumbered JSON); anything else raises pycocotools' exception class."""
        try:
            with open(path, 'r') as f:
                ds = json.load(f)
        except ValueError as e:  # json.JSONDecodeError, as pycocotools
            raise CocoValueError('%s: %s' % (os.fsdecode(path), e)) from None
        if not isinstance(ds, dict):
            raise CocoAssertionError('annotation file format {} not supported'.format(type(ds)))
        if _string_ids(ds) is None:
            raise classify_load_error(str(err))(str(err)) from None
        self._dataset = ds
        self._set_json_src(ds)
        self._c = {}
        try:
            self._gt_handle(False)
        except Error as e:
            raise classify_load_error(str(e))(str(e)) from None

    # ---- the library's side ----
    def _gt_handle(self, segm: bool):
        """rv_coco * of this dataset, with masks when segm (a loaded-with-masks one serves both)."""
        return self._gt_h(segm).p

    def _gt_h(self, segm: bool) -> _Handle:
        """The _Handle of _gt_handle (whoever keeps a pointer into it keeps this alive)."""
        h = self._c.get(True) or (None if segm else self._c.get(False))
        if h is not None:
            return h
        if self._src is None:
            self._set_json_src(self.dataset)
        p = _lib.c_void_p()
        with Ctx() as c:
            if self._src[0] == 'file':
                st = lib.rv_py_coco_load(ctypes.byref(p), self._src[1], None, 0, None, int(segm), c.ctx)
            else:
                js = self._src[1]
                st = lib.rv_py_coco_load(ctypes.byref(p), None, js, len(js), b'dataset', int(segm), c.ctx)
            if st != 0:
                msg = lib.rv_py_errmsg(c.ctx).decode('utf-8', 'replace')
                raise classify_load_error(msg)(msg)
        h = _Handle(p.value, lib.rv_py_coco_free)
        if segm:
            self._c.clear()
        self._c[bool(segm)] = h
        return h

    def _c_ids(self):
        """(image ids, category ids) in file order, from the library."""
        if self._res_of is not None:
            return self._res_of._c_ids()
        h = self._gt_handle(False)
        n = (_lib.c_size * 3)()
        lib.rv_py_coco_counts(h, n, None)
        imgs = np.empty(n[0], dtype=np.int64)
        cats = np.empty(n[1], dtype=np.int64)
        lib.rv_py_coco_ids(h, _lib.ptr(imgs), _lib.ptr(cats))
        return imgs, cats

    def _lib_img_ids(self, ids) -> np.ndarray:
        """Image ids as the library knows them (string ids renumbered)."""
        m = (self._res_of or self)._ids
        if m is None:
            return _lib.as_i64(ids)
        im = m['image']
        return np.array([im.get(i, -1) for i in ids], dtype=np.int64)

    def _lib_cat_ids(self, ids) -> np.ndarray:
        m = (self._res_of or self)._ids
        if m is None:
            return _lib.as_i64(ids)
        ca = m['category']
        return np.array([ca.get(i, -1) for i in ids], dtype=np.int64)

    def _res_handle(self, iou_type: int):
        """rv_coco_results * of loadRes' results for the iou type (segm: with masks)."""
        return self._res_h(iou_type).p

    def _res_h(self, iou_type: int) -> _Handle:
        """The _Handle of _res_handle."""
        if iou_type == IOU_KEYPOINTS:
            iou_type = IOU_BBOX  # boxes and areas from loadRes' keypoints (or bbox) branch
        h = self._res_c.get(iou_type)
        if h is None and iou_type == IOU_BBOX:
            h = self._res_c.get(IOU_SEGM)
        if h is None and iou_type == IOU_SEGM and IOU_BBOX in self._res_c and \
                lib.rv_py_results_all_segm(self._res_c[IOU_BBOX].p):
            h = self._res_c[IOU_BBOX]
        if h is not None:
            return h
        self._gt_keep = self._res_of._gt_h(iou_type == IOU_SEGM)  # the results point into it
        gt = self._gt_keep.p
        kind, src = self._res_src
        p = _lib.c_void_p()
        with Ctx() as c:
            if kind == 'file':
                st = lib.rv_py_results_load(ctypes.byref(p), gt, src, None, 0, None, iou_type, c.ctx)
            elif kind == 'json':
                st = lib.rv_py_results_load(ctypes.byref(p), gt, None, src, len(src), b'results', iou_type, c.ctx)
            else:
                st = lib.rv_py_results_from_arrays(
                    ctypes.byref(p), gt, len(src['score']), _lib.ptr(src['image_id']),
                    _lib.ptr(src['category_id']), _lib.ptr(src['score']), _lib.ptr(src['bbox']), iou_type,
                    b'results', c.ctx)
            if st != 0:
                msg = lib.rv_py_errmsg(c.ctx).decode('utf-8', 'replace')
                raise classify_load_error(msg)(msg)
        h = _Handle(p.value, lib.rv_py_results_free)
        h_gt = self._gt_keep
        self._res_c[iou_type] = h
        self._res_gt = getattr(self, '_res_gt', {})
        self._res_gt[iou_type] = h_gt
        return h

    # ---- the Python view ----
    @property
    def dataset(self) -> dict:
        """The annotation file as a dict (pycocotools' COCO.dataset)."""
        if self._dataset is None:
            if self._res_of is not None:
                self._dataset = self._res_dataset()
            else:
                with open(os.fsdecode(self._src[1]), 'r') as f:
                    self._dataset = json.load(f)
                if not isinstance(self._dataset, dict):
                    raise CocoAssertionError('annotation file format {} not supported'.format(type(self._dataset)))
        return self._dataset

    @dataset.setter
    def dataset(self, value: dict) -> None:
        self._dataset = value
        self._indexed = False

    def _res_anns(self) -> list:
        """The results as a list of dicts (before loadRes' fields are added)."""
        kind, src = self._res_src
        if self._res_list is not None:
            return self._res_list
        if kind == 'file':
            with open(os.fsdecode(src), 'r') as f:
                return json.load(f)
        a = src
        return [{'image_id': int(a['image_id'][i]), 'bbox': [float(v) for v in a['bbox'][i]],
                 'score': float(a['score'][i]), 'category_id': int(a['category_id'][i])}
                for i in range(len(a['score']))]

    def _res_dataset(self) -> dict:
        gt = self._res_of
        anns = self._res_anns()
        self._res_list = anns
        ds = {'info': copy.deepcopy(gt.dataset.get('info', {})), 'images': [img for img in gt.dataset['images']]}
        if anns and 'caption' in anns[0]:
            ids = set(img['id'] for img in ds['images']) & set(ann['image_id'] for ann in anns)
            ds['images'] = [img for img in ds['images'] if img['id'] in ids]
            for i, ann in enumerate(anns):
                ann['id'] = i + 1
        elif anns and 'bbox' in anns[0] and not anns[0]['bbox'] == []:
            ds['categories'] = copy.deepcopy(gt.dataset['categories'])
            for i, ann in enumerate(anns):
                bb = ann['bbox']
                x1, x2, y1, y2 = [bb[0], bb[0] + bb[2], bb[1], bb[1] + bb[3]]
                if 'segmentation' not in ann:
                    ann['segmentation'] = [[x1, y1, x1, y2, x2, y2, x2, y1]]
                ann['area'] = bb[2] * bb[3]
                ann['id'] = i + 1
                ann['iscrowd'] = 0
        elif anns and 'segmentation' in anns[0]:
            h = self._res_handle(next(iter(self._res_c), IOU_BBOX))
            n = lib.rv_py_results_count(h)
            bbox = np.empty((n, 4))
            lib.rv_py_results_copy(h, None, None, None, _lib.ptr(bbox), None, None)
            ds['categories'] = copy.deepcopy(gt.dataset['categories'])
            for i, ann in enumerate(anns):
                ann['area'] = maskUtils.area(ann['segmentation'])
                if 'bbox' not in ann:
                    ann['bbox'] = bbox[i].copy()
                ann['id'] = i + 1
                ann['iscrowd'] = 0
        elif anns and 'keypoints' in anns[0]:
            ds['categories'] = copy.deepcopy(gt.dataset['categories'])
            for i, ann in enumerate(anns):
                s = ann['keypoints']
                x, y = s[0::3], s[1::3]
                x0, x1, y0, y1 = np.min(x), np.max(x), np.min(y), np.max(y)
                ann['area'] = (x1 - x0) * (y1 - y0)
                ann['id'] = i + 1
                ann['bbox'] = [x0, y0, x1 - x0, y1 - y0]
        ds['annotations'] = anns
        return ds

    def _index(self) -> None:
        if self._indexed:
            return
        print('creating index...')
        anns, cats, imgs = {}, {}, {}
        imgToAnns, catToImgs = defaultdict(list), defaultdict(list)
        ds = self.dataset
        if 'annotations' in ds:
            for ann in ds['annotations']:
                imgToAnns[ann['image_id']].append(ann)
                anns[ann['id']] = ann
        if 'images' in ds:
            for img in ds['images']:
                imgs[img['id']] = img
        if 'categories' in ds:
            for cat in ds['categories']:
                cats[cat['id']] = cat
        if 'annotations' in ds and 'categories' in ds:
            for ann in ds['annotations']:
                catToImgs[ann['category_id']].append(ann['image_id'])
        print('index created!')
        self._anns, self._imgToAnns, self._catToImgs, self._imgs, self._cats = anns, imgToAnns, catToImgs, imgs, cats
        self._indexed = True

    def createIndex(self) -> None:
        """Rebuild the index; the evaluation then reads self.dataset as it is now."""
        self._indexed = False
        self._index()
        if self._res_of is None and self._dataset is not None and (self._src is not None or self._c):
            self._src = None
            self._c = {}
            self._ids = None

    def _ix(name):
        doc = {'anns': 'annotation id -> annotation', 'imgs': 'image id -> image',
               'cats': 'category id -> category', 'imgToAnns': 'image id -> its annotations',
               'catToImgs': 'category id -> the image id of each of its annotations'}[name]

        def get(self):
            self._index()
            return getattr(self, '_' + name)

        def put(self, v):
            self._index()
            setattr(self, '_' + name, v)
        return property(get, put, doc=doc + ' (pycocotools COCO.%s)' % name)

    anns = _ix('anns')
    imgs = _ix('imgs')
    cats = _ix('cats')
    imgToAnns = _ix('imgToAnns')
    catToImgs = _ix('catToImgs')
    del _ix

    def info(self) -> None:
        """Prints the file's 'info' entries, one 'key: value' per line."""
        for key, value in self.dataset['info'].items():
            print('{}: {}'.format(key, value))

    def getAnnIds(self, imgIds=[], catIds=[], areaRng=[], iscrowd: Optional[bool] = None) -> list:
        """Annotation ids, filtered by image ids, category ids, an open area range (lo, hi)
        and the crowd flag (each filter skipped when empty / None)."""
        imgIds = imgIds if _isArrayLike(imgIds) else [imgIds]
        catIds = catIds if _isArrayLike(catIds) else [catIds]
        if len(imgIds) == len(catIds) == len(areaRng) == 0:
            anns = self.dataset['annotations']
        else:
            if not len(imgIds) == 0:
                lists = [self.imgToAnns[i] for i in imgIds if i in self.imgToAnns]
                anns = list(itertools.chain.from_iterable(lists))
            else:
                anns = self.dataset['annotations']
            anns = anns if len(catIds) == 0 else [a for a in anns if a['category_id'] in catIds]
            anns = anns if len(areaRng) == 0 else [a for a in anns if areaRng[0] < a['area'] < areaRng[1]]
        if iscrowd is not None:
            return [a['id'] for a in anns if a['iscrowd'] == iscrowd]
        return [a['id'] for a in anns]

    def getCatIds(self, catNms=[], supNms=[], catIds=[]) -> list:
        """Category ids, filtered by names, supercategory names and ids (file order)."""
        catNms = catNms if _isArrayLike(catNms) else [catNms]
        supNms = supNms if _isArrayLike(supNms) else [supNms]
        catIds = catIds if _isArrayLike(catIds) else [catIds]
        if len(catNms) == len(supNms) == len(catIds) == 0 and self._dataset is None and self._src is not None \
                and self._ids is None:
            return [int(i) for i in self._c_ids()[1]]  # without building the Python view
        cats = self.dataset['categories']
        cats = cats if len(catNms) == 0 else [c for c in cats if c['name'] in catNms]
        cats = cats if len(supNms) == 0 else [c for c in cats if c['supercategory'] in supNms]
        cats = cats if len(catIds) == 0 else [c for c in cats if c['id'] in catIds]
        return [c['id'] for c in cats]

    def getImgIds(self, imgIds=[], catIds=[]) -> list:
        """Image ids: all (file order), or those given that hold every category given."""
        imgIds = imgIds if _isArrayLike(imgIds) else [imgIds]
        catIds = catIds if _isArrayLike(catIds) else [catIds]
        if len(imgIds) == len(catIds) == 0:
            if self._dataset is None and self._src is not None and self._ids is None:
                return list(dict.fromkeys(int(i) for i in self._c_ids()[0]))
            if self._dataset is None and self._res_of is not None:
                return self._res_of.getImgIds()
            return list(self.imgs.keys())
        ids = set(imgIds)
        for i, catId in enumerate(catIds):
            if i == 0 and len(ids) == 0:
                ids = set(self.catToImgs[catId])
            else:
                ids &= set(self.catToImgs[catId])
        return list(ids)

    def loadAnns(self, ids=[]) -> list:
        """The annotations with these ids (a list for a list, [ann] for one int id)."""
        if _isArrayLike(ids):
            return [self.anns[i] for i in ids]
        if isinstance(ids, (int, np.integer)):
            return [self.anns[ids]]

    def loadCats(self, ids=[]) -> list:
        """The categories with these ids (a list for a list, [cat] for one int id)."""
        if _isArrayLike(ids):
            return [self.cats[i] for i in ids]
        if isinstance(ids, (int, np.integer)):
            return [self.cats[ids]]

    def loadImgs(self, ids=[]) -> list:
        """The images with these ids (a list for a list, [img] for one int id)."""
        if _isArrayLike(ids):
            return [self.imgs[i] for i in ids]
        if isinstance(ids, (int, np.integer)):
            return [self.imgs[ids]]

    def showAnns(self, anns: Sequence[dict], draw_bbox: bool = False):
        """Draws the annotations on the current matplotlib axes (polygons, masks, keypoint
        skeletons, boxes when draw_bbox), or prints captions, as pycocotools does. Needs
        matplotlib (ImportError with how to get it otherwise)."""
        if len(anns) == 0:
            return 0
        if 'segmentation' in anns[0] or 'keypoints' in anns[0]:
            kind = 'instances'
        elif 'caption' in anns[0]:
            kind = 'captions'
        else:
            raise CocoError('datasetType not supported')
        if kind == 'captions':
            for ann in anns:
                print(ann['caption'])
            return None
        try:
            import matplotlib.pyplot as plt
            from matplotlib.collections import PatchCollection
            from matplotlib.patches import Polygon
        except ImportError as e:
            raise ImportError('COCO.showAnns draws with matplotlib, which is not installed (%s): '
                              'apt-get install python3-matplotlib, or pip install matplotlib' % (e,)) from None
        ax = plt.gca()
        ax.set_autoscale_on(False)
        polygons, colors = [], []
        for ann in anns:
            c = (np.random.random((1, 3)) * 0.6 + 0.4).tolist()[0]
            seg = ann.get('segmentation')
            if 'segmentation' in ann:
                if isinstance(seg, list):
                    for part in seg:
                        polygons.append(Polygon(np.array(part).reshape((len(part) // 2, 2))))
                        colors.append(c)
                else:
                    t = self.imgs[ann['image_id']]
                    if isinstance(seg['counts'], list):
                        rle = maskUtils.frPyObjects([seg], t['height'], t['width'])
                    else:
                        rle = [seg]
                    m = maskUtils.decode(rle)
                    img = np.ones((m.shape[0], m.shape[1], 3))
                    if ann.get('iscrowd', 0) == 1:
                        color_mask = np.array([2.0, 166.0, 101.0]) / 255
                    else:
                        color_mask = np.random.random((1, 3)).tolist()[0]
                    for i in range(3):
                        img[:, :, i] = color_mask[i]
                    ax.imshow(np.dstack((img, m * 0.5)))
            if 'keypoints' in ann and isinstance(ann['keypoints'], list):
                sks = np.array(self.loadCats(ann['category_id'])[0]['skeleton']) - 1
                kp = np.array(ann['keypoints'])
                x, y, v = kp[0::3], kp[1::3], kp[2::3]
                for sk in sks:
                    if np.all(v[sk] > 0):
                        plt.plot(x[sk], y[sk], linewidth=3, color=c)
                plt.plot(x[v > 0], y[v > 0], 'o', markersize=8, markerfacecolor=c, markeredgecolor='k',
                         markeredgewidth=2)
                plt.plot(x[v > 1], y[v > 1], 'o', markersize=8, markerfacecolor=c, markeredgecolor=c,
                         markeredgewidth=2)
            if draw_bbox:
                bx, by, bw, bh = ann['bbox']
                poly = [[bx, by], [bx, by + bh], [bx + bw, by + bh], [bx + bw, by]]
                polygons.append(Polygon(np.array(poly).reshape((4, 2))))
                colors.append(c)
        ax.add_collection(PatchCollection(polygons, facecolor=colors, linewidths=0, alpha=0.4))
        ax.add_collection(PatchCollection(polygons, facecolor='none', edgecolors=colors, linewidths=2))
        return None

    def loadRes(self, resFile: Union[PathLike, list, np.ndarray]) -> 'COCO':
        """Results -> a COCO of them, with pycocotools' loadRes rules: a JSON file (str, bytes or
        pathlib path), a list of dicts, or an N x 7 array [image_id, x, y, w, h, score,
        category_id]. The library reads and checks them now (results on images outside the
        ground truth: AssertionError, as pycocotools); keypoint results are read here."""
        print('Loading and preparing results...')
        tic = time.time()
        res = COCO.__new__(COCO)
        res._dataset, res._indexed, res._src, res._c, res._ids, res._kp = None, False, None, {}, None, None
        res._res_of, res._res_list, res._res_c = self, None, {}
        segm = False
        self._gt_handle(False)  # the ground truth read (and its string ids numbered)
        ids = self._ids
        if isinstance(resFile, (str, bytes, os.PathLike)):
            _check_file(resFile)
            res._res_src = ('file', os.fsencode(resFile))
            with open(resFile, 'rb') as f:
                head = f.read(1 << 16)
            segm = b'"segmentation"' in head
            if ids is not None or (b'"keypoints"' in head and b'"bbox"' not in head and not segm):
                with open(resFile, 'r') as f:
                    try:
                        lst = json.load(f)
                    except ValueError as e:
                        raise CocoValueError('%s: %s' % (os.fsdecode(resFile), e)) from None
                return self._load_res_list(res, lst, tic)
        elif isinstance(resFile, np.ndarray):
            d = np.asarray(resFile, dtype=np.float64)
            if d.ndim != 2 or d.shape[1] != 7:
                raise CocoAssertionError('loadRes: a numpy array of results must be N x 7 '
                                         '[image_id, x, y, w, h, score, category_id], not %s' % (d.shape,))
            res._res_src = ('arrays', {
                'image_id': np.ascontiguousarray(d[:, 0].astype(np.int64)),
                'bbox': np.ascontiguousarray(d[:, 1:5]),
                'score': np.ascontiguousarray(d[:, 5]),
                'category_id': np.ascontiguousarray(d[:, 6].astype(np.int64))})
        elif isinstance(resFile, list):
            return self._load_res_list(res, resFile, tic)
        else:
            raise CocoAssertionError('results in not an array of objects')
        res._res_handle(IOU_SEGM if segm else IOU_BBOX)
        print('DONE (t={:0.2f}s)'.format(time.time() - tic))
        return res

    def _load_res_list(self, res: 'COCO', lst, tic) -> 'COCO':
        if not isinstance(lst, list):
            raise CocoAssertionError('results in not an array of objects')
        res._res_list = lst
        first = lst[0] if lst and isinstance(lst[0], dict) else {}
        kp_branch = bool(lst) and 'keypoints' in first and 'caption' not in first and \
            not ('bbox' in first and not first['bbox'] == []) and 'segmentation' not in first
        if kp_branch or self._ids is not None:
            gtimgs = set(self.getImgIds())
            if not set(a['image_id'] for a in lst) <= gtimgs:
                raise CocoAssertionError('Results do not correspond to current coco set')
        if kp_branch:
            res._res_src = ('arrays', self._kp_arrays(lst, True))
        elif self._ids is not None:
            im, ca = self._ids['image'], self._ids['category']
            res._res_src = ('json', _dumps([dict(a, image_id=im[a['image_id']], category_id=ca.get(a['category_id'], -1))
                                            for a in lst]))
        else:
            res._res_src = ('json', _dumps(lst))
        segm = bool(lst) and 'segmentation' in first
        res._res_handle(IOU_SEGM if segm else IOU_BBOX)
        print('DONE (t={:0.2f}s)'.format(time.time() - tic))
        return res

    def _kp_arrays(self, lst, kp_branch: bool) -> dict:
        """Library arrays of keypoint results: loadRes' keypoints branch boxes ([x0, y0, x1-x0,
        y1-y0] of the keypoints; area = their product, what the library computes from the box)."""
        n = len(lst)
        bbox = np.empty((n, 4))
        for i, a in enumerate(lst):
            if kp_branch:
                s = a['keypoints']
                x, y = s[0::3], s[1::3]
                x0, x1, y0, y1 = np.min(x), np.max(x), np.min(y), np.max(y)
                bbox[i] = (x0, y0, x1 - x0, y1 - y0)
            else:
                bbox[i] = a['bbox']
        return {'image_id': self._lib_img_ids([a['image_id'] for a in lst]),
                'category_id': self._lib_cat_ids([a['category_id'] for a in lst]),
                'score': np.ascontiguousarray([float(a['score']) for a in lst], dtype=np.float64),
                'bbox': np.ascontiguousarray(bbox)}

    def loadNumpyAnnotations(self, data: np.ndarray) -> list:
        """N x 7 [image_id, x, y, w, h, score, category_id] -> a list of result dicts."""
        print('Converting ndarray to lists...')
        assert type(data) == np.ndarray
        print(data.shape)
        assert data.shape[1] == 7
        return [{'image_id': int(data[i, 0]), 'bbox': [data[i, 1], data[i, 2], data[i, 3], data[i, 4]],
                 'score': data[i, 5], 'category_id': int(data[i, 6])} for i in range(data.shape[0])]

    def download(self, tarDir=None, imgIds=[]):
        """pycocotools downloads images from the COCO site; ravlt never downloads: raises."""
        raise CocoError('COCO.download: ravlt.cocotools does not download (fetch the images yourself)')

    def annToRLE(self, ann: dict) -> dict:
        """The annotation's segmentation (polygons, uncompressed or compressed RLE) as one
        compressed RLE of its image's size (polygon parts merged)."""
        t = self.imgs[ann['image_id']]
        h, w = t['height'], t['width']
        segm = ann['segmentation']
        if isinstance(segm, list):
            return maskUtils.merge(maskUtils.frPyObjects(segm, h, w))
        if isinstance(segm['counts'], list):
            return maskUtils.frPyObjects(segm, h, w)
        return segm

    def annToMask(self, ann: dict) -> np.ndarray:
        """The annotation's mask: HxW uint8 (0/1)."""
        return maskUtils.decode(self.annToRLE(ann))
