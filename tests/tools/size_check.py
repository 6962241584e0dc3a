#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Size rules for the non-test sources (*.cc, *.h under config/, probes/,
aging/ and exporter/): a file has at most 600 lines, a function at most
80, counted from the line that names it to its closing brace. A lambda or
a local class counts as part of the function it is in.

  tests/tools/size_check.py SOURCE_DIR ALLOWLIST
  tests/tools/size_check.py --self-test

Functions and their extents come from universal-ctags (its C++ parser
skips strings, raw strings and comments; --fields=+e gives each
definition's end line): the whole tree takes well under a second, and
needs no build.

The allowlist holds what is still over a limit, one "PATH LINES" (a file)
or "PATH:FUNCTION LINES" line each; a line starting with '#' is a comment. It may only
shrink: an entry that grew, or a violation it does not list, fails; so
does an entry no longer over its limit ("remove it from the allowlist"),
so the list ratchets down as files and functions are split.

The checker is first run on planted files in a temporary directory
(an over-long file, an over-long function, one made long by its lambda,
a grown entry, an entry to remove), each of which it must report; then
on the source tree (--self-test: only the first).
"""
import os
import subprocess
import sys
import tempfile

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
FOLDERS = ('config', 'probes', 'aging', 'exporter')


def sources(root):
    out = []
    for folder in FOLDERS:
        for d, _, files in os.walk(os.path.join(root, folder)):
            out += [os.path.relpath(os.path.join(d, f), root)
                    for f in files if f.endswith(('.cc', '.h'))]
    return sorted(out)


def ctags(root, paths):
    """Each file's tags as (path, line, end, name, kind, scope)."""
    fmt = '%F\t%n\t%{end}\t%N\t%K\t%{scope}'
    cmd = ['ctags', '--language-force=C++', '--kinds-C++=fn', '--fields=+neK',
           '-x', '--_xformat=' + fmt, '-L', '-', '-o', '-']
    try:
        res = subprocess.run(cmd, cwd=root, input='\n'.join(paths), capture_output=True,
                             text=True, check=False)
    except FileNotFoundError:
        sys.exit('size_check: ctags not found (Debian: universal-ctags)')
    if res.returncode != 0 or 'Universal Ctags' not in version():
        sys.exit('size_check: universal-ctags failed: ' + res.stderr.strip())
    tags = []
    for line in res.stdout.splitlines():
        f, n, end, name, kind, scope = (line.split('\t') + [''] * 6)[:6]
        if not end.isdigit():
            sys.exit(f'size_check: {f}:{n}: ctags gives {kind} {name} no end line')
        tags.append((f, int(n), int(end), name, kind, scope))
    return tags


def version():
    try:
        return subprocess.run(['ctags', '--version'], capture_output=True, text=True,
                              check=False).stdout
    except FileNotFoundError:
        return ''


def functions(tags):
    """Per file, the outermost functions as (name, first line, lines): a
    function inside another (a lambda, a local class's member) is part
    of it. Names drop the namespaces; a lambda outside any function is
    "lambda"; a name a file has twice gets "#2", "#3"."""
    by_file = {}
    for t in tags:
        by_file.setdefault(t[0], []).append(t)
    out = {}
    for f, ts in by_file.items():
        spaces = {(t[5] + '::' + t[3]) if t[5] else t[3] for t in ts if t[4] == 'namespace'}
        funcs = sorted((t for t in ts if t[4] == 'function'), key=lambda t: (t[1], -t[2]))
        outer, seen = [], {}
        for _, line, end, name, _, scope in funcs:
            if outer and line >= outer[-1][1] and end <= outer[-1][1] + outer[-1][2] - 1:
                continue
            parts = scope.split('::') if scope else []
            strip = max((i for i in range(len(parts) + 1)
                         if i == 0 or '::'.join(parts[:i]) in spaces), default=0)
            qual = '::'.join(parts[strip:] + ['lambda' if name.startswith('__anon') else name])
            seen[qual] = seen.get(qual, 0) + 1
            if seen[qual] > 1:
                qual += f'#{seen[qual]}'
            outer.append((qual, line, end - line + 1))
        out[f] = outer
    return out


def measure(root):
    """Everything over a limit: {key: (lines, limit, where, what)}."""
    paths = sources(root)
    over = {}
    for p in paths:
        with open(os.path.join(root, p), 'rb') as fh:
            n = fh.read().count(b'\n')
        if n > MAX_FILE_LINES:
            over[p] = (n, MAX_FILE_LINES, p, 'file')
    for f, funcs in functions(ctags(root, paths)).items():
        for qual, line, n in funcs:
            if n > MAX_FUNCTION_LINES:
                over[f'{f}:{qual}'] = (n, MAX_FUNCTION_LINES, f'{f}:{line}', f'function {qual}')
    return over


def read_allowlist(path):
    entries, problems = {}, []
    with open(path, encoding='utf-8') as fh:
        for i, raw in enumerate(fh, 1):
            line = raw.strip()
            if not line or line.startswith('#'):
                continue
            fields = line.split()
            if len(fields) != 2 or not fields[1].isdigit():
                problems.append(f'{path}:{i}: expected "PATH[:FUNCTION] LINES", got "{line}"')
                continue
            if fields[0] in entries:
                problems.append(f'{path}:{i}: {fields[0]} is listed twice')
            entries[fields[0]] = int(fields[1])
    return entries, problems


def check(root, allowlist):
    """The problems, one line each; none when the rules hold."""
    entries, problems = read_allowlist(allowlist)
    over = measure(root)
    for key, (n, limit, where, what) in sorted(over.items()):
        listed = entries.get(key)
        if listed is None:
            problems.append(f'{where}: {what} has {n} lines (limit {limit}); split it')
        elif n > listed:
            problems.append(f'{where}: {what} has {n} lines (limit {limit}), more than the '
                            f'{listed} the allowlist grants it; split it')
        elif n < listed:
            problems.append(f'{where}: {what} has {n} lines (limit {limit}): lower its '
                            f'allowlist entry from {listed} to {n}')
    for key, listed in sorted(entries.items()):
        if key not in over:
            problems.append(f'{key}: within its limit now (allowlist: {listed}): remove it '
                            f'from the allowlist')
    return problems


def self_test():
    body = ''.join(f'  x += {i};\n' for i in range(MAX_FUNCTION_LINES - 3))
    planted = {
        # 81 lines from the name to the brace, a raw string with braces in it.
        'aging/long_function.cc':
            'namespace drivewatch::aging {\nnamespace {\n'
            'const char* kBraces = R"(} {{ })";\n}  // namespace\n'
            f'int Long(int x) {{\n  // }}\n{body}  return x;\n}}\n'
            '}  // namespace drivewatch::aging\n',
        # Short itself, long with its lambda.
        'probes/long_lambda.cc':
            'namespace drivewatch {\nstruct Probe {\n  int Run();\n};\n'
            f'int Probe::Run() {{\n  auto f = [&](int x) {{\n{body}    return x;\n  }};\n'
            '  return f(1);\n}\n}  // namespace drivewatch\n',
        'exporter/long_file.h': '// long\n' * (MAX_FILE_LINES + 1),
        # Within the limits: exactly 80 and 600 lines.
        'config/fits.cc': f'int Fits(int x) {{\n{body}  return x;\n}}\n' +
                          '\n' * (MAX_FILE_LINES - MAX_FUNCTION_LINES),
        'exporter/grown.cc': f'int Grown(int x) {{\n{body}  x += 1;\n  x += 2;\n  return x;\n}}\n',
        'aging/shrunk.cc': f'int Shrunk(int x) {{\n{body}  x += 1;\n  return x;\n}}\n',
        'probes/fixed.cc': 'int Fixed() { return 1; }\n',
    }
    allow = ('# planted\nexporter/grown.cc:Grown 81\naging/shrunk.cc:Shrunk 90\n'
             'probes/fixed.cc:Fixed 85\n')
    wants = [
        'aging/long_function.cc:5: function Long has 81 lines (limit 80); split it',
        'probes/long_lambda.cc:5: function Probe::Run has 83 lines (limit 80); split it',
        'exporter/long_file.h: file has 601 lines (limit 600); split it',
        'exporter/grown.cc:1: function Grown has 82 lines (limit 80), more than the 81',
        'aging/shrunk.cc:1: function Shrunk has 81 lines (limit 80): lower its allowlist '
        'entry from 90 to 81',
        'probes/fixed.cc:Fixed: within its limit now (allowlist: 85): remove it',
    ]
    with tempfile.TemporaryDirectory(prefix='dw-size.') as tmp:
        for rel, text in planted.items():
            os.makedirs(os.path.join(tmp, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), 'w', encoding='utf-8') as fh:
                fh.write(text)
        with open(os.path.join(tmp, 'allow.txt'), 'w', encoding='utf-8') as fh:
            fh.write(allow)
        got = check(tmp, os.path.join(tmp, 'allow.txt'))
    missed = [w for w in wants if not any(g.startswith(w) for g in got)]
    extra = [g for g in got if not any(g.startswith(w) for w in wants)]
    if missed or extra:
        print('FAIL: the checker on planted files:')
        print('\n'.join([f'  missed: {m}' for m in missed] + [f'  extra: {e}' for e in extra]))
        print('  it reported:\n' + '\n'.join('    ' + g for g in got))
        return 1
    print(f'ok: the checker reports each of {len(wants)} planted violations and no other')
    return 0


def main(argv):
    if argv == ['--self-test']:
        return self_test()
    if len(argv) != 2:
        print(__doc__.split('\n\n')[1], file=sys.stderr)
        return 2
    root, allowlist = argv
    if self_test() != 0:
        return 1
    problems = check(root, allowlist)
    if problems:
        print('FAIL: size limits (file 600 lines, function 80):')
        print('\n'.join('  ' + p for p in problems))
        return 1
    print(f'ok: no file over {MAX_FILE_LINES} lines, no function over {MAX_FUNCTION_LINES}, '
          f'beyond the allowlist')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
