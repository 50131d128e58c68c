"""A drop-in for pycocotools: ``from ravlt.cocotools import COCO, COCOeval, mask``.

Same classes, methods, printed lines and numbers as pycocotools (cocodataset/cocoapi), with the
reading, matching and accumulation done by libravlt's C evaluator (datasets/coco.h,
eval/cocoeval.h). Differences: only bbox and segm (no keypoints); ``evalImgs`` and ``ious`` are
not materialised; ``accumulate(p)`` takes only the evaluated params; results whose category is
not in the ground truth are kept and never evaluated (as pycocotools); an empty results list is
accepted.
"""
from .coco import COCO
from .cocoeval import COCOeval, Params
from . import mask

__all__ = ['COCO', 'COCOeval', 'Params', 'mask']
