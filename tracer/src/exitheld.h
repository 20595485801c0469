/*
 * exitheld.h - LOCKTRACE_EXIT_HELD=report (exitheld.c): the locks every thread still holds
 * when the process exits or dies of a fatal signal.
 */
#ifndef LT_EXITHELD_H
#define LT_EXITHELD_H

void lt_exit_held_setup(void);

#endif
