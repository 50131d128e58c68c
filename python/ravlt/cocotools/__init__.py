"""A drop-in for pycocotools 2.0.11: ``from ravlt.cocotools import COCO, COCOeval, mask``.

Same classes, methods, printed lines, exceptions and numbers as pycocotools (bbox, segm and
keypoints), with the reading, matching and accumulation done by libravlt's C evaluator
(datasets/coco.h, eval/cocoeval.h). ``init_as_pycocotools()`` makes ``import pycocotools``
(and pycocotools.coco, .cocoeval, .mask, ._mask) give these modules. python/README.md lists
every remaining difference from pycocotools.
"""
import sys
import types

from .coco import COCO
from .cocoeval import COCOeval, Params
from . import mask
from . import _errors

__all__ = ['COCO', 'COCOeval', 'Params', 'mask', 'init_as_pycocotools']
__version__ = '2.0.11'  # the pycocotools version whose behaviour this package follows


def init_as_pycocotools() -> None:
    """Registers this package as ``pycocotools`` in sys.modules, so that code written for
    pycocotools (``from pycocotools.coco import COCO``, ``import pycocotools.mask as
    mask_util``, ``from pycocotools import _mask``) runs on ravlt unchanged. Call it before
    those imports; it replaces a pycocotools already imported in this process."""
    from . import coco, cocoeval
    pkg = types.ModuleType('pycocotools', __doc__)
    pkg.__path__ = []  # a package: submodules resolve through sys.modules
    pkg.__version__ = __version__
    pkg.coco, pkg.cocoeval, pkg.mask, pkg._mask = coco, cocoeval, mask, mask
    pkg.__ravlt__ = True
    sys.modules['pycocotools'] = pkg
    sys.modules['pycocotools.coco'] = coco
    sys.modules['pycocotools.cocoeval'] = cocoeval
    sys.modules['pycocotools.mask'] = mask
    sys.modules['pycocotools._mask'] = mask
