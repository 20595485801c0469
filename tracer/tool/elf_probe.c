/*
 * elf_probe.c - reads a program's ELF headers from a read-only mapping, every offset checked
 * against the file's size: PT_INTERP says whether it is dynamically linked and by which loader
 * (named when the kernel cannot find it), DT_NEEDED names its shared sanitizer runtime, and
 * the symbol tables show a static one (__asan_init, __tsan_init).
 */
#define _GNU_SOURCE
#include "elf_probe.h"

#ifdef __APPLE__
#include <string.h>

/* Mach-O: no ELF to read; the launcher relies on the tracer's handshake alone there. */
int lt_elf_probe(const char *path, lt_elf_info *out)
{
    (void)path;
    memset(out, 0, sizeof *out);
    return 0;
}
#else
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct image {
    const unsigned char *base;
    size_t size;
} image;

/* A pointer to n bytes at off, NULL when they are not all inside the file. */
static const void *at(const image *im, uint64_t off, uint64_t n)
{
    return off <= im->size && n <= im->size - off ? im->base + off : NULL;
}

/* A NUL-terminated string at off inside the file, NULL otherwise. */
static const char *string_at(const image *im, uint64_t off)
{
    if (off >= im->size)
        return NULL;
    const char *s = (const char *)im->base + off;
    return memchr(s, 0, im->size - off) ? s : NULL;
}

/* The file offset of virtual address addr (through the PT_LOAD segments); 0 when none. */
static uint64_t file_offset(const image *im, const Elf64_Ehdr *eh, uint64_t addr)
{
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        const Elf64_Phdr *ph = at(im, eh->e_phoff + (uint64_t)i * sizeof *ph, sizeof *ph);
        if (ph && ph->p_type == PT_LOAD && addr >= ph->p_vaddr &&
            addr - ph->p_vaddr < ph->p_filesz)
            return ph->p_offset + (addr - ph->p_vaddr);
    }
    return 0;
}

static void note_runtime(lt_elf_info *out, const char *name, int needed)
{
    if (strncmp(name, "libasan.so", 10) == 0 || strcmp(name, "__asan_init") == 0) {
        out->asan = 1;
        if (needed)
            snprintf(out->asan_needed, sizeof out->asan_needed, "%s", name);
    }
    if (strncmp(name, "libtsan.so", 10) == 0 || strcmp(name, "__tsan_init") == 0)
        out->tsan = 1;
}

static void read_dynamic(const image *im, const Elf64_Ehdr *eh, const Elf64_Phdr *dyn,
                         lt_elf_info *out)
{
    size_t n = dyn->p_filesz / sizeof(Elf64_Dyn);
    const Elf64_Dyn *d = at(im, dyn->p_offset, n * sizeof *d);
    uint64_t strtab = 0;
    for (size_t i = 0; d && i < n && d[i].d_tag != DT_NULL; i++)
        if (d[i].d_tag == DT_STRTAB)
            strtab = file_offset(im, eh, d[i].d_un.d_ptr);
    for (size_t i = 0; d && strtab && i < n && d[i].d_tag != DT_NULL; i++) {
        const char *name = d[i].d_tag == DT_NEEDED ? string_at(im, strtab + d[i].d_un.d_val) : NULL;
        if (name)
            note_runtime(out, name, 1);
    }
}

static void read_symbols(const image *im, const Elf64_Ehdr *eh, lt_elf_info *out)
{
    const Elf64_Shdr *sh = at(im, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof *sh);
    for (unsigned i = 0; sh && i < eh->e_shnum; i++) {
        if ((sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM) ||
            sh[i].sh_link >= eh->e_shnum)
            continue;
        const Elf64_Shdr *strs = &sh[sh[i].sh_link];
        size_t n = sh[i].sh_size / sizeof(Elf64_Sym);
        const Elf64_Sym *sym = at(im, sh[i].sh_offset, n * sizeof *sym);
        for (size_t k = 0; sym && k < n; k++) {
            const char *name = sym[k].st_name < strs->sh_size && sym[k].st_shndx != SHN_UNDEF
                                   ? string_at(im, strs->sh_offset + sym[k].st_name) : NULL;
            if (name && name[0] == '_' && name[1] == '_')
                note_runtime(out, name, 0);
        }
    }
}

static void probe(const image *im, lt_elf_info *out)
{
    const Elf64_Ehdr *eh = at(im, 0, sizeof *eh);
    int data = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
    if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_ident[EI_DATA] != data || eh->e_phentsize != sizeof(Elf64_Phdr))
        return;
    out->linkage = LT_ELF_STATIC;
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        const Elf64_Phdr *ph = at(im, eh->e_phoff + (uint64_t)i * sizeof *ph, sizeof *ph);
        if (ph && ph->p_type == PT_INTERP) {
            const char *interp = string_at(im, ph->p_offset);
            out->linkage = LT_ELF_DYNAMIC;
            snprintf(out->interp, sizeof out->interp, "%s", interp ? interp : "");
        }
        if (ph && ph->p_type == PT_DYNAMIC)
            read_dynamic(im, eh, ph, out);
    }
    if (eh->e_shentsize == sizeof(Elf64_Shdr))
        read_symbols(im, eh, out);
}

int lt_elf_probe(const char *path, lt_elf_info *out)
{
    struct stat st;
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    out->setuid = ((st.st_mode & S_ISUID) && st.st_uid != geteuid()) ||
                  ((st.st_mode & S_ISGID) && st.st_gid != getegid());
    void *base = st.st_size ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)
                            : MAP_FAILED;
    close(fd);
    if (base == MAP_FAILED)
        return 0; /* empty: not ELF */
    image im = {base, (size_t)st.st_size};
    probe(&im, out);
    munmap(base, (size_t)st.st_size);
    return 0;
}
#endif
