/*
 * symbolize.h - frames of a report re-explained from the binaries on disk (libdw), only where
 * the binary's build-id is the one the report recorded.
 */
#ifndef LT_SYMBOLIZE_H
#define LT_SYMBOLIZE_H

#include "report_data.h"

typedef struct lt_symbolizer lt_symbolizer;

/* Told once per module that cannot be used, with a one-line reason naming it. */
typedef struct lt_symbolizer_notes {
    void (*fn)(void *arg, const char *line);
    void *arg;
} lt_symbolizer_notes;

lt_symbolizer *lt_symbolizer_new(void);
void lt_symbolizer_free(lt_symbolizer *sz);

/* Writes s's frames, re-symbolized and with inlined frames added, to out (at most max);
 * returns the count. Strings in out live as long as sz and the report. */
size_t lt_symbolize_stack(lt_symbolizer *sz, const lt_rep_stack *s, lt_rep_frame *out, size_t max,
                          lt_symbolizer_notes *notes);

#endif
