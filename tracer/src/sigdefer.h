/*
 * sigdefer.h - the program's handlers of asynchronous signals run outside the tracer
 * (sigdefer.c). lt_sig_flush, which lt_leave calls, is declared in lt_internal.h.
 */
#ifndef LT_SIGDEFER_H
#define LT_SIGDEFER_H

#include <signal.h>

#include "spin.h"

typedef int (*lt_sigaction_fn)(int, const struct sigaction *, struct sigaction *);

/* The process the tracer starts in is the one whose actions are kept (interpose_signal.c's
 * constructor). */
void lt_sig_init(void);

/* Whether the program's sigaction for sig goes through lt_sig_sigaction: an asynchronous
 * signal. */
int lt_sig_ours(int sig);

/* The program's sigaction(sig, act, old) for a signal lt_sig_ours: a handler of the program's
 * is kept here and the tracer's wrapper installed with its mask and flags; old is the
 * program's own action. real is libc's sigaction. */
int lt_sig_sigaction(int sig, const struct sigaction *act, struct sigaction *old,
                     lt_sigaction_fn real);

/* Runs the program's action a (a handler function) for a signal now, or, when the thread is
 * inside the tracer, at its lt_leave. For a handler of the tracer's that stands in for the
 * program's (dumpsig.c). */
void lt_sig_dispatch(int sig, siginfo_t *info, void *uctx, const struct sigaction *a);

/* sig's kernel handler is the tracer's own for good, and runs the program's handler through
 * lt_sig_dispatch (dumpsig.c's): blocked, as the wrapper's signals are, from a deferral in a
 * thread to its flush. */
void lt_sig_dispatches(int sig);

/* The thread leaves for good (busy LT_BUSY_PASS): deferred handlers run, their records go. */
void lt_sig_thread_exit(void);

/* A fork's child: the signals deferred in the forking thread were the parent's. */
void lt_sig_fork(lt_fork_phase phase);

#endif
