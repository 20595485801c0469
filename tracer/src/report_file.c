/*
 * report_file.c - the evidence that outlives the terminal: with LOCKTRACE_REPORT_DIR, one
 * JSON file per distinct report (signature), <program>.<pid>.<n>.json, written under a
 * temporary name and renamed so a reader never sees half a file (also when the action then
 * aborts); at exit, a <program>.<pid>.summary.json listing every report; and
 * LOCKTRACE_EXITCODE.
 *
 * An exec keeps the pid, so a program that execs itself (or another of the same name) would
 * write its second image's files over its first's. Each image's files carry its image number
 * k, <program>.<pid>.image<k>.<n>.json, when an earlier image of that name and pid left files
 * in the directory (k = 2, 3, ...; the first image's names are as above): found at the
 * image's first file, by the first names an image writes (its report 1, its summary, its
 * dump 1). A leftover of an earlier process that had the same pid counts too: its files are
 * kept, not replaced. The number is in the files' JSON (`image`), so the launcher tells the
 * images' summaries apart.
 *
 * A repeat updates its report's file: the occurrence count and last time at the end of the
 * document are rewritten (read back, new tail, temporary file, rename). So that a bug in a
 * tight loop stays cheap, a file is rewritten at most every REWRITE_MS; a count left pending
 * is written by the next repeat after that, before the tracer aborts, at exit, and at
 * _exit (interpose_exit.c). Only a process killed outright (a signal's default action,
 * SIGKILL, exec) may leave a file short by the repeats of its last REWRITE_MS.
 *
 * Called under the report lock (report.c) or from the exit handler: static buffers, open/
 * write/rename only, no stdio, no allocation. A report too big for the buffer is written
 * with fewer frames per stack; one that cannot be written is said once on stderr.
 *
 * The directory may be a shared one (/tmp): files are made relative to a descriptor of the
 * directory, which must be the user's own or not writable by everyone without the sticky bit
 * (else others could swap files in it); the temporary file is created exclusively, never
 * through a symbolic link; every write is checked, so a full disk publishes nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lt_internal.h"
#include "platform.h"
#include "report_data.h"

int __cxa_atexit(void (*fn)(void *), void *arg, void *dso); /* the C runtime's (Itanium ABI) */

#define JSON_BYTES (1024 * 1024)
#define MIN_FRAMES 4 /* below this a report is not worth shrinking further */
#define REWRITE_MS 200 /* a report's file is rewritten at most this often on repeats */

static char json_buf[JSON_BYTES];
#define NAME_BYTES 4096
static char path[NAME_BYTES], tmp_path[NAME_BYTES];
/* read at every exit */
static unsigned long counted[LT_FIND_KIND_COUNT] LT_START_DATA,
    suppressed[LT_FIND_KIND_COUNT] LT_START_DATA;
static int write_failed;
static pid_t owner LT_START_DATA; /* the process whose reports these are */
static int filing LT_START_DATA;   /* lt_cfg.report_dir is set: read at exit, where the
                                      string's page was a page fault in each fork child */
static _Atomic unsigned image;     /* this image's number in file names; 0 until found */

/* The program's file name, cut to PROGRAM_BYTES at a character's start: a name may have up
 * to 255 bytes, and the longest file name made of it (".<program>.<pid>.image<k>.summary.json.tmp")
 * must too. A program of a 240-byte name had none of its reports filed (harden-env.6). */
#define PROGRAM_BYTES 128

static const char *program_name(void)
{
    static char exe[4096];
    if (!exe[0]) {
        lt_platform_exe_path(exe, sizeof exe);
        char *name = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
        size_t n = strlen(name);
        if (n > PROGRAM_BYTES) {
            for (n = PROGRAM_BYTES; n > 0 && ((unsigned char)name[n] & 0xc0) == 0x80; n--)
                ;
            name[n] = 0;
        }
    }
    const char *slash = strrchr(exe, '/');
    return slash ? slash + 1 : exe[0] ? exe : "program";
}

/* "<prefix><program>.<pid>.[image<k>.]<what><suffix>" into buf: k > 1 only. */
static void image_name(char *buf, size_t size, unsigned k, const char *prefix, const char *what,
                       const char *suffix)
{
    size_t at = lt_fmt_str(buf, size, 0, prefix);
    at = lt_fmt_str(buf, size, at, program_name());
    at = lt_fmt_str(buf, size, at, ".");
    at = lt_fmt_dec(buf, size, at, (long)getpid());
    at = lt_fmt_str(buf, size, at, ".");
    if (k > 1) {
        at = lt_fmt_str(buf, size, at, "image");
        at = lt_fmt_dec(buf, size, at, (long)k);
        at = lt_fmt_str(buf, size, at, ".");
    }
    at = lt_fmt_str(buf, size, at, what);
    lt_fmt_str(buf, size, at, suffix);
}

/* "<prefix><program>.<pid>.[image<k>.]<what><suffix>" of this image (its number found). */
static void file_name(char *buf, size_t size, const char *prefix, const char *what,
                      const char *suffix)
{
    image_name(buf, size, atomic_load(&image), prefix, what, suffix);
}

/* The program's umask applies to what the tracer makes, but never to the owner's own use of
 * it: under umask 0777 (or 0277) the directory was made without search or write permission
 * and the files without read permission, so no report could be filed there and none that was
 * could be read back, its count updated or `locktrace report` read it (harden-env.5). The
 * owner's bits are added to what the umask left. */
static void dir_owner_may_use(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) == 0 && (st.st_mode & S_IRWXU) != S_IRWXU)
        chmod(dir, (st.st_mode & 07777) | S_IRWXU);
}

static void file_owner_may_use(int fd)
{
    struct stat st;
    mode_t rw = S_IRUSR | S_IWUSR;
    if (fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & rw) != rw)
        fchmod(fd, (st.st_mode & 07777) | rw);
}

/* mkdir -p, quietly: a failure shows when the directory cannot be opened. Returns the errno
 * of the last component that could not be made (0 when none failed), which says why better
 * than the open's ENOENT. */
static int make_dir(const char *dir)
{
    char p[4096];
    int err = 0;
    size_t n = lt_fmt_str(p, sizeof p, 0, dir);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != 0)
            continue;
        char c = p[i];
        p[i] = 0;
        if (mkdir(p, 0777) == 0)
            dir_owner_may_use(p);
        else if (errno != EEXIST)
            err = errno;
        p[i] = c;
    }
    return err;
}

static const char *errno_text(int e)
{
    switch (e) {
    case ENOSPC: return "no space left on the device";
    case EDQUOT: return "disk quota exceeded";
    case EROFS: return "read-only file system";
    case EACCES:
    case EPERM: return "permission denied";
    case ENOENT: return "no such directory";
    case EMFILE:
    case ENFILE: return "too many open files";
    case ENOTDIR: return "not a directory";
    case EEXIST: return "a file of that name is in the way";
    case ELOOP: return "a symbolic link is in the way";
    case EIO: return "input/output error";
    default: return "cannot create or write the file";
    }
}

/* One line on stderr, the first time only: "cannot write <what> <file> (...: <why>)". */
static void say_once(const char *what, const char *file, const char *why)
{
    char msg[4400];
    if (write_failed++)
        return;
    size_t at = lt_fmt_str(msg, sizeof msg, 0, "locktrace: cannot write ");
    at = lt_fmt_str(msg, sizeof msg, at, what);
    at = lt_fmt_str(msg, sizeof msg, at, " ");
    at = lt_fmt_str(msg, sizeof msg, at, file);
    at = lt_fmt_str(msg, sizeof msg, at, " (LOCKTRACE_REPORT_DIR: ");
    at = lt_fmt_str(msg, sizeof msg, at, why);
    at = lt_fmt_str(msg, sizeof msg, at, "); reports go to stderr only\n");
    lt_platform_write_err(msg, at);
}

/* The report directory, created if missing, as a descriptor; -1 (said once) when it cannot
 * be opened or others could swap files in it: owned by someone else and writable by anyone
 * without the sticky bit. */
static int open_dir(void)
{
    struct stat st;
    int made = make_dir(lt_cfg.report_dir);
    int dfd = open(lt_cfg.report_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        say_once("report files into", lt_cfg.report_dir,
                 errno_text(errno == ENOENT && made ? made : errno));
        return -1;
    }
    if (fstat(dfd, &st) != 0 ||
        (st.st_uid != geteuid() && (st.st_mode & (S_IWOTH | S_ISVTX)) == S_IWOTH)) {
        say_once("report files into", lt_cfg.report_dir,
                 "anyone may replace files there: not the user's own, world-writable, no sticky bit");
        close(dfd);
        return -1;
    }
    return dfd;
}

/* A new temporary file in dfd, never through a link: an entry of that name (left by a crash,
 * or planted) is removed once and the creation retried. */
static int create_tmp(int dfd, const char *name)
{
    int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    int fd = openat(dfd, name, flags, 0644);
    if (fd < 0 && errno == EEXIST && unlinkat(dfd, name, 0) == 0)
        fd = openat(dfd, name, flags, 0644);
    file_owner_may_use(fd);
    return fd;
}

/* "<dir>/<name>" for messages. */
static const char *full_name(const char *name)
{
    static char buf[4096 + 256];
    size_t at = lt_fmt_str(buf, sizeof buf, 0, lt_cfg.report_dir);
    at = lt_fmt_str(buf, sizeof buf, at, "/");
    lt_fmt_str(buf, sizeof buf, at, name);
    return buf;
}

#define MAX_IMAGES 1000 /* past this many images of one pid, the last one's names are reused */

/* Whether an image numbered k left a file in dfd: the first of each kind it writes, a regular
 * file (a link planted under such a name is no image's: it is replaced, as before). */
static int image_left_files(int dfd, unsigned k)
{
    static const char *const firsts[] = {"1", "summary", "dump-1"};
    char name[NAME_BYTES];
    struct stat st;
    for (size_t i = 0; i < LT_ARRAY_LEN(firsts); i++) {
        image_name(name, sizeof name, k, "", firsts[i], ".json");
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            return 1;
    }
    return 0;
}

/* This image's number, found in dfd at its first file: the first that no earlier image left
 * files under. Also from the dump signal's handler (fstatat only), so whoever finds it first
 * sets it, before any file of this image is written. */
static unsigned image_found(int dfd)
{
    unsigned k = atomic_load(&image), none = 0;
    if (k)
        return k;
    for (k = 1; k < MAX_IMAGES && image_left_files(dfd, k); k++)
        ;
    return atomic_compare_exchange_strong(&image, &none, k) ? k : none;
}

/* The same where no descriptor of the directory is open yet; 1 when it cannot be opened
 * (nothing will be written there), left to be found again. */
static unsigned image_now(void)
{
    unsigned k = atomic_load(&image);
    if (k)
        return k;
    int dfd = open_dir();
    if (dfd < 0)
        return 1;
    k = image_found(dfd);
    close(dfd);
    return k;
}

/* Writes data[0..len) as file `what`, atomically: written in full under a temporary name,
 * then renamed; the names are built in the caller's buffers (the size of path). 0 on
 * success; on failure nothing is published. */
static int write_file(const char *what, const char *data, size_t len, char *path, char *tmp_path)
{
    int dfd = open_dir();
    if (dfd < 0)
        return -1;
    image_found(dfd);
    file_name(path, NAME_BYTES, "", what, ".json");
    file_name(tmp_path, NAME_BYTES, ".", what, ".json.tmp");
    int fd = create_tmp(dfd, tmp_path), err = 0;
    if (fd < 0)
        err = errno;
    else if (lt_platform_write(fd, data, len) != 0)
        err = errno;
    if (fd >= 0 && close(fd) != 0 && !err)
        err = errno;
    if (!err && renameat(dfd, tmp_path, dfd, path) != 0)
        err = errno;
    if (err) {
        if (fd >= 0)
            unlinkat(dfd, tmp_path, 0);
        say_once("the report file", full_name(fd >= 0 ? path : tmp_path), errno_text(err));
    }
    close(dfd);
    return err ? -1 : 0;
}

/* Writes len bytes of json_buf as file `what`. */
static int write_atomically(const char *what, size_t len)
{
    return write_file(what, json_buf, len, path, tmp_path);
}

/* From the dump signal's handler, so with name buffers of its own (a report may be being
 * written under the report lock right now): <program>.<pid>.dump-<n>.json. */
void lt_report_file_write_dump(const char *json, size_t len)
{
    static char dst[NAME_BYTES], tmp[NAME_BYTES];
    static _Atomic unsigned long dumps;
    char what[32];
    if (!lt_cfg.report_dir[0])
        return;
    size_t at = lt_fmt_str(what, sizeof what, 0, "dump-");
    lt_fmt_dec(what, sizeof what, at, (long)atomic_fetch_add(&dumps, 1) + 1);
    write_file(what, json, len, dst, tmp);
}

static int64_t monotonic_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* "<n>" of report file n. */
static const char *number_name(unsigned number)
{
    static char n[24];
    lt_fmt_dec(n, sizeof n, 0, (long)number);
    return n;
}

void lt_report_file_write(const lt_rep *r, lt_seen *s)
{
    if (!lt_cfg.report_dir[0])
        return;
    lt_rep counted = *r;
    counted.image = image_now();
    memcpy(counted.signature, s->signature, sizeof s->signature);
    counted.occurrences = s->count;
    counted.last_time_sec = s->last_sec;
    counted.last_time_nsec = s->last_nsec;
    size_t frames = (size_t)-1, len;
    while ((len = lt_rep_format_json(&counted, json_buf, sizeof json_buf, frames)) >=
               sizeof json_buf && frames > MIN_FRAMES)
        frames = frames == (size_t)-1 ? 256 : frames / 2;
    if (len >= sizeof json_buf)
        return;
    s->filed = write_atomically(number_name(s->number), len) == 0;
    s->written_ms = monotonic_ms();
    s->pending = 0;
}

/* The file of report n read back into json_buf, up to the count at its end; the length
 * kept, 0 when it cannot be read or is not the tracer's. */
static size_t read_back(const char *name)
{
    int dfd = open_dir(), fd = -1;
    size_t len = 0;
    ssize_t got = 1;
    if (dfd >= 0)
        fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    while (fd >= 0 && len < sizeof json_buf - 1 &&
           (got = read(fd, json_buf + len, sizeof json_buf - 1 - len)) > 0)
        len += (size_t)got;
    if (fd >= 0)
        close(fd);
    if (dfd >= 0)
        close(dfd);
    if (fd < 0 || got < 0)
        return 0;
    json_buf[len] = 0;
    char *key = NULL;
    for (char *at = json_buf; (at = strstr(at, LT_REP_JSON_COUNT_KEY)) != NULL; at++)
        key = at; /* the last: strings inside escape their quotes */
    return key ? (size_t)(key - json_buf) : 0;
}

/* s's count and last time into its file. */
static void update(lt_seen *s)
{
    char name[NAME_BYTES];
    file_name(name, sizeof name, "", number_name(s->number), ".json");
    size_t at = read_back(name);
    s->pending = 0;
    s->written_ms = monotonic_ms();
    if (!at) {
        s->filed = 0;
        say_once("the count into report file", full_name(name), "it is gone or was changed");
        return;
    }
    lt_rep count = {.occurrences = s->count, .last_time_sec = s->last_sec,
                    .last_time_nsec = s->last_nsec};
    size_t len = at + lt_rep_format_json_count(&count, json_buf + at, sizeof json_buf - at);
    if (len < sizeof json_buf)
        write_atomically(number_name(s->number), len);
}

void lt_report_file_repeat(lt_seen *s)
{
    if (!s->filed)
        return;
    if (monotonic_ms() - s->written_ms >= REWRITE_MS)
        update(s);
    else
        s->pending = 1;
}

void lt_report_file_flush(void)
{
    lt_seen *s;
    for (size_t i = 0; (s = lt_seen_at(i)) != NULL; i++)
        if (s->pending && s->filed)
            update(s);
}

/* Not from a vfork child: the tables are its parent's, the files too. The launcher's counts
 * that its full queue kept back go again (report_channel.c). */
LT_FORK_PATH void lt_report_file_at_exit(void)
{
    if (owner == getpid() && (filing || lt_report_channel_pending())) { /* 0 until set up */
        int busy = lt_tls.busy;
        lt_busy_set(&lt_tls, LT_BUSY_IN); /* the report lock is the tracer's */
        if (filing)
            lt_report_exclusive(lt_report_file_flush);
        if (lt_report_channel_pending())
            lt_report_exclusive(lt_report_channel_flush);
        lt_busy_restore(&lt_tls, busy);
    }
}

void lt_report_file_counted(lt_finding_kind kind)
{
    counted[kind]++;
}

void lt_report_file_suppressed(lt_finding_kind kind)
{
    suppressed[kind]++;
}

LT_FORK_PATH void lt_report_file_fork_child(void)
{
    owner = getpid();
    atomic_store(&image, 0); /* a new pid: its own images */
    memset(counted, 0, sizeof counted);
    memset(suppressed, 0, sizeof suppressed);
}

/* ------------------------------------------------------------------------------------------
 * At exit.
 * ---------------------------------------------------------------------------------------- */
typedef struct sout {
    size_t at;
} sout;

static void s_put(sout *o, const char *s)
{
    o->at = lt_fmt_str(json_buf, sizeof json_buf, o->at, s);
}

static void s_dec(sout *o, unsigned long v)
{
    o->at = lt_fmt_dec(json_buf, sizeof json_buf, o->at, (long)v);
}

/* {"self-deadlock":1,...} of the kinds with a nonzero count. */
static void s_counts(sout *o, const unsigned long *c)
{
    int first = 1;
    s_put(o, "{");
    for (int k = 0; k < LT_FIND_KIND_COUNT; k++) {
        if (!c[k])
            continue;
        s_put(o, first ? "\"" : ",\"");
        s_put(o, lt_rep_kind_name(k));
        s_put(o, "\":");
        s_dec(o, c[k]);
        first = 0;
    }
    s_put(o, "}");
}

/* Every report with a file, its signature and count. */
static void s_reports(sout *o)
{
    char name[NAME_BYTES];
    lt_seen *s;
    int first = 1;
    for (size_t i = 0; (s = lt_seen_at(i)) != NULL; i++) {
        if (!s->filed)
            continue;
        file_name(name, sizeof name, "", number_name(s->number), ".json");
        s_put(o, first ? "{\"file\":\"" : ",{\"file\":\"");
        s_put(o, name);
        s_put(o, "\",\"kind\":\"");
        s_put(o, lt_rep_kind_name(s->kind));
        s_put(o, "\",\"signature\":\"");
        s_put(o, s->signature);
        s_put(o, "\",\"occurrences\":");
        s_dec(o, s->count);
        s_put(o, "}");
        first = 0;
    }
}

/* Whether s can go into a JSON string as it is: UTF-8 without quotes, backslashes or control
 * characters. */
static int json_plain(const char *s)
{
    for (size_t n; *s; s += n)
        if ((n = lt_utf8_len(s)) == 0 || (unsigned char)*s < 0x20 || *s == 0x7f || *s == '"' ||
            *s == '\\')
            return 0;
    return 1;
}

/* The file names come from the program's name: unless it can be written as it is, the
 * summary lists counts only (a name with its bytes replaced would name no file). */
static void write_summary(void)
{
    unsigned long distinct[LT_FIND_KIND_COUNT] = {0};
    lt_seen *s;
    for (size_t i = 0; (s = lt_seen_at(i)) != NULL; i++)
        if (s->count)
            distinct[s->kind]++;
    sout o = {0};
    int safe = json_plain(program_name());
    s_put(&o, "{\"locktrace_summary\":1,\"pid\":");
    s_dec(&o, (unsigned long)getpid());
    s_put(&o, ",\"launcher_pid\":");
    s_dec(&o, (unsigned long)lt_cfg.launcher_pid);
    unsigned k = image_now();
    if (k > 1) {
        s_put(&o, ",\"image\":");
        s_dec(&o, k);
    }
    s_put(&o, ",\"reports\":[");
    if (safe)
        s_reports(&o);
    s_put(&o, "],\"distinct\":");
    s_counts(&o, distinct);
    s_put(&o, ",\"counts\":");
    s_counts(&o, counted);
    s_put(&o, ",\"suppressed\":");
    s_counts(&o, suppressed);
    s_put(&o, lt_order_partial_sec ? ",\"order_check\":\"partial\",\"order_partial_since_sec\":"
                                   : ",\"order_check\":\"complete\"");
    if (lt_order_partial_sec)
        s_dec(&o, (unsigned long)lt_order_partial_sec);
    s_put(&o, "}\n");
    if (o.at + 1 < sizeof json_buf)
        write_atomically("summary", o.at);
}

static unsigned long total(const unsigned long *c)
{
    unsigned long n = 0;
    for (int k = 0; k < LT_FIND_KIND_COUNT; k++)
        n += c[k];
    return n;
}

/* Under the report lock: every pending count, then the summary. */
static void at_exit_locked(void)
{
    lt_report_file_flush();
    if (total(counted) + total(suppressed) > 0)
        write_summary();
}

/* Runs after every other exit handler and after the libraries' destructors: it is
 * registered with no DSO handle (lt_report_setup), before the C runtime registers the dynamic
 * linker's destructor pass, so it is the last entry of the exit list. The status is changed
 * by calling exit() again from here: C leaves that undefined, but glibc and musl define it
 * (the remaining handlers run, stdio is flushed, the last status given wins). */
static void at_exit(void *unused)
{
    (void)unused;
    unsigned long reports = total(counted);
    lt_busy_set(&lt_tls, LT_BUSY_IN);
    if (lt_cfg.report_dir[0])
        lt_report_exclusive(at_exit_locked);
    if (lt_report_channel_pending())
        lt_report_exclusive(lt_report_channel_flush);
    lt_leave(&lt_tls);
    if (lt_cfg.exitcode && reports > 0)
        exit(lt_cfg.exitcode);
}

void lt_report_setup(void)
{
    owner = getpid();
    filing = lt_cfg.report_dir[0] != 0;
    lt_report_channel_setup();
    if (lt_cfg.suppressions[0])
        lt_suppress_load(lt_cfg.suppressions);
    /* Not atexit(): from a shared library that ties the handler to our DSO, so it would run
     * inside the destructor pass, and exit() there would skip the libraries after us. */
    __cxa_atexit(at_exit, NULL, NULL);
    if (lt_cfg.stats)
        lt_stats_setup();
    if (lt_cfg.exit_held)
        lt_exit_held_setup();
}
