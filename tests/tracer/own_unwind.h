/*
 * own_unwind.h - a program's own unwind with libunwind (own_unwind.c, unwind_callout.c): the
 * frames unw_step goes through from the caller outwards, 0 where libunwind cannot start.
 */
#ifndef OWN_UNWIND_H
#define OWN_UNWIND_H
#define UNW_LOCAL_ONLY
#include <libunwind.h>

static inline __attribute__((always_inline)) int own_unwind_steps(void)
{
    unw_context_t context;
    unw_cursor_t cursor;
    int n = 0;
    if (unw_getcontext(&context) == 0 && unw_init_local(&cursor, &context) == 0)
        while (unw_step(&cursor) > 0)
            n++;
    return n;
}
#endif
