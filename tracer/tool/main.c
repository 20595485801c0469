/*
 * main.c - the `locktrace` command: `locktrace report ...` prints report files (render.c),
 * `locktrace dump PID` asks a traced program for a thread dump (dump_cmd.c), anything else
 * runs a program under the tracer (launch.c). `--` before a program named "report" runs it.
 */
#include <stdio.h>
#include <string.h>

#include "report_data.h"
#include "tool.h"

const char lt_tool_report_usage[] =
    "usage: locktrace report [--json | --sarif | --html] [--as-recorded] [--path-map OLD=NEW]\n"
    "                        [--source-root DIR] FILE|DIR...\n"
    "Prints each JSON report file as the text the program printed, re-symbolizing its frames\n"
    "(function, file:line, inlined calls) from the binaries on disk when their build-ids match\n"
    "the report; a rebuilt binary is never used, and a note says so. A directory stands for\n"
    "the report files in it (a missing one, for none: a clean run makes no directory),\n"
    "summary files (*.summary.json) skipped; a summary file named alone stands for the\n"
    "report files it lists.\n"
    "  --json          normalized JSON instead of text\n"
    "  --sarif         one SARIF 2.1.0 log of every report (GitHub code scanning), source\n"
    "                  paths relative to --source-root (default: the current directory)\n"
    "  --html          one self-contained HTML page of every report: stacks with their source\n"
    "                  lines, a graph of the threads and locks of each finding\n"
    "  --path-map OLD=NEW  binaries and sources the reports name under OLD are read under NEW\n"
    "                  (reports copied from a CI machine; repeatable)\n"
    "  --as-recorded   the frames as the program symbolized them (no re-symbolizing)\n"
    "Binaries missing here are fetched by build-id from the debuginfod servers in\n"
    "DEBUGINFOD_URLS, when it is set. Exit status 1 when a file could not be read as a report.\n";

const char lt_tool_dump_usage[] =
    "usage: locktrace dump PID\n"
    "Asks a program running under the tracer (or every program under the launcher PID) for\n"
    "its thread dump: every thread's held locks and waits, printed on the program's stderr.\n"
    "The program must have been started with a dump signal (--dump-signal=SIGUSR1). With\n"
    "report files on, the dump's file is waited for (5 s): a program with a handler of its\n"
    "own for that signal writes none, and the status is 1.\n";

const char *lt_tool_self = "locktrace";

int main(int argc, char **argv)
{
    if (argc > 0 && strchr(argv[0], '/'))
        lt_tool_self = argv[0];
    if (argc > 1 && strcmp(argv[1], "report") == 0)
        return lt_tool_report(argc - 2, argv + 2);
    if (argc > 1 && strcmp(argv[1], "dump") == 0)
        return lt_tool_dump(argc - 2, argv + 2);
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        lt_tool_launch_usage(stdout);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        printf("locktrace %s (report format version %d)\n", LT_VERSION, LT_REPORT_VERSION);
        return 0;
    }
    return lt_tool_launch(argc - 1, argv + 1);
}
