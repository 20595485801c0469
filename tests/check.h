/*
 * check.h - the tiny helper every C unit test uses: named checks, a pass/fail count, and a
 * summary line. main() returns check_summary(), which is nonzero when any check failed, so
 * meson records the test as failed.
 */
#ifndef CHECK_H
#define CHECK_H

#include <stdio.h>

static int check_passed, check_failed;

/* Records one check; prints the failing expression with its place, stays quiet on success. */
#define CHECK(cond) check_record((cond) != 0, #cond, __FILE__, __LINE__)

/* Like CHECK, with a printf-style explanation printed only when it fails. */
#define CHECKF(cond, ...) \
    (check_record((cond) != 0, #cond, __FILE__, __LINE__) ? 1 : (printf("    "), printf(__VA_ARGS__), printf("\n"), 0))

static inline int check_record(int ok, const char *what, const char *file, int line)
{
    if (ok) {
        check_passed++;
        return 1;
    }
    check_failed++;
    printf("FAIL %s:%d: %s\n", file, line, what);
    fflush(stdout);
    return 0;
}

static inline int check_summary(void)
{
    printf("%d checks passed, %d failed\n", check_passed, check_failed);
    return check_failed != 0;
}

#endif
