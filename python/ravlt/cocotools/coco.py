"""pycocotools.coco.COCO with the files read by libravlt (datasets/coco.h).

The evaluation never goes through Python objects: COCO(file) and loadRes(file | list | array)
hand the JSON (or the arrays) to the library, which reads them with pycocotools' rules. The
Python view (dataset, anns, imgs, cats, imgToAnns, catToImgs and the get*/load* methods) is
built the first time it is used, with the json module, exactly as pycocotools builds it.
"""
import copy
import itertools
import json
import os
import time
from collections import defaultdict

import numpy as np

from .. import _lib
from .._lib import lib, Ctx, Error
from . import mask as maskUtils

__all__ = ['COCO']

IOU_BBOX, IOU_SEGM = 0, 1


def _isArrayLike(obj):
    return hasattr(obj, '__iter__') and hasattr(obj, '__len__')


def _jdefault(o):
    if isinstance(o, (bytes, bytearray)):
        return o.decode('ascii')
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError('%r is not JSON serialisable' % (o,))


def _dumps(obj):
    return json.dumps(obj, default=_jdefault, allow_nan=True).encode('utf-8')


class _Handle:
    """A C object freed with its destructor when the Python object goes."""
    __slots__ = ('p', 'free')

    def __init__(self, p, free):
        self.p, self.free = p, free

    def __del__(self):
        if self.p:
            self.free(self.p)
            self.p = None


class COCO:
    def __init__(self, annotation_file=None):
        self._dataset = None       # the Python view, built on first use
        self._indexed = False
        self._src = None           # ('file', path) or ('json', bytes): what the library reads
        self._c = {}               # load_segm -> _Handle(rv_coco *)
        self._res_of = None        # loadRes: the ground truth COCO
        self._res_src = None       # loadRes: ('file', path) | ('json', bytes) | ('arrays', dict)
        self._res_list = None      # loadRes: the list of dicts given
        self._res_c = {}           # iou type -> _Handle(rv_coco_results *)
        if annotation_file is None:
            self._dataset = {}
            self._index()
        elif isinstance(annotation_file, dict):
            self._dataset = annotation_file
            self._src = ('json', _dumps(annotation_file))
            self._index()
            self._gt_handle(False)
        else:
            print('loading annotations into memory...')
            tic = time.time()
            self._src = ('file', os.fsencode(annotation_file))
            self._gt_handle(False)  # reads and checks the file now (errors name it)
            print('Done (t={:0.2f}s)'.format(time.time() - tic))

    # ---- the library's side ----
    def _gt_handle(self, segm):
        """rv_coco * of this dataset, with masks when segm (a loaded-with-masks one serves both)."""
        h = self._c.get(True) or (None if segm else self._c.get(False))
        if h is not None:
            return h.p
        if self._src is None:
            self._src = ('json', _dumps(self.dataset))
        p = _lib.c_void_p()
        with Ctx() as c:
            if self._src[0] == 'file':
                c.check(lib.rv_py_coco_load(_lib.ctypes.byref(p), self._src[1], None, 0, None, int(segm), c.ctx))
            else:
                js = self._src[1]
                c.check(lib.rv_py_coco_load(_lib.ctypes.byref(p), None, js, len(js), b'dataset', int(segm), c.ctx))
        h = _Handle(p.value, lib.rv_py_coco_free)
        if segm:
            self._c.clear()
        self._c[bool(segm)] = h
        return h.p

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

    def _res_handle(self, iou_type):
        """rv_coco_results * of loadRes' results for the iou type (segm: with masks)."""
        h = self._res_c.get(iou_type)
        if h is None and iou_type == IOU_BBOX:
            h = self._res_c.get(IOU_SEGM)
        if h is None and iou_type == IOU_SEGM and IOU_BBOX in self._res_c and \
                lib.rv_py_results_all_segm(self._res_c[IOU_BBOX].p):
            h = self._res_c[IOU_BBOX]
        if h is not None:
            return h.p
        gt = self._res_of._gt_handle(iou_type == IOU_SEGM)
        kind, src = self._res_src
        p = _lib.c_void_p()
        with Ctx() as c:
            if kind == 'file':
                c.check(lib.rv_py_results_load(_lib.ctypes.byref(p), gt, src, None, 0, None, iou_type, c.ctx))
            elif kind == 'json':
                c.check(lib.rv_py_results_load(_lib.ctypes.byref(p), gt, None, src, len(src), b'results', iou_type,
                                               c.ctx))
            else:
                c.check(lib.rv_py_results_from_arrays(
                    _lib.ctypes.byref(p), gt, len(src['score']), _lib.ptr(src['image_id']),
                    _lib.ptr(src['category_id']), _lib.ptr(src['score']), _lib.ptr(src['bbox']), iou_type,
                    b'results', c.ctx))
        h = _Handle(p.value, lib.rv_py_results_free)
        self._res_c[iou_type] = h
        return h.p

    # ---- the Python view ----
    @property
    def dataset(self):
        if self._dataset is None:
            if self._res_of is not None:
                self._dataset = self._res_dataset()
            else:
                with open(os.fsdecode(self._src[1]), 'r') as f:
                    self._dataset = json.load(f)
                if not isinstance(self._dataset, dict):
                    raise Error('annotation file format {} not supported'.format(type(self._dataset)))
        return self._dataset

    @dataset.setter
    def dataset(self, value):
        self._dataset = value
        self._indexed = False

    def _res_dataset(self):
        gt = self._res_of
        kind, src = self._res_src
        if self._res_list is not None:
            anns = self._res_list
        elif kind == 'file':
            with open(os.fsdecode(src), 'r') as f:
                anns = json.load(f)
        else:
            a = src
            anns = [{'image_id': int(a['image_id'][i]), 'bbox': [float(v) for v in a['bbox'][i]],
                     'score': float(a['score'][i]), 'category_id': int(a['category_id'][i])}
                    for i in range(len(a['score']))]
        h = self._res_handle(next(iter(self._res_c), IOU_BBOX))
        n = lib.rv_py_results_count(h)
        area = np.empty(n)
        bbox = np.empty((n, 4))
        lib.rv_py_results_copy(h, None, None, None, _lib.ptr(bbox), _lib.ptr(area), None)
        ds = {'images': [img for img in gt.dataset['images']]}
        if anns and 'bbox' in anns[0] and not anns[0]['bbox'] == []:
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
            ds['categories'] = copy.deepcopy(gt.dataset['categories'])
            for i, ann in enumerate(anns):
                ann['area'] = np.uint32(area[i])  # maskUtils.area's type
                if 'bbox' not in ann:
                    ann['bbox'] = bbox[i].copy()
                ann['id'] = i + 1
                ann['iscrowd'] = 0
        ds['annotations'] = anns
        return ds

    def _index(self):
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

    def createIndex(self):
        """Rebuild the index; the evaluation then reads self.dataset as it is now."""
        self._indexed = False
        self._index()
        if self._res_of is None and self._src is not None and self._dataset is not None and self._c:
            self._src = ('json', _dumps(self._dataset))
            self._c = {}

    def _ix(name):
        def get(self):
            self._index()
            return getattr(self, '_' + name)

        def put(self, v):
            self._index()
            setattr(self, '_' + name, v)
        return property(get, put)

    anns = _ix('anns')
    imgs = _ix('imgs')
    cats = _ix('cats')
    imgToAnns = _ix('imgToAnns')
    catToImgs = _ix('catToImgs')
    del _ix

    def info(self):
        for key, value in self.dataset['info'].items():
            print('{}: {}'.format(key, value))

    def getAnnIds(self, imgIds=[], catIds=[], areaRng=[], iscrowd=None):
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

    def getCatIds(self, catNms=[], supNms=[], catIds=[]):
        catNms = catNms if _isArrayLike(catNms) else [catNms]
        supNms = supNms if _isArrayLike(supNms) else [supNms]
        catIds = catIds if _isArrayLike(catIds) else [catIds]
        if len(catNms) == len(supNms) == len(catIds) == 0 and self._dataset is None and self._src is not None:
            return [int(i) for i in self._c_ids()[1]]  # without building the Python view
        cats = self.dataset['categories']
        cats = cats if len(catNms) == 0 else [c for c in cats if c['name'] in catNms]
        cats = cats if len(supNms) == 0 else [c for c in cats if c['supercategory'] in supNms]
        cats = cats if len(catIds) == 0 else [c for c in cats if c['id'] in catIds]
        return [c['id'] for c in cats]

    def getImgIds(self, imgIds=[], catIds=[]):
        imgIds = imgIds if _isArrayLike(imgIds) else [imgIds]
        catIds = catIds if _isArrayLike(catIds) else [catIds]
        if len(imgIds) == len(catIds) == 0:
            if self._dataset is None and self._src is not None:
                return list(dict.fromkeys(int(i) for i in self._c_ids()[0]))
            return list(self.imgs.keys())
        ids = set(imgIds)
        for i, catId in enumerate(catIds):
            if i == 0 and len(ids) == 0:
                ids = set(self.catToImgs[catId])
            else:
                ids &= set(self.catToImgs[catId])
        return list(ids)

    def loadAnns(self, ids=[]):
        if _isArrayLike(ids):
            return [self.anns[i] for i in ids]
        if isinstance(ids, (int, np.integer)):
            return [self.anns[ids]]

    def loadCats(self, ids=[]):
        if _isArrayLike(ids):
            return [self.cats[i] for i in ids]
        if isinstance(ids, (int, np.integer)):
            return [self.cats[ids]]

    def loadImgs(self, ids=[]):
        if _isArrayLike(ids):
            return [self.imgs[i] for i in ids]
        if isinstance(ids, (int, np.integer)):
            return [self.imgs[ids]]

    def loadRes(self, resFile):
        """Results (a JSON file, a list of dicts, or an N x 7 array [image_id, x, y, w, h, score,
        category_id]) with pycocotools' loadRes rules; the library reads and checks them now."""
        print('Loading and preparing results...')
        tic = time.time()
        res = COCO.__new__(COCO)
        res._dataset, res._indexed, res._src, res._c = None, False, None, {}
        res._res_of, res._res_list, res._res_c = self, None, {}
        segm = False
        if isinstance(resFile, (str, bytes, os.PathLike)):
            res._res_src = ('file', os.fsencode(resFile))
            with open(resFile, 'rb') as f:
                head = f.read(1 << 16)
            segm = b'"segmentation"' in head
        elif isinstance(resFile, np.ndarray):
            d = np.asarray(resFile, dtype=np.float64)
            if d.ndim != 2 or d.shape[1] != 7:
                raise Error('loadRes: a numpy array of results must be N x 7 '
                            '[image_id, x, y, w, h, score, category_id], not %s' % (d.shape,))
            res._res_src = ('arrays', {
                'image_id': np.ascontiguousarray(d[:, 0].astype(np.int64)),
                'bbox': np.ascontiguousarray(d[:, 1:5]),
                'score': np.ascontiguousarray(d[:, 5]),
                'category_id': np.ascontiguousarray(d[:, 6].astype(np.int64))})
        elif isinstance(resFile, list):
            res._res_list = resFile
            res._res_src = ('json', _dumps(resFile))
            segm = bool(resFile) and isinstance(resFile[0], dict) and 'segmentation' in resFile[0]
        else:
            raise Error('loadRes: results must be a file name, a list of dicts or an N x 7 array')
        res._res_handle(IOU_SEGM if segm else IOU_BBOX)
        print('DONE (t={:0.2f}s)'.format(time.time() - tic))
        return res

    def loadNumpyAnnotations(self, data):
        assert isinstance(data, np.ndarray) and data.shape[1] == 7
        return [{'image_id': int(data[i, 0]), 'bbox': [data[i, 1], data[i, 2], data[i, 3], data[i, 4]],
                 'score': data[i, 5], 'category_id': int(data[i, 6])} for i in range(data.shape[0])]

    def annToRLE(self, ann):
        t = self.imgs[ann['image_id']]
        h, w = t['height'], t['width']
        segm = ann['segmentation']
        if isinstance(segm, list):
            return maskUtils.merge(maskUtils.frPyObjects(segm, h, w))
        if isinstance(segm['counts'], list):
            return maskUtils.frPyObjects(segm, h, w)
        return segm

    def annToMask(self, ann):
        return maskUtils.decode(self.annToRLE(ann))
