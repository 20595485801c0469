/*
 * wrappers.c - lock wrappers: the functions a program's lock call passes through before it
 * reaches pthread (std::mutex::lock, std::unique_lock's constructor, g_rw_lock_writer_lock, a
 * program's own lock_cache()). callsite.c records a lazily captured acquisition up to the
 * first caller that is not one, so a report names the program's function and line, not only
 * "in std::mutex::lock".
 *
 * A function is a wrapper when its name matches a built-in pattern below or one of
 * LOCKTRACE_WRAPPERS (comma-separated, '*' as in suppressions). Names are compared as
 * "qualified::name" without template arguments or parameters: the report's
 * "std::unique_lock<std::mutex>::unique_lock(std::mutex&)" is "std::unique_lock::unique_lock",
 * and a pattern is shortened the same way. The name is the ELF symbol's
 * (lt_platform_function_safe), demangled here as far as that needs, without allocating: the
 * question is asked at the first walk through a site, which may be inside the program's
 * malloc or a signal handler. A mangled form this reader does not follow (operators, lambdas,
 * substitutions in the name) is taken for no wrapper: the stack is then recorded as before.
 */
#define _GNU_SOURCE
#include <string.h>
#include <unistd.h>

#include "lt_internal.h"
#include "platform.h"

static const char *const builtin[] = {
    /* libstdc++: the mutex classes, their guards (lock_guard, unique_lock, shared_lock,
     * scoped_lock), std::lock/try_lock, condition variables (a wait relocks), and the layer
     * beneath them (gthr-default.h's __gthread_*, <shared_mutex>'s __glibcxx_rwlock_*) */
    "std::*mutex*::*", "std::*_lock::*", "std::lock_guard::*", "std::lock", "std::try_lock",
    "std::*lock_impl*", "std::*condition_variable*::*", "std::__glibcxx_rwlock_*", "__gthread_*",
    "__gthrw_*",
    /* std::thread::join: out of line in libstdc++ (no debug info there on a stock system),
     * so a join that waits in a deadlock named it, not the program's line of the join, and
     * its SARIF result had no location */
    "std::thread::join",
    /* libstdc++'s own locks: shared_ptr's atomic operations, <ext/concurrence.h> */
    "std::_Sp_locker::*", "__gnu_cxx::*mutex*::*", "__gnu_cxx::__scoped_lock::*",
    /* GLib: GMutex, GRWLock, GRecMutex and their lockers */
    "g_mutex_*", "g_rw_lock_*", "g_rec_mutex_*",
    /* OpenSSL: every lock of libcrypto is made by CRYPTO_THREAD_lock_new and taken through
     * CRYPTO_THREAD_read_lock/write_lock; without their callers, all of them are one site
     * class, predicted against itself in nginx, haproxy and mariadbd alike */
    "CRYPTO_THREAD_*",
};

static char **user; /* LOCKTRACE_WRAPPERS, shortened, in mapped memory */
static size_t nuser;

/* ------------------------------------------------------------------------------------------
 * Names: the qualified name of a symbol, without template arguments or parameters.
 * ---------------------------------------------------------------------------------------- */
typedef struct name_buf {
    char *buf;
    size_t size, len;
    int ok;
} name_buf;

static void put(name_buf *o, const char *s, size_t n)
{
    if (o->len + n >= o->size) {
        o->ok = 0;
        return;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    o->buf[o->len] = 0;
}

/* Appends one component of a qualified name. */
static void component(name_buf *o, const char *s, size_t n)
{
    static const char anon[] = "_GLOBAL__N_";
    if (o->len)
        put(o, "::", 2);
    if (n >= sizeof anon - 1 && memcmp(s, anon, sizeof anon - 1) == 0)
        put(o, "(anonymous namespace)", 21);
    else
        put(o, s, n);
}

static int digit(char c)
{
    return c >= '0' && c <= '9';
}

/* <source-name> at *p (its length, then its text); 0 when malformed. */
static int source_name(const char **p, const char **s, size_t *n)
{
    size_t len = 0;
    if (!digit(**p))
        return 0;
    while (digit(**p) && len < 4096)
        len = len * 10 + (size_t)(*(*p)++ - '0');
    if (len == 0 || strnlen(*p, len) < len)
        return 0;
    *s = *p;
    *n = len;
    *p += len;
    return 1;
}

/* Skips one construct that ends with a matching 'E' (template arguments I...E), its nested
 * types, literals and expressions included; 0 when malformed. */
static int skip_balanced(const char **p)
{
    int depth = 0;
    const char *s;
    size_t n;
    do {
        char c = **p;
        if (!c)
            return 0;
        if (digit(c)) {
            if (!source_name(p, &s, &n))
                return 0;
            continue;
        }
        (*p)++;
        switch (c) {
        case 'I': case 'J': case 'N': case 'X': case 'F': case 'Z':
            depth++;
            break;
        case 'E':
            depth--;
            break;
        case 'L': /* a literal: L <type> <value> E, or L _Z <encoding> E */
            if (**p == '_' && (*p)[1] == 'Z') {
                *p += 2;
                depth++;
                break;
            }
            if (digit(**p) ? !source_name(p, &s, &n) : !*(*p)++)
                return 0;
            while (**p && **p != 'E')
                (*p)++;
            if (!*(*p)++)
                return 0;
            break;
        case 'S': case 'T': /* a substitution or template parameter: S_, S3_, T0_, St... */
            if (c == 'S' && **p && strchr("tabsiod", **p)) {
                (*p)++;
                break;
            }
            while (digit(**p) || (**p >= 'A' && **p <= 'Z'))
                (*p)++;
            if (*(*p)++ != '_')
                return 0;
            break;
        case 'D': /* Dt/DT decltype (...E), Dp pack expansion, Dn, Da... */
            if (**p == 't' || **p == 'T')
                depth++;
            if (!*(*p)++)
                return 0;
            break;
        default: /* a one-letter type or qualifier */
            break;
        }
    } while (depth > 0);
    return 1;
}

/* The standard abbreviation at p (St, Sa, Sb, Ss, Si, So, Sd) as a component; 0 when p holds
 * none. */
static int std_abbreviation(const char *p, name_buf *o)
{
    static const char *const names[][2] = {
        {"t", "std"}, {"a", "std::allocator"}, {"b", "std::basic_string"},
        {"s", "std::basic_string"}, {"i", "std::basic_istream"}, {"o", "std::basic_ostream"},
        {"d", "std::basic_iostream"}};
    for (size_t i = 0; p[0] == 'S' && p[1] && i < LT_ARRAY_LEN(names); i++) {
        if (p[1] == names[i][0][0]) {
            component(o, names[i][1], strlen(names[i][1]));
            return 1;
        }
    }
    return 0;
}

/* [St] <source-name> [template args]: one name of a mangled symbol that is not nested. */
static int unnested(const char *p, name_buf *o)
{
    const char *s;
    size_t n;
    if (p[0] == 'S' && p[1] == 't') {
        component(o, "std", 3);
        p += 2 + (p[2] == 'L');
    }
    if (!source_name(&p, &s, &n))
        return 0;
    component(o, s, n);
    return 1;
}

/* N [qualifiers] <components> E: a name in namespaces and classes. */
static int nested(const char *p, name_buf *o)
{
    const char *s, *last = NULL;
    size_t n, last_n = 0;
    while (*p && strchr("rVKRO", *p))
        p++;
    for (;;) {
        if (std_abbreviation(p, o)) {
            p += 2;
        } else if (digit(*p)) {
            if (!source_name(&p, &s, &n))
                return 0;
            component(o, s, n);
            last = s;
            last_n = n;
        } else if (*p == 'I') {
            if (!skip_balanced(&p))
                return 0;
        } else if (*p == 'B') { /* an ABI tag */
            p++;
            if (!source_name(&p, &s, &n))
                return 0;
        } else if (*p == 'L') {
            p++;
        } else if (last && p[0] == 'C' && p[1] >= '1' && p[1] <= '5') { /* constructor */
            component(o, last, last_n);
            p += 2;
        } else if (last && p[0] == 'D' && p[1] && strchr("0125", p[1])) { /* destructor */
            put(o, "::~", 3);
            put(o, last, last_n);
            p += 2;
        } else {
            return *p == 'E';
        }
    }
}

/* The qualified name of symbol sym without template arguments or parameters into buf:
 * "_ZNSt10lock_guardISt5mutexEC2ERS0_" is "std::lock_guard::lock_guard", and a C name loses a
 * compiler's clone suffix ("lock_cache.constprop.0" is "lock_cache"). 0 when sym is a form
 * this reader does not follow. */
int lt_wrapper_name(const char *sym, char *buf, size_t size)
{
    name_buf o = {buf, size, 0, 1};
    buf[0] = 0;
    if (sym[0] != '_' || sym[1] != 'Z') {
        put(&o, sym, strcspn(sym, ".@"));
        return o.ok && o.len;
    }
    const char *p = sym + 2;
    p += *p == 'L';
    int ok = *p == 'N' ? nested(p + 1, &o) : unnested(p, &o);
    return ok && o.ok && o.len;
}

/* A pattern as names are compared: what lies inside <...> and (...) goes, and a trailing
 * " const"; "std::unique_lock<*>::unique_lock(std::mutex&)" is "std::unique_lock::unique_lock". */
static size_t shorten(const char *in, size_t len, char *out)
{
    size_t n = 0;
    int depth = 0;
    for (size_t i = 0; i < len; i++) {
        char c = in[i];
        depth += c == '<' || c == '(';
        if (depth == 0)
            out[n++] = c;
        depth -= depth > 0 && (c == '>' || c == ')');
    }
    if (n >= 6 && memcmp(out + n - 6, " const", 6) == 0)
        n -= 6;
    while (n && out[n - 1] == ' ')
        n--;
    out[n] = 0;
    return n;
}

static void fail(const char *list, const char *why)
{
    char msg[1024];
    size_t n = lt_fmt_str(msg, sizeof msg, 0, "locktrace: bad value for ");
    n = lt_config_named(msg, sizeof msg, n, "LOCKTRACE_WRAPPERS");
    n = lt_fmt_str(msg, sizeof msg, n, ": '");
    n = lt_fmt_shown(msg, sizeof msg, n, list, strlen(list));
    n = lt_fmt_str(msg, sizeof msg, n, "': ");
    n = lt_fmt_str(msg, sizeof msg, n, why);
    n = lt_fmt_str(msg, sizeof msg, n, "; accepted values: function name patterns separated "
                                       "by commas ('*' matches any run of characters)\n");
    lt_platform_write_err(msg, n);
    _exit(2);
}

void lt_wrappers_load(const char *list)
{
    size_t len = strlen(list), max = 1;
    if (len == 0)
        return;
    for (size_t i = 0; i < len; i++)
        max += list[i] == ',';
    user = lt_platform_map(max * sizeof *user + len + max);
    if (!user)
        fail(list, "out of memory");
    char *text = (char *)(user + max);
    for (const char *at = list;; at++) {
        size_t n = strcspn(at, ",");
        const char *end = at + n;
        while (at < end && *at == ' ')
            at++;
        if (shorten(at, (size_t)(end - at), text) == 0)
            fail(list, "an empty pattern");
        user[nuser++] = text;
        text += strlen(text) + 1;
        if (!*end)
            break;
        at = end;
    }
}

/* Whether name, shortened, matches a built-in pattern or one of LOCKTRACE_WRAPPERS. */
static int listed(const char *name)
{
    for (size_t i = 0; i < LT_ARRAY_LEN(builtin); i++)
        if (lt_glob(builtin[i], name))
            return 1;
    for (size_t i = 0; i < nuser; i++)
        if (lt_glob(user[i], name))
            return 1;
    return 0;
}

int lt_wrapper_at(uintptr_t ra)
{
    char sym[768], name[256];
    int got = lt_platform_function_safe(ra - 1, sym, sizeof sym);
    if (got <= 0)
        return got;
    return lt_wrapper_name(sym, name, sizeof name) && listed(name);
}

int lt_wrapper_named(const char *function)
{
    char name[256];
    size_t len = function ? strlen(function) : 0;
    return len && len < sizeof name && shorten(function, len, name) && listed(name);
}
