/*
 * classes.h - lock classes and the order graph over them (classes.c): predicted lock-order
 * inversions between locks that never met (LOCKTRACE_CLASSES).
 */
#ifndef LT_CLASSES_H
#define LT_CLASSES_H

#include "lt_internal.h"

/* After a successful acquisition of ev->lock while the thread holds others, with classes on
 * (lt_cfg.classes != LT_CLASSES_OFF); before the lock joins the held set. */
void lt_classes_acquired(lt_event *ev);
/* locktrace_annotate_class, locktrace_annotate_nesting (locktrace.h). */
void lt_classes_annotate(lt_event *ev, const char *name);
void lt_classes_nesting(lt_event *ev, unsigned order);
void lt_classes_fork(lt_fork_phase phase);

#endif
