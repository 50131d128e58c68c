#!/usr/bin/env python3
"""Reference for formats/pyconfig.c: evaluate mmcv-style config files with Python itself and
write what rv_pyconfig_parse must produce (every top-level name in assignment order, tuples
and range() as JSON arrays, int dict keys as strings).

    /usr/bin/python3 tools/pyconfig_to_json.py CONFIG.py [...]    # writes CONFIG.json beside each
"""
import json
import sys


def main():
    for path in sys.argv[1:]:
        ns = {}
        with open(path, encoding="utf-8") as f:
            exec(compile(f.read(), path, "exec"), ns)
        ns.pop("__builtins__", None)
        out = path[:-3] + ".json" if path.endswith(".py") else path + ".json"
        with open(out, "w", encoding="utf-8") as f:
            json.dump(ns, f, ensure_ascii=False, indent=1, default=list)
            f.write("\n")


if __name__ == "__main__":
    main()
