#!/usr/bin/env python3
"""Checks the layering of the C sources: no upward includes, no include cycles, and, over
the built libraries, no upward calls and no call cycles.

Usage: python3 tools/check_layers.py [REPO_ROOT] [--build BUILD_DIR]
       (exit 0: clean, 1: violations, 2: usage / no libraries in BUILD_DIR)

The rule (DESIGN.md "Layers"): a file includes only its own layer or lower, and no two
modules include each other. Layers, lowest first:

    core < {kernels, formats} < nn < {backbone, necks, heads, eval} < datasets < models < apps

core/ is the runtime (context, errors, log, arena, files), kernels/ the compute kernels with
their naive twins in kernels/ref/, formats/ the file formats (checkpoints, pickle, configs,
the image codec wrapper). kernels and formats are one tier, as are backbone, necks, heads and
eval (the model parts and the evaluators): a file there may include the layers below and its
own directory, but not another directory of the tier (a head does not reach into the backbone or a neck; the detector in models/ joins
them). A module is a path without its extension (formats/pth.c and formats/pth.h are module
formats/pth); a cycle is a chain of "#include" edges between modules that returns to its
start (A.c includes B.h and B.c includes A.h is the shortest). A header X_internal.h is the
private part of module X (declarations its .c files share), not a module of its own.
System includes (<...>) and
files outside these directories are not checked.

With --build, the same rules are checked on calls (any use of a symbol: a function or a
variable), from the layer libraries CMake builds in BUILD_DIR (libravlt_LAYER.a, and
libravlt_cli.a for apps/): `nm` lists each object's defined and undefined global symbols; an
object of layer L that uses a symbol defined in a layer it may not include is an upward call,
and a chain of uses between modules that returns to its start is a call cycle (kernels/conv.c
calls kernels/winograd.c, which calls kernels/conv.c). Symbols no object defines (libc, OpenMP,
BLAS, ...) are not checked. The build itself fails on an upward call too (CMakeLists.txt
links each layer as a shared object against the layers below with -Wl,--no-undefined);
this check also covers the sanitizer and fuzz builds, which skip that link, and cycles.

tools/check_layers.known lists violations known and owned by an open issue, one a line as
this script prints them after "upward include: " / "include cycle: " / "upward call: " /
"call cycle: " ("#" comments): they
are reported as known and do not fail the check; a listed line that no longer occurs does
(remove it), so the list only shrinks.
"""
import os
import re
import subprocess
import sys

LAYERS = [["core"], ["kernels", "formats"], ["nn"], ["backbone", "necks", "heads", "eval"], ["datasets"], ["models"], ["apps"]]
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


def cycles(edges):
    """The strongly connected components of more than one node (Tarjan), each sorted."""
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
    return sorted(comps)


ARCHIVES = [(d, "libravlt_%s.a" % d) for d in RANK if d != "apps"] + [("apps", "libravlt_cli.a")]
DEFINED = set("TDBRCGSVWi")  # nm's letters of a defined global symbol (V, W weak; i ifunc)


def calls(build):
    """(upward calls, {module: modules it uses}) from the layer archives' symbols, or None."""
    defs, uses = {}, []  # symbol -> modules defining it; (module, symbol) used
    for d, name in ARCHIVES:
        path = os.path.join(build, name)
        if not os.path.exists(path):
            print("check_layers: %s: no such library (build first: cmake --build %s)" % (path, build))
            return None
        out = subprocess.run(["nm", "-A", "-g", path], check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            head, _, rest = line.rpartition(":")  # "lib.a:conv.c.o" / "addr T name"
            member = head.split(":")[-1]
            f = rest.split()
            if len(f) < 2:
                continue
            kind, sym = f[-2], f[-1]
            stem = member[:-2] if member.endswith(".o") else member
            mod = d + "/" + os.path.splitext(stem)[0]  # conv.c.o -> kernels/conv
            if kind in ("U", "w"):
                uses.append((mod, sym))
            elif kind in DEFINED:
                defs.setdefault(sym, set()).add(mod)
    edges, upward = {}, set()
    for mod, sym in uses:
        for dst in sorted(defs.get(sym, ())):  # not defined by us: the system's
            if dst == mod:
                continue
            edges.setdefault(mod, set()).add(dst)
            if not allowed(mod.split("/")[0], dst.split("/")[0]):
                upward.add("%s uses %s of %s" % (mod, sym, dst))
    return sorted(upward), edges


def main():
    args = sys.argv[1:]
    build = None
    if "--build" in args:
        k = args.index("--build")
        if k + 1 >= len(args):
            print(__doc__)
            return 2
        build = args[k + 1]
        del args[k : k + 2]
    root = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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
    comps = cycles(edges)
    calls_up, call_comps = [], []
    if build:
        got = calls(build)
        if got is None:
            return 2
        calls_up, call_edges = got
        call_comps = cycles(call_edges)
    known = set()
    kpath = os.path.join(root, "tools", "check_layers.known")
    if os.path.exists(kpath):
        with open(kpath, encoding="utf-8") as fh:
            known = {l.strip() for l in fh if l.strip() and not l.lstrip().startswith("#")}
    if not build:  # calls not checked
        known = {l for l in known if not l.startswith(("upward call: ", "call cycle: "))}
    found = ["upward include: " + l for l in upward] + ["include cycle: " + " <-> ".join(c) for c in comps]
    found += ["upward call: " + l for l in calls_up] + ["call cycle: " + " <-> ".join(c) for c in call_comps]
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
    counts = "%d upward includes, %d include cycles" % (len(upward), len(comps))
    if build:
        counts += ", %d upward calls, %d call cycles" % (len(calls_up), len(call_comps))
    print("%s (%d known)" % (counts, len(known & set(found))))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
