/*
 * wfdtor.c - a shared library whose destructor says it ran: LOCKTRACE_EXITCODE must change
 * the status without skipping the destructors of the program's libraries.
 */
#include <unistd.h>

void wf_library_marker(void);

void wf_library_marker(void)
{
}

__attribute__((destructor)) static void said_at_unload(void)
{
    static const char msg[] = "\nlibrary destructor ran\n";
    (void)!write(1, msg, sizeof msg - 1);
}
