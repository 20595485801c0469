#!/usr/bin/env python3
"""Makes locktrace.1 from locktrace.1.in: @OPTIONS@ becomes the option list that
`locktrace --help` prints (so the page names every option the tracer has), @VERSION@ the
version.

  man_options.py LOCKTRACE TEMPLATE OUTPUT VERSION
"""
import re
import subprocess
import sys


def roff(text):
    """Text safe inside a roff line: backslashes and hyphens escaped, no leading dot."""
    text = text.replace('\\', '\\e').replace('-', '\\-')
    return '\\&' + text if text.startswith(('.', "'")) else text


def options(help_text):
    lines = help_text.split('\n')
    out = []
    for i, line in enumerate(lines):
        m = re.match(r'^  (--[a-z-]+)=(\S+)  \((LOCKTRACE_\w+), default (.*)\)$', line)
        if not m:
            continue
        name, values, var, default = m.groups()
        what = lines[i + 1].strip() if i + 1 < len(lines) else ''
        out += ['.TP', f'.BI "{roff(name)}=" {roff(values)}',
                f'{roff(what)} ({roff(var)}; default {roff(default)})']
    if not out:
        sys.exit('man_options.py: no options in the --help text')
    return '\n'.join(out)


def main():
    locktrace, template, output, version = sys.argv[1:]
    help_text = subprocess.run([locktrace, '--help'], capture_output=True, text=True,
                               check=True).stdout
    page = open(template).read().replace('@OPTIONS@', options(help_text))
    open(output, 'w').write(page.replace('@VERSION@', version))


if __name__ == '__main__':
    main()
