#!/usr/bin/env python3
"""docs/cli.md's option tables, generated from the help text (the commands' option tables).

    python3 scripts/cli-doc.py RAVLT_BIN [--check] [CLI_MD]

Every command of `ravlt --help` (and every sub-command such as `eval coco`) has a block in
docs/cli.md between `<!-- options: NAME -->` and `<!-- /options -->`; `<!-- options: common -->`
holds the common options. This script fills each block with a table of the options of
`ravlt NAME --help` (the text of the help, its continuation lines joined) and rewrites the
file in place (through a temporary renamed into place). With --check it changes nothing and
exits 1 when a block differs from the help, a command has no block or a block names no
command: tests/cli/test_docs.sh runs it so, and the message says what to do.
The prose around the blocks is written by hand; the tables never are.
"""
import os
import re
import subprocess
import sys
import tempfile

OPEN = re.compile(r'^<!-- options: ([a-z0-9 -]+) -->$')
CLOSE = '<!-- /options -->'


def run_help(binary, args):
    env = dict(os.environ, OMP_NUM_THREADS='1', ASAN_OPTIONS='detect_leaks=0')
    p = subprocess.run([binary] + args + ['--help'], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=env, timeout=60)
    if p.returncode != 0:
        raise SystemExit('cli-doc: `ravlt %s --help` failed (exit %d): %s' %
                         (' '.join(args), p.returncode, p.stderr.decode(errors='replace').strip()))
    return p.stdout.decode()


def section(text, title):
    """The option rows of the section that starts with the line `title` (up to a blank line):
    [(option, description)], continuation lines joined."""
    rows, on = [], False
    for line in text.splitlines():
        if line == title:
            on = True
            continue
        if not on:
            continue
        if not line.strip():
            break
        m = re.match(r'^  (-\S.*?)(?:\s{2,}(.*))?$', line)
        if m and not line.startswith(' ' * 6):
            rows.append([m.group(1).strip(), (m.group(2) or '').strip()])
        elif rows:
            rows[-1][1] = (rows[-1][1] + ' ' + line.strip()).strip()
    return rows


def commands(binary):
    """[name]: the commands of `ravlt --help`, each command with sub-commands replaced by them
    (`eval` -> `eval coco`, `eval ade20k`: the lines `usage: ravlt eval SUB ...`)."""
    top = run_help(binary, [])
    names, on = [], False
    for line in top.splitlines():
        if line == 'commands:':
            on = True
            continue
        if on and not line.strip():
            break
        if on and re.match(r'^  [a-z]', line):
            names.append(line.split()[0])
    if not names:
        raise SystemExit('cli-doc: no commands in `ravlt --help`')
    out = []
    for n in names:
        h = run_help(binary, [n])
        if 'options:' in h.splitlines():
            out.append(n)
            continue
        subs = re.findall(r'^(?:usage:)?\s+ravlt ' + re.escape(n) + r' ([a-z0-9-]+) ', h, re.M)
        if not subs:
            raise SystemExit('cli-doc: `ravlt %s --help` has neither options nor sub-commands' % n)
        out.extend(n + ' ' + s for s in dict.fromkeys(subs))
    return out, top


def table(rows):
    def cell(s):
        return s.replace('|', '\\|')
    lines = ['| option | meaning |', '|---|---|']
    for opt, desc in rows:
        lines.append('| `%s` | %s |' % (cell(opt), cell(desc)))
    return lines


def main(argv):
    args = [a for a in argv if a != '--check']
    check = len(args) != len(argv)
    if not args:
        raise SystemExit(__doc__.strip().splitlines()[2].strip())
    binary = args[0]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = args[1] if len(args) > 1 else os.path.join(root, 'docs', 'cli.md')
    names, top = commands(binary)
    tables = {'common': table(section(top, 'common options (before or after the command):'))}
    for n in names:
        rows = section(run_help(binary, n.split()), 'options:')
        if not rows:
            raise SystemExit('cli-doc: no options in `ravlt %s --help`' % n)
        tables[n] = table(rows)

    src = open(path).read().splitlines()
    out, seen, problems, i = [], set(), [], 0
    while i < len(src):
        m = OPEN.match(src[i])
        out.append(src[i])
        i += 1
        if not m:
            continue
        name = m.group(1).strip()
        j = i
        while j < len(src) and src[j] != CLOSE:
            if OPEN.match(src[j]):
                break
            j += 1
        if j == len(src) or src[j] != CLOSE:
            raise SystemExit('cli-doc: %s: the block of `%s` has no %s' % (path, name, CLOSE))
        if name not in tables:
            problems.append('%s: a block for `ravlt %s`, which `ravlt --help` does not list '
                            '(remove it, or the command is missing)' % (path, name))
            out.extend(src[i:j])
        else:
            seen.add(name)
            new = [''] + tables[name] + ['']
            if src[i:j] != new:
                problems.append('%s: the options of `ravlt %s` differ from `ravlt %s --help`' %
                                (path, name, name))
            out.extend(new)
        out.append(CLOSE)
        i = j + 1
    for n in ['common'] + names:
        if n not in seen:
            problems.append('%s: no `<!-- options: %s -->` block: add a section for `ravlt %s` '
                            '(prose by hand, the block empty) and run this script' % (path, n, n))
    if check:
        for p in problems:
            print('cli-doc: ' + p, file=sys.stderr)
        if problems:
            print('cli-doc: docs/cli.md is out of date: run `python3 scripts/cli-doc.py %s` '
                  'and commit docs/cli.md' % binary, file=sys.stderr)
            return 1
        print('cli-doc: docs/cli.md has the options of %d commands, as their --help' % len(names))
        return 0
    text = '\n'.join(out) + '\n'
    fd, tmp = tempfile.mkstemp(prefix='.cli.md.', dir=os.path.dirname(os.path.abspath(path)))
    with os.fdopen(fd, 'w') as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    missing = [p for p in problems if 'no `<!-- options' in p or 'does not list' in p]
    for p in missing:
        print('cli-doc: ' + p, file=sys.stderr)
    print('cli-doc: %s: the options of %d commands written' % (path, len(names)))
    return 1 if missing else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
