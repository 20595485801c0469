/*
 * fmt.h - allocation-free formatting into a caller's buffer, for reports written where
 * malloc and stdio are off limits (inside the program's locks, in signal handlers). Each
 * function appends at buf+at and returns the new end; output that does not fit is cut, never
 * overflowed, and buf stays NUL-terminated.
 */
#ifndef LT_FMT_H
#define LT_FMT_H

#include <stddef.h>
#include <stdint.h>

size_t lt_fmt_str(char *buf, size_t size, size_t at, const char *s);
size_t lt_fmt_hex(char *buf, size_t size, size_t at, uintptr_t v); /* 0x... */
size_t lt_fmt_dec(char *buf, size_t size, size_t at, long v);
size_t lt_fmt_ordinal(char *buf, size_t size, size_t at, unsigned long n); /* 1st, 2nd, 11th */

/* s's n bytes (NULs among them) as a terminal shows them as they are: printable ASCII and
 * UTF-8 characters past the C1 controls as they are, any other byte as \xNN. For text from
 * files and the environment echoed in a message: a binary file's escape sequences would
 * otherwise reach the terminal. A character that n cuts is read whole (lt_utf8_len), so s goes
 * on past n to a NUL or further. */
size_t lt_fmt_shown(char *buf, size_t size, size_t at, const char *s, size_t n);

/* The length of the UTF-8 character s starts with (RFC 3629: shortest form, no surrogates,
 * at most U+10FFFF), 0 when its bytes are not one. Report strings come from the program and
 * the system (thread names, paths, symbols, annotations) and may hold any bytes; writers of
 * formats that must be UTF-8 replace each byte that starts no character. s is NUL-terminated. */
size_t lt_utf8_len(const char *s);

#endif
