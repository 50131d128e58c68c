#!/usr/bin/env python3
"""The documentation's checks (tests/cli/test_docs.sh runs this with Debian's python3):

1. every relative link and image of README.md and docs/*.md resolves: the file or folder
   exists and, for `page.md#anchor`, the page has a heading with that GitHub anchor;
2. every example marked runnable runs, each in a fresh temporary folder in which `tests` is
   the repository's tests/ (so the fixture paths resolve and every output lands in the
   temporary folder), with the build's `ravlt` first on PATH, RAVLT_OFFLINE=1 (no download)
   and a time limit. A marker is an HTML comment on the line before the fenced block:
     <!-- sh-example -->       ```sh      run by bash with `set -euo pipefail`
     <!-- c-example -->        ```c       compiled against include/ and the build's
                                          libravlt.so.0 (-std=c11 -Wall -Wextra -Werror), run
     <!-- python-example -->   ```python  run by python3 with the package of python/ over the
                                          build's libravlt.so.0
   with optional attributes: expect="REGEX" (repeatable: each must match a line of the
   output, stdout and stderr together), files="A B" (must exist, non-empty, afterwards),
   args="..." (C: the program's arguments). Exit status 0 is required;
3. docs/cli.md's option tables equal the commands' --help (scripts/cli-doc.py --check).

    python3 tests/docs_check.py RAVLT_BIN [--only FILE.md] [--no-run]
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = re.compile(r'^<!--\s*(sh|c|python)-example\b(.*?)-->\s*$')
FENCE = re.compile(r'^(```+|~~~+)\s*([A-Za-z0-9_+-]*)')
ATTR = re.compile(r'(\w+)="([^"]*)"')
LINK = re.compile(r'!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
REFDEF = re.compile(r'^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$')
LANG = {'sh': ('sh', 'bash', 'shell'), 'c': ('c',), 'python': ('python', 'py', 'python3')}
TIMEOUT = 300

failures = []


def fail(msg):
    failures.append(msg)
    print('FAIL: ' + msg, file=sys.stderr)


def doc_files(only):
    if only:
        return [os.path.abspath(only)]
    docs = os.path.join(ROOT, 'docs')
    return [os.path.join(ROOT, 'README.md')] + sorted(
        os.path.join(docs, f) for f in os.listdir(docs) if f.endswith('.md'))


def rel(path):
    return os.path.relpath(path, ROOT)


def slug(title):
    """GitHub's heading anchor: lower case, inline markup dropped, every character but
    letters, digits, spaces, '-' and '_' removed, spaces turned into '-'."""
    t = re.sub(r'`([^`]*)`', r'\1', title)
    t = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', t)
    t = re.sub(r'<[^>]+>', '', t).strip().lower()
    t = re.sub(r'[^\w\- ]', '', t)
    return t.replace(' ', '-')


def scan(path):
    """Lines outside fenced blocks (with their numbers), the headings' anchors, and the
    marked examples [(kind, attrs, code, line)]."""
    text = open(path, encoding='utf-8').read().splitlines()
    prose, anchors, examples = [], {}, []
    fence, pending, block, block_line = None, None, None, 0
    for n, line in enumerate(text, 1):
        if fence:
            if re.match(r'^\s{0,3}' + re.escape(fence[0][0]) + '{%d,}\\s*$' % len(fence[0]), line):
                if block is not None:
                    examples.append((block[0], block[1], '\n'.join(block[2]) + '\n', block_line))
                fence, block = None, None
            elif block is not None:
                block[2].append(line)
            continue
        m = FENCE.match(line)
        if m:
            fence = (m.group(1), m.group(2))
            if pending:
                kind, attrs, mline = pending
                if m.group(2).lower() not in LANG[kind]:
                    fail('%s:%d: the %s-example marker is followed by a ```%s block' %
                         (rel(path), mline, kind, m.group(2)))
                else:
                    block, block_line = (kind, attrs, []), n
                pending = None
            continue
        if pending and line.strip():
            fail('%s:%d: the %s-example marker is not followed by a fenced block' %
                 (rel(path), pending[2], pending[0]))
            pending = None
        m = MARKER.match(line.strip())
        if m:
            attrs = {}
            for k, v in ATTR.findall(m.group(2)):
                attrs.setdefault(k, []).append(v)
            pending = (m.group(1), attrs, n)
            continue
        h = re.match(r'^(#{1,6})\s+(.*?)\s*#*\s*$', line)
        if h:
            s = slug(h.group(2))
            k = anchors.get(s, -1) + 1
            anchors[s] = k
            if k:
                anchors[s + '-%d' % k] = 0
        prose.append((n, line))
    if fence:
        fail('%s: a fenced block is not closed' % rel(path))
    if pending:
        fail('%s:%d: the %s-example marker is not followed by a fenced block' % (rel(path), pending[2], pending[0]))
    return prose, anchors, examples


def check_links(files):
    anchors_of, checked = {}, 0

    def anchors(path):
        if path not in anchors_of:
            anchors_of[path] = scan(path)[1]
        return anchors_of[path]

    for path in files:
        prose, own, _ = scan(path)
        anchors_of[path] = own
        for n, line in prose:
            plain = re.sub(r'`[^`]*`', '', line)  # links are not taken from code spans
            targets = LINK.findall(plain)
            m = REFDEF.match(plain)
            if m:
                targets.append(m.group(1))
            for t in targets:
                if re.match(r'^[a-zA-Z][a-zA-Z0-9+.-]*:', t):  # http:, https:, mailto:, ...
                    continue
                checked += 1
                target, _, anchor = t.partition('#')
                dest = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
                if not os.path.exists(dest):
                    fail('%s:%d: link to %s: no such file' % (rel(path), n, t))
                    continue
                if anchor and dest.endswith('.md') and os.path.isfile(dest):
                    if anchor.lower() not in anchors(dest):
                        fail('%s:%d: link to %s: %s has no heading with the anchor #%s' %
                             (rel(path), n, t, rel(dest), anchor))
    return checked


def library(build):
    for c in ('libravlt.so.0', 'libravlt.so'):
        p = os.path.join(build, c)
        if os.path.exists(p):
            return p
    raise SystemExit('docs_check: no libravlt.so.0 in %s (build the target ravlt_shared)' % build)


def run_examples(files, binary):
    build = os.path.dirname(binary)
    lib = library(build)
    work = tempfile.mkdtemp(prefix='ravlt-docs.')
    counts = {'sh': 0, 'c': 0, 'python': 0}
    try:
        bindir = os.path.join(work, 'bin')
        os.mkdir(bindir)
        os.symlink(binary, os.path.join(bindir, 'ravlt'))
        env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get('PATH', ''),
                   RAVLT_OFFLINE='1', RAVLT_LIBRARY=lib, RAVLT_BIN=binary,
                   PYTHONPATH=os.path.join(ROOT, 'python'), PYTHONDONTWRITEBYTECODE='1',
                   MPLBACKEND='Agg', XDG_CACHE_HOME=os.path.join(work, 'cache'))
        env.setdefault('OMP_WAIT_POLICY', 'passive')
        ldd = subprocess.run(['ldd', lib], stdout=subprocess.PIPE, universal_newlines=True).stdout
        san = [l.split()[2] for l in ldd.splitlines() if re.search(r'libasan|libubsan', l) and '=>' in l]
        if san:  # a sanitizer build's library in a python3 that is not instrumented
            env['LD_PRELOAD'] = ' '.join(san)
            env['ASAN_OPTIONS'] = 'detect_leaks=0'
        python = '/usr/bin/python3' if os.access('/usr/bin/python3', os.X_OK) else sys.executable
        k = 0
        for path in files:
            for kind, attrs, code, line in scan(path)[2]:
                k += 1
                where = '%s:%d' % (rel(path), line)
                d = os.path.join(work, 'ex%d' % k)
                os.mkdir(d)
                os.symlink(os.path.join(ROOT, 'tests'), os.path.join(d, 'tests'))
                if kind == 'sh':
                    src = os.path.join(work, 'ex%d.sh' % k)
                    open(src, 'w').write('set -euo pipefail\n' + code)
                    cmd = ['bash', src]
                elif kind == 'python':
                    src = os.path.join(work, 'ex%d.py' % k)
                    open(src, 'w').write(code)
                    cmd = [python, src]
                else:
                    src = os.path.join(work, 'ex%d.c' % k)
                    exe = os.path.join(work, 'prog%d' % k)
                    open(src, 'w').write(code)
                    cc = [os.environ.get('CC', 'cc'), '-std=c11', '-Wall', '-Wextra', '-Werror',
                          '-I' + os.path.join(ROOT, 'include'), '-I' + os.path.join(build, 'include'),
                          src, '-o', exe, lib, '-Wl,-rpath,' + build]
                    p = subprocess.run(cc, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       universal_newlines=True)
                    if p.returncode != 0:
                        fail('%s: the C example does not compile:\n%s' % (where, p.stdout))
                        continue
                    cmd = [exe] + shlex.split(' '.join(attrs.get('args', [])))
                t0 = time.time()
                try:
                    p = subprocess.run(cmd, cwd=d, env=env, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, universal_newlines=True,
                                       timeout=TIMEOUT)
                except subprocess.TimeoutExpired:
                    fail('%s: the %s example ran past %d s' % (where, kind, TIMEOUT))
                    continue
                out, bad = p.stdout, []
                if p.returncode != 0:
                    bad.append('exit status %d' % p.returncode)
                for rx in attrs.get('expect', []):
                    if not re.search(rx, out, re.M):
                        bad.append('no line matches expect="%s"' % rx)
                for f in ' '.join(attrs.get('files', [])).split():
                    fp = os.path.join(d, f)
                    if not (os.path.isfile(fp) and os.path.getsize(fp) > 0):
                        bad.append('no file %s written' % f)
                if bad:
                    fail('%s: the %s example: %s; its output:\n%s' % (where, kind, ', '.join(bad), out[-4000:]))
                else:
                    counts[kind] += 1
                    print('ok: %s: %s example (%.1f s)' % (where, kind, time.time() - t0))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return counts


def main(argv):
    only = None
    run = '--no-run' not in argv
    argv = [a for a in argv if a != '--no-run']
    if '--only' in argv:
        i = argv.index('--only')
        only = argv[i + 1]
        del argv[i:i + 2]
    if not argv:
        raise SystemExit(__doc__.strip().splitlines()[-1].strip())
    binary = os.path.abspath(argv[0])
    files = doc_files(only)
    n = check_links(files)
    print('links: %d relative links in %d files checked' % (n, len(files)))
    counts = run_examples(files, binary) if run else None
    if not only:
        p = subprocess.run([sys.executable, os.path.join(ROOT, 'scripts', 'cli-doc.py'), binary, '--check'])
        if p.returncode != 0:
            fail('docs/cli.md: its option tables differ from the help (above)')
        if counts is not None:
            # the front page's three examples and the pages' at least: a marker lost or a
            # parser that finds nothing must not pass
            for kind, least in (('sh', 10), ('c', 2), ('python', 2)):
                if counts[kind] < least:
                    fail('only %d %s examples ran (expected at least %d)' % (counts[kind], kind, least))
    if failures:
        print('docs_check: %d failure(s)' % len(failures), file=sys.stderr)
        return 1
    if counts is not None:
        print('docs_check: examples run: %d sh, %d c, %d python' % (counts['sh'], counts['c'], counts['python']))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
