#!/usr/bin/env python3
"""The names LOCKTRACE_WRAPPERS patterns are compared with, checked against c++filt: every
function symbol of libstdc++ (.dynsym) and of a C++ program built here, demangled by
unit_wrappers (wrappers.c's reader) and by c++filt, then shortened the same way (template
arguments, parameters and ABI tags dropped). Where the reader gives a name it must be
c++filt's; it must give one for most symbols, and for every name of the built-in list's
families that the sample holds.

  wrappers_names.py UNIT_WRAPPERS SOURCE.cpp
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

LIBSTDCXX = 'libstdc++.so.6'


def shorten(name):
    """c++filt's name as wrappers.c compares it: no <...>, (...), [abi:...], return type or
    qualifiers."""
    name = name.replace('(anonymous namespace)', '\0')
    name = re.sub(r'\[abi:[^\]]*\]', '', name)
    out, depth = [], 0
    for c in name:
        depth += c in '<('
        if depth == 0:
            out.append(c)
        depth -= depth > 0 and c in '>)'
    words = ''.join(out).split()
    while words and words[-1] in ('const', 'volatile', '&', '&&'):
        words.pop()  # qualifiers of a member function
    # a function template's name comes after its return type
    return (words[-1] if words else '').replace('\0', '(anonymous namespace)')


def function_symbols(path, dynamic):
    nm = subprocess.run(['nm', '--defined-only'] + (['-D'] if dynamic else []) + [path],
                        capture_output=True, text=True, check=True).stdout
    syms = set()
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in 'TtWw' and parts[2].startswith('_Z'):
            syms.add(parts[2].split('@')[0])
    return sorted(syms)


def main(argv):
    unit, source = argv
    for tool in ('nm', 'c++filt', 'g++'):
        if not shutil.which(tool):
            print(f'skipped: {tool} is not installed')
            return 77
    lib = subprocess.run(['g++', '-print-file-name=' + LIBSTDCXX], capture_output=True,
                         text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix='lt-names-') as tmp:
        exe = os.path.join(tmp, 'prog')
        subprocess.run(['g++', '-std=c++17', '-g', '-O0', '-pthread', source, '-o', exe], check=True)
        syms = function_symbols(exe, False)
        if os.path.exists(lib):
            syms += function_symbols(os.path.realpath(lib), True)
    text = '\n'.join(syms) + '\n'
    ours = subprocess.run([unit, 'names'], input=text, capture_output=True, text=True,
                          check=True).stdout.splitlines()
    theirs = subprocess.run(['c++filt'], input=text, capture_output=True, text=True,
                            check=True).stdout.splitlines()
    if not (len(ours) == len(theirs) == len(syms)):
        print(f'FAIL: {len(syms)} symbols, {len(ours)} names, {len(theirs)} from c++filt')
        return 1
    wrong = [(s, o, shorten(t)) for s, o, t in zip(syms, ours, theirs)
             if o != '-' and o != shorten(t)]
    read = sum(o != '-' for o in ours)
    families = re.compile(r'^(std::(mutex|shared_mutex|__shared_mutex_pthread|unique_lock|'
                          r'shared_lock|lock_guard|condition_variable)::|std::__glibcxx_rwlock_|'
                          r'__gthread_)')
    missed = [(s, shorten(t)) for s, o, t in zip(syms, ours, theirs)
              if o == '-' and families.match(shorten(t))]
    for s, o, t in wrong[:20]:
        print(f'FAIL {s}: read as {o!r}, c++filt says {t!r}')
    for s, t in missed[:20]:
        print(f'FAIL {s} ({t}): a wrapper family the reader does not follow')
    print(f'{len(syms)} symbols, {read} read ({100 * read // len(syms)} %), {len(wrong)} wrong, '
          f'{len(missed)} wrapper names missed')
    if wrong or missed or read < 0.8 * len(syms):
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
