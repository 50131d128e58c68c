#!/usr/bin/env python3
"""Generate the ravlt.cocotools goldens from pycocotools 2.0.11 (run OUTSIDE the repository's
tests; the output is committed as tests/fixtures/cocotools/goldens.json).

    python3 tools/gen_cocotools_goldens.py PYTHONAPI_DIR [OUT=tests/fixtures/cocotools/goldens.json]

PYTHONAPI_DIR: the PythonAPI folder of pycocotools 2.0.11 (github ppwwyyxx/cocoapi) built in
place (`python3 setup.py build_ext --inplace`, Debian's cython3 and python3-dev), the same
build bench/bench_cocotools_py.sh uses. The cases (inputs from fixed seeds, and the calls)
are python/tests/cocotools_cases.py, which the tests run on ravlt.cocotools; the file written
holds the inputs and pycocotools' outputs (or the exception classes it raised).
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    pyapi = os.path.abspath(sys.argv[1])
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, 'tests', 'fixtures', 'cocotools', 'goldens.json')
    sys.path.insert(0, pyapi)
    import numpy as np
    import pycocotools
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval, Params
    from pycocotools import mask, _mask
    assert os.path.dirname(pycocotools.__file__).startswith(pyapi), pycocotools.__file__
    sys.path.insert(0, os.path.join(ROOT, 'python', 'tests'))
    import cocotools_cases as cases
    inputs = cases.make_inputs()
    got = cases.run_all(COCO, COCOeval, Params, mask, _mask, inputs)
    doc = {'generator': 'tools/gen_cocotools_goldens.py', 'pycocotools': '2.0.11 (%s)' % pyapi,
           'numpy': np.__version__, 'outputs': got}
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = out + '.tmp'
    with open(tmp, 'w') as f:
        json.dump(doc, f, separators=(',', ':'), allow_nan=True)
    os.replace(tmp, out)
    print('%s: %d cases (%d raise), %.1f MB' % (out, len(got), sum('raises' in v for v in got.values()),
                                              os.path.getsize(out) / 1e6))


if __name__ == '__main__':
    main()
