/*
 * tool.h - the parts of the `locktrace` command: main.c dispatches, launch.c runs a program
 * under the tracer, render.c prints report files.
 */
#ifndef LT_TOOL_H
#define LT_TOOL_H

#include <stdio.h>

extern const char lt_tool_report_usage[];
extern const char lt_tool_dump_usage[];

/* The command as it was run ("build/tracer/locktrace" from a build tree, "locktrace" through
 * PATH): what a message tells the user to type next. */
extern const char *lt_tool_self;

/* `locktrace dump PID` (argv after "dump"): asks a traced program for its thread dump. */
int lt_tool_dump(int argc, char **argv);

/* The pids of the processes that name launcher as theirs (LOCKTRACE_LAUNCHER_PID in their
 * environment), at most max into pids; returns how many. */
int lt_tool_tree(int launcher, int *pids, int max);

/* The launcher's --help text, with every option of config.def. */
void lt_tool_launch_usage(FILE *to);

/* `locktrace [options] [--] program [args...]`; returns the exit status to pass on. */
int lt_tool_launch(int argc, char **argv);

/* `locktrace report [--json] FILE...` (argv after "report"). */
int lt_tool_report(int argc, char **argv);

/* The report and summary files in dir (NULL-terminated names); every entry, with lt_tool_list_all. */
char **lt_tool_list_reports(const char *dir);
char **lt_tool_list_all(const char *dir);
void lt_tool_free_list(char **names);

/* Distinct reports by kind. */
#define LT_TOOL_KINDS 16
typedef struct lt_kind_counts {
    size_t n;
    struct {
        char kind[64];
        long reports;
    } k[LT_TOOL_KINDS];
} lt_kind_counts;

/* Counts the report files in dir that are not listed in `before` (NULL-terminated names, or
 * NULL) and name this launcher, by kind; with say, prints the one-line summary on stderr when
 * there are any, and a line for the reports `heard` counts (the launcher's socket) beyond
 * them: reports with no file. Returns the number of reports, those without a file too. */
int lt_tool_summarize(const char *dir, char **before, int say, const lt_kind_counts *heard);

/* channel.c: the launcher's socket, on which every traced process says how many reports it
 * made (LOCKTRACE_LAUNCHER_SOCKET, set by lt_channel_open); -1 where there is none (report
 * files alone count then). lt_channel_drain reads what waits on it; lt_channel_heard sums it
 * up by kind. */
int lt_channel_open(void);
void lt_channel_drain(int fd);
void lt_channel_heard(lt_kind_counts *out);
/* A line on stderr for the programs the tree started untraced, one for those started traced
 * but out of the socket's reach; nothing when there were none. */
void lt_channel_say_started(void);

#endif
