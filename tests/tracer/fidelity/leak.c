/*
 * leak.c - a lock leaked by a call that returned (Leaky's path), then requested again
 * through the very same helpers from another caller (Other's path): a self-deadlock. The
 * earlier acquisition's recorded frames (the helpers) are the request's, call site for call
 * site, so the request's callers must not be shown as the earlier acquisition's: its stack
 * names Leaky, or says it is only the frames recorded. The comments marked with @ name lines
 * fidelity_test.py checks; keep them on the lines they mark. The volatile `after` behind each
 * marked call keeps it from becoming a tail call.
 *
 *   leak         Leaky() leaks the lock, then Other() requests it
 *   leak loop    one loop takes the lock twice at the same call site: the earlier
 *                acquisition's frames are the same as the request's, at any depth
 *   leak free    Leaky() leaks a lock in a heap block, then main frees the block: the
 *                holder's frames have returned (LOCKTRACE_FREE_HELD=report: it goes on)
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER, *target = &m;
static volatile int after;

__attribute__((noinline)) void Take(void)
{
    pthread_mutex_lock(target); /* @Take */
    after = 1;
}

__attribute__((noinline)) void Depth1(void)
{
    Take(); /* @Depth1 */
    after = 2;
}

__attribute__((noinline)) void Depth2(void)
{
    Depth1(); /* @Depth2 */
    after = 3;
}

__attribute__((noinline)) void Depth3(void)
{
    Depth2(); /* @Depth3 */
    after = 4;
}

__attribute__((noinline)) void Depth4(void)
{
    Depth3(); /* @Depth4 */
    after = 5;
}

__attribute__((noinline)) void Depth5(void)
{
    Depth4(); /* @Depth5 */
    after = 6;
}

__attribute__((noinline)) void Leaky(void)
{
    Depth5(); /* @Leaky */
    after = 7;
}

__attribute__((noinline)) void Other(void)
{
    Depth5(); /* @Other */
    after = 8;
}

__attribute__((noinline)) void Loop(void)
{
    for (int i = 0; i < 2; i++)
        Depth5(); /* @Loop */
    after = 9;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "free") == 0) {
        target = malloc(sizeof *target);
        pthread_mutex_init(target, NULL);
        Leaky(); /* @main:free */
        free(target);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "loop") == 0) {
        Loop(); /* @main:loop */
        after = 10;
        return 0;
    }
    Leaky(); /* @main:leaky */
    Other(); /* @main:other */
    after = 11;
    return 0;
}
