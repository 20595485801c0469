/*
 * vm_bytes.h - the process's mapped address space, for the tests that run the tracer under an
 * address-space limit (RLIMIT_AS) set a little above what the process already maps.
 */
#ifndef VM_BYTES_H
#define VM_BYTES_H

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The file at path (of /proc/self) in buf, NUL-terminated; 0 when it cannot be read. */
static inline int proc_text(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, size - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    return 1;
}

/* Bytes mapped now (the first field of /proc/self/statm), -1 when it cannot be read. */
static inline long vm_bytes(void)
{
    char buf[256];
    return proc_text("/proc/self/statm", buf, sizeof buf) ? atol(buf) * sysconf(_SC_PAGESIZE) : -1;
}

/* The most bytes the process has mapped at once (VmPeak in /proc/self/status), -1 when it
 * cannot be read. */
static inline long vm_peak_bytes(void)
{
    char buf[4096];
    const char *peak =
        proc_text("/proc/self/status", buf, sizeof buf) ? strstr(buf, "\nVmPeak:") : NULL;
    return peak ? atol(peak + 8) * 1024 : -1;
}

#endif
