#!/usr/bin/env python3
"""Checks the layering of the C sources: no upward includes, no include cycles.

Usage: python3 tools/check_layers.py [REPO_ROOT]     (exit 0: clean, 1: violations)

The rule (DESIGN.md "Layers"): a file includes only its own layer or lower, and no two
modules include each other. Layers, lowest first:

    core < nn < {backbone, necks, heads, eval} < datasets < models < apps

backbone, necks, heads and eval are one tier (the model parts and the evaluators): a file
there may include core/ and nn/ and its own directory, but not another directory of the
tier (a head does not reach into the backbone or a neck; the detector in models/ joins
them). A module is a path without its extension (core/pth.c and core/pth.h are module
core/pth); a cycle is a chain of "#include" edges between modules that returns to its
start (A.c includes B.h and B.c includes A.h is the shortest). A header X_internal.h is the
private part of module X (declarations its .c files share), not a module of its own.
System includes (<...>) and
files outside these directories are not checked.

tools/check_layers.known lists violations known and owned by an open issue, one a line as
this script prints them after "upward include: " / "include cycle: " ("#" comments): they
are reported as known and do not fail the check; a listed line that no longer occurs does
(remove it), so the list only shrinks.
"""
import os
import re
import sys

LAYERS = [["core"], ["nn"], ["backbone", "necks", "heads", "eval"], ["datasets"], ["models"], ["apps"]]
RANK = {d: i for i, tier in enumerate(LAYERS) for d in tier}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(root):
    for d in RANK:
        top = os.path.join(root, d)
        if not os.path.isdir(top):
            continue
        for dirpath, _, files in os.walk(top):
            for f in sorted(files):
                if f.endswith((".c", ".h", ".cpp")):
                    yield os.path.relpath(os.path.join(dirpath, f), root)


def module(path):
    stem = os.path.splitext(path)[0]
    return stem[: -len("_internal")] if stem.endswith("_internal") else stem


def allowed(src_dir, dst_dir):
    """May a file in src_dir include one in dst_dir?"""
    if src_dir == dst_dir:
        return True
    return RANK[dst_dir] < RANK[src_dir]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    edges = {}
    upward = []
    for path in sources(root):
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        src_dir = path.split(os.sep)[0]
        for m in INCLUDE.finditer(text):
            inc = m.group(1)
            dst_dir = inc.split("/")[0]
            if dst_dir not in RANK or "/" not in inc:
                continue  # a local or third-party header, not a layer's
            line = text.count("\n", 0, m.start()) + 1
            if not allowed(src_dir, dst_dir):
                upward.append("%s:%d: includes %s (%s may not include %s)" % (path, line, inc, src_dir, dst_dir))
            a, b = module(path), module(inc)
            if a != b:
                edges.setdefault(a, set()).add(b)
    # cycles: Tarjan's strongly connected components over the module graph
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            strong(v)
    known = set()
    kpath = os.path.join(root, "tools", "check_layers.known")
    if os.path.exists(kpath):
        with open(kpath, encoding="utf-8") as fh:
            known = {l.strip() for l in fh if l.strip() and not l.lstrip().startswith("#")}
    found = ["upward include: " + l for l in upward] + ["include cycle: " + " <-> ".join(c) for c in comps]
    bad = 0
    for line in found:
        if line in known:
            print("known (tools/check_layers.known): " + line)
        else:
            print(line)
            bad += 1
    for line in sorted(known - set(found)):
        print("stale entry in tools/check_layers.known (no longer occurs, remove it): " + line)
        bad += 1
    print("%d upward includes, %d include cycles (%d known)" % (len(upward), len(comps), len(known & set(found))))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
