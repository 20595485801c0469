/*
 * wrappers.h - lock wrappers by name (wrappers.c): the built-in list (libstdc++, GLib) and
 * LOCKTRACE_WRAPPERS.
 */
#ifndef LT_WRAPPERS_H
#define LT_WRAPPERS_H

#include <stddef.h>
#include <stdint.h>

/* Reads LOCKTRACE_WRAPPERS' value at load; a bad list ends the process with status 2. */
void lt_wrappers_load(const char *list);

/* The name patterns are compared with, for symbol sym (as linked), into buf: qualified,
 * without template arguments or parameters. 0 when sym is a form wrappers.c does not read. */
int lt_wrapper_name(const char *sym, char *buf, size_t size);

/* Whether the function that return address ra returns into is a lock wrapper: 1 yes, 0 no,
 * -1 not known yet (ask again at a later call). Allocates nothing, takes no lock. */
int lt_wrapper_at(uintptr_t ra);

/* Whether a function named as a report shows it (demangled, "std::lock_guard<std::mutex>::
 * lock_guard(std::mutex&)") is a lock wrapper: for the calls inlined at an address. */
int lt_wrapper_named(const char *function);

#endif
