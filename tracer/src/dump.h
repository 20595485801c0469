/*
 * dump.h - thread dumps on request (dump.c).
 */
#ifndef LT_DUMP_H
#define LT_DUMP_H

void lt_dump_install(void);
void lt_dump_threads(int symbolize);
void lt_dump_other_threads(void);
void lt_dump_other_threads(void);
void lt_dump_held_at_signal(int sig, const char *name);

#endif
