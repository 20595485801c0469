/*
 * trapstep.h - for tests that single-step a lock call (x86-64's trap flag, a SIGTRAP handler
 * that runs after each instruction) to send signals at chosen instructions in the tracer.
 * Include it with _GNU_SOURCE defined, after pc.h.
 */
#ifndef TRAPSTEP_H
#define TRAPSTEP_H

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define TRAP_FLAG 0x100

/* The executable segment of the object holding the lock call the program links to, but
 * libc's: the tracer's, when it is preloaded. [*lo, *hi), both 0 when there is none. */
static inline int trapstep_find(struct dl_phdr_info *info, size_t size, void *bounds)
{
    uintptr_t *b = bounds, fn = (uintptr_t)dlsym(RTLD_DEFAULT, "pthread_mutex_lock");
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && fn - lo < ph->p_memsz &&
            !strstr(info->dlpi_name, "libc.so")) {
            b[0] = lo;
            b[1] = lo + ph->p_memsz;
            return 1;
        }
    }
    return 0;
}

static inline void trapstep_tracer(uintptr_t *lo, uintptr_t *hi)
{
    uintptr_t bounds[2] = {0, 0};
    dl_iterate_phdr(trapstep_find, bounds);
    *lo = bounds[0];
    *hi = bounds[1];
}

/* The address of the tracer's function `name`, a local one too (its ELF symbol table: the
 * build's library is not stripped); 0 when there is none. For a test that holds a thread at
 * the entry of one step of the tracer's. */
static inline uintptr_t trapstep_tracer_function(const char *name)
{
    Dl_info info;
    struct stat st;
    uintptr_t found = 0;
    if (!dladdr(dlsym(RTLD_DEFAULT, "pthread_mutex_lock"), &info) || !info.dli_fname)
        return 0;
    int fd = open(info.dli_fname, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    const char *elf = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (elf == MAP_FAILED)
        return 0;
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)elf;
    const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(elf + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum && !found; i++) {
        if (sh[i].sh_type != SHT_SYMTAB)
            continue;
        const ElfW(Sym) *sym = (const ElfW(Sym) *)(elf + sh[i].sh_offset);
        const char *names = elf + sh[sh[i].sh_link].sh_offset;
        for (size_t k = 0; k < sh[i].sh_size / sizeof *sym && !found; k++)
            if (ELF64_ST_TYPE(sym[k].st_info) == STT_FUNC && sym[k].st_value &&
                strcmp(names + sym[k].st_name, name) == 0)
                found = (uintptr_t)info.dli_fbase + sym[k].st_value;
    }
    munmap((void *)elf, (size_t)st.st_size);
    return found;
}

/* sig to the calling thread: delivered before the call returns, unless it is blocked. */
static inline void trapstep_send(int sig)
{
    syscall(SYS_tgkill, getpid(), gettid(), sig);
}

/* For a trap handler at pc: sends sig while pc is in [lo, hi), until one sent was not run
 * by the next instruction there (its handler adds to *counted): deferred, 1. *sent_at, the
 * count at the last send, starts at -1. */
static inline int trapstep_deferred(uintptr_t pc, uintptr_t lo, uintptr_t hi, int sig,
                                    atomic_int *counted, int *sent_at)
{
    if (pc - lo >= hi - lo)
        return 0;
    if (*sent_at >= 0 && atomic_load(counted) == *sent_at)
        return 1;
    *sent_at = atomic_load(counted);
    trapstep_send(sig);
    return 0;
}

/* The trap flag in the context a trap handler returns to: on, the next instruction traps. */
static inline void trapstep_flag(ucontext_t *uc, int on)
{
    if (on)
        uc->uc_mcontext.gregs[REG_EFL] |= TRAP_FLAG;
    else
        uc->uc_mcontext.gregs[REG_EFL] &= ~TRAP_FLAG;
}

/* sa, with an empty mask, as sig's action. */
static inline void trapstep_install(int sig, struct sigaction sa)
{
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

static pthread_mutex_t trapstep_mutex = PTHREAD_MUTEX_INITIALIZER;

/* One lock call, from one stack each time. */
static void __attribute__((noinline)) trapstep_lock_site(void)
{
    pthread_mutex_lock(&trapstep_mutex);
    pthread_mutex_unlock(&trapstep_mutex);
}

/* Lock calls until *state is placed or `stepped` stepped ones: three unstepped first, which
 * make the tracer's first-time work at the site (an unwind with every signal blocked, SIGTRAP
 * too: a trap then kills). A stepped one starts with *stepping set and a trap; the trap
 * handler sets the flag while *stepping. Then a last trap, *stepping clear, to take it off. */
static inline void trapstep_rounds(volatile sig_atomic_t *stepping, volatile sig_atomic_t *state,
                                   int placed, int stepped)
{
    for (int i = 0; i < 3 + stepped && *state != placed; i++) {
        *stepping = i >= 3;
        if (*stepping)
            raise(SIGTRAP);
        trapstep_lock_site();
    }
    *stepping = 0;
    raise(SIGTRAP);
}

#endif
