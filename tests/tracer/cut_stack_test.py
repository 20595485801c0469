#!/usr/bin/env python3
"""Stacks cut short: a self-deadlock (write-held, then write) taken in cut_lock_twice, whose
code has no unwind information in one build (--cut) and has it in the other (--whole). In the
first, the unwind stops at cut_lock_twice: its report's stacks must still name that frame
right and then say that the stack was cut short and why, in the text on stderr, in the JSON
file (`cut`) and in `locktrace report`'s renderings of that file (text, SARIF, HTML). In the
second, the stacks go on to main or the thread's start, and none may say so; nor may one cut
at LOCKTRACE_STACK_DEPTH.

  cut_stack_test.py CHECK --lib LIB --locktrace TOOL --cut PROGRAM --whole PROGRAM
                    --fp PROGRAM --source cut_stack_lock.c

--fp is the first build with frame pointers kept: libunwind follows them where there is no
unwind information, so nothing may say a stack was cut short there either.

Exit 0 on success, 1 with the reasons.
"""
import glob
import json
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from checks import Failed, check_parser, need, run_main  # noqa: E402

TIMEOUT = 30
MARKER = '... stack cut short: no unwind information for '
CUT_LINE = re.compile(r'^    \.\.\. stack cut short: no unwind information for cut_lock_twice '
                      r'\(\S+\+0x[0-9a-f]+\), so its callers are not known '
                      r'\(-fasynchronous-unwind-tables keeps it\)$')


def run(cmd, env):
    """(status, stdout, stderr) of cmd, killed (and failed) after TIMEOUT seconds."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise Failed(f'{cmd} still running after {TIMEOUT} s')
    return proc.returncode, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')


def source_line(path, marker):
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            if f'/* {marker} */' in line:
                return n
    raise Failed(f'no /* {marker} */ in {path}')


def text_stack(text, heading):
    """The indented lines under the first line that starts with heading."""
    lines = text.splitlines()
    at = next((i for i, l in enumerate(lines) if l.startswith(heading)), None)
    need(at is not None, f'no {heading!r} in:\n{text}')
    block = []
    for line in lines[at + 1:]:
        if not line.startswith('    '):
            break
        block.append(line)
    return block


class Ctx:
    def __init__(self, args, tmp):
        self.a = args
        self.tmp = tmp
        self.first = source_line(args.source, 'FIRST')
        self.second = source_line(args.source, 'SECOND')

    def report(self, program, mode, **more):
        """Runs program (mode: 'main' or 'thread') under the tracer with
        LOCKTRACE_ACTION=edeadlk; returns (stderr, the one report file's JSON, `locktrace
        report`'s rendering of it)."""
        rdir = os.path.join(self.tmp, 'reports-' + mode + str(len(more)))
        env = {k: v for k, v in os.environ.items() if not k.startswith('LOCKTRACE_')}
        env.update(LD_PRELOAD=self.a.lib, LOCKTRACE_REPORT_DIR=rdir, LOCKTRACE_ACTION='edeadlk')
        env.update(more)
        status, out, err = run([program] + (['thread'] if mode == 'thread' else []), env)
        # the second call fails with EDEADLK (35 on Linux) after the report; the first succeeds
        need(status == 0 and re.fullmatch(r'\d+\n', out) and 0 < int(out) < 1000,
             f'status {status}, stdout {out!r}, stderr:\n{err}')
        need(err.startswith('locktrace: self-deadlock: '), f'no self-deadlock report first:\n{err}')
        files = [f for f in glob.glob(os.path.join(rdir, '*.json'))
                 if not f.endswith('.summary.json')]
        need(len(files) == 1, f'report files {files}')
        with open(files[0], encoding='utf-8') as f:
            rep = json.load(f)
        env.pop('LD_PRELOAD')
        status, shown, why = run([self.a.locktrace, 'report', rdir], env)
        need(shown.startswith('locktrace: self-deadlock: '),
             f'`locktrace report` status {status}:\n{shown}{why}')
        self.forms = {}
        for form in ('--sarif', '--html'):
            status, self.forms[form], why = run([self.a.locktrace, 'report', form, rdir], env)
            need(status == 0, f'`locktrace report {form}` status {status}: {why}')
        return err, rep, shown

    def sarif_stacks(self):
        """The messages of the SARIF stacks, by the role they start with."""
        results = json.loads(self.forms['--sarif'])['runs'][0]['results']
        need(len(results) == 1, f'{len(results)} SARIF results')
        return {st['message']['text'].split(' ')[0]: st['message']['text']
                for st in results[0]['stacks']}


def json_stack(rep, role):
    stacks = [s for s in rep['stacks'] if s['role'] == role]
    need(len(stacks) == 1, f'{len(stacks)} stacks of role {role} in {rep["stacks"]}')
    return stacks[0]


def check_top(ctx, frame_line, line, where):
    need(re.match(r'^    #0 0x[0-9a-f]+ in cut_lock_twice \S*cut_stack_lock\.c:' + str(line) + ' ',
                  frame_line), f'{where}: frame #0 {frame_line!r}, want cut_stack_lock.c:{line}')


def expect_cut(ctx, program, mode, **more):
    """The request stack (a whole unwind) is cut short at cut_lock_twice and says why; so is the
    earlier acquisition's, unwound (LOCKTRACE_STACKS=full) or recorded lazily: its recorded
    frame is where an unwind there ended, so it is as much as an unwind knows (where libunwind
    goes on past that frame by its frame pointer, the recorded frames are marked as such
    instead: see the fp_* checks)."""
    err, rep, shown = ctx.report(program, mode, **more)
    roles = (('  request (this call):', 'request', ctx.second, True),
             ('  earlier acquisition by this thread', 'held', ctx.first, True))
    for text, what in ((err, 'stderr'), (shown, '`locktrace report`')):
        for heading, role, line, cut in roles:
            block = text_stack(text, heading)
            need(len(block) >= 2, f'{what}, {heading}: {block}')
            check_top(ctx, block[0], line, f'{what}, {heading}')
            # the unwind stops at cut_lock_twice: no frame of the caller, then the reason
            if cut:
                need(CUT_LINE.match(block[1]), f'{what}, {heading}: no cut-short line after '
                     '#0:\n' + '\n'.join(block))
            else:
                need(block[1].startswith('    (frames recorded when it was taken') and
                     not any(MARKER in b for b in block), f'{what}, {heading}: want the '
                     'recorded-frames line, no cut-short line:\n' + '\n'.join(block))
    sarif = ctx.sarif_stacks()
    for _, role, line, cut in roles:
        s = json_stack(rep, role)
        need(s.get('cut') == ('no-unwind-info' if cut else None) and s['partial'] != cut,
             f'JSON {role} stack: cut {s.get("cut")!r}, partial {s["partial"]}')
        need(len(s['frames']) == 1 and s['frames'][0]['function'] == 'cut_lock_twice'
             and s['frames'][0]['line'] == line, f'JSON {role} frames {s["frames"]}')
        msg = sarif.get(role, '')
        need(('stack cut short: no unwind information' in msg) == cut,
             f'SARIF {role} stack: {msg!r}')
    cut = sum(1 for s in rep['stacks'] if 'cut' in s)
    need(ctx.forms['--html'].count('<p class="cut">') == cut,
         f'HTML: {ctx.forms["--html"].count("<p class=")} cut lines for {cut} stacks cut short')


def expect_whole(ctx, program, mode, callers, **more):
    err, rep, shown = ctx.report(program, mode, **more)
    for text, what in ((err, 'stderr'), (shown, '`locktrace report`')):
        need(MARKER not in text, f'{what} says a whole stack was cut short:\n{text}')
        block = text_stack(text, '  request (this call):')
        check_top(ctx, block[0], ctx.second, what)
        for i, fn in enumerate(callers, 1):
            need(len(block) > i and re.match(r'^    #' + str(i) + r' 0x[0-9a-f]+ in ' + fn + ' ',
                                             block[i]), f'{what}: want #{i} {fn} in\n'
                 + '\n'.join(block))
    for s in rep['stacks']:
        need('cut' not in s, f'JSON stack {s["role"]} has cut {s.get("cut")!r}')
    for form, text in ctx.forms.items():
        need('cut short' not in text, f'`locktrace report {form}` says a stack was cut short')
    return rep


def whole_main(ctx):
    expect_whole(ctx, ctx.a.whole, 'main', ['take_twice', 'main'])


def whole_thread(ctx):
    expect_whole(ctx, ctx.a.whole, 'thread', ['take_twice'])


def whole_full(ctx):
    expect_whole(ctx, ctx.a.whole, 'main', ['take_twice', 'main'], LOCKTRACE_STACKS='full')


def whole_depth(ctx):
    """Cut at the depth limit (4 of the stack's 6 or so frames): no cut-short line either."""
    rep = expect_whole(ctx, ctx.a.whole, 'main', ['take_twice', 'main'],
                       LOCKTRACE_STACK_DEPTH='4')
    need(len(json_stack(rep, 'request')['frames']) == 4,
         f'request stack at LOCKTRACE_STACK_DEPTH=4: {json_stack(rep, "request")}')


def expect_not_cut(ctx, program, mode, **more):
    """Without unwind information but with frame pointers, libunwind goes on by the frame
    pointer: the request stack has callers, and no stack (the lazily recorded one, whose walk
    stops at cut_lock_twice, included) may say its callers are not known."""
    err, rep, shown = ctx.report(program, mode, **more)
    for text, what in [(err, 'stderr'), (shown, '`locktrace report`')] + \
            [(t, '`locktrace report ' + f + '`') for f, t in ctx.forms.items()]:
        need(MARKER not in text and 'cut short' not in text,
             f'{what} says a stack was cut short:\n{text}')
    block = text_stack(err, '  request (this call):')
    check_top(ctx, block[0], ctx.second, 'stderr')
    need(len(json_stack(rep, 'request')['frames']) > 1, f'request stack has no callers:\n{err}')
    for s in rep['stacks']:
        need('cut' not in s, f'JSON stack {s["role"]} has cut {s.get("cut")!r}')


def fp_main(ctx):
    expect_not_cut(ctx, ctx.a.fp, 'main')


def fp_full(ctx):
    expect_not_cut(ctx, ctx.a.fp, 'main', LOCKTRACE_STACKS='full')


def cut_main(ctx):
    expect_cut(ctx, ctx.a.cut, 'main')


def cut_thread(ctx):
    expect_cut(ctx, ctx.a.cut, 'thread')


def cut_full(ctx):
    expect_cut(ctx, ctx.a.cut, 'main', LOCKTRACE_STACKS='full')


CHECKS = {f.__name__: f for f in (cut_main, cut_thread, cut_full, whole_main, whole_thread,
                                  whole_full, whole_depth, fp_main, fp_full)}


def main():
    p = check_parser(CHECKS)
    for opt in ('--lib', '--locktrace', '--cut', '--whole', '--fp', '--source'):
        p.add_argument(opt, required=True)
    return run_main(CHECKS, p, (), Ctx)


if __name__ == '__main__':
    sys.exit(main())
