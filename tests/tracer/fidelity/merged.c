/*
 * merged.c - two functions that end in the same lock call, inlined into main: clang at -O2
 * merges the two calls into one instruction, which DWARF gives line 0 (no line). A report
 * whose frame is that call must say why it names no line rather than print ":0" alone. The
 * comments marked with @ name the lines fidelity_test.py checks.
 *
 *   merged write   write lock, then write lock again (a self-deadlock)
 *   merged read    read lock, then write lock (a self-deadlock)
 */
#include <pthread.h>
#include <string.h>

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

static void write_write(void)
{
    pthread_rwlock_wrlock(&rw);
    pthread_rwlock_wrlock(&rw); /* @write */
    pthread_rwlock_unlock(&rw);
}

static void read_write(void)
{
    pthread_rwlock_rdlock(&rw);
    pthread_rwlock_wrlock(&rw); /* @read */
    pthread_rwlock_unlock(&rw);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "write") == 0)
        write_write();
    else
        read_write();
    return 0;
}
