/*
 * vm_bytes.h - the process's mapped address space, for the tests that run the tracer under an
 * address-space limit (RLIMIT_AS) set a little above what the process already maps.
 */
#ifndef VM_BYTES_H
#define VM_BYTES_H

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

/* Bytes mapped now (the first field of /proc/self/statm), -1 when it cannot be read. */
static inline long vm_bytes(void)
{
    char buf[256];
    int fd = open("/proc/self/statm", O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    return atol(buf) * sysconf(_SC_PAGESIZE);
}

#endif
