/*
 * fmt.c - the allocation-free formatter (fmt.h), shared by the tracer and the tool.
 */
#include "fmt.h"

size_t lt_fmt_str(char *buf, size_t size, size_t at, const char *s)
{
    while (s && *s && at + 1 < size)
        buf[at++] = *s++;
    if (at < size)
        buf[at] = 0;
    return at;
}

size_t lt_fmt_hex(char *buf, size_t size, size_t at, uintptr_t v)
{
    char tmp[2 + 2 * sizeof v + 1], *p = tmp + sizeof tmp - 1;
    *p = 0;
    do
        *--p = "0123456789abcdef"[v & 15];
    while (v >>= 4);
    *--p = 'x';
    *--p = '0';
    return lt_fmt_str(buf, size, at, p);
}

size_t lt_fmt_dec(char *buf, size_t size, size_t at, long v)
{
    char tmp[24], *p = tmp + sizeof tmp - 1;
    unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;
    *p = 0;
    do
        *--p = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *--p = '-';
    return lt_fmt_str(buf, size, at, p);
}

size_t lt_fmt_ordinal(char *buf, size_t size, size_t at, unsigned long n)
{
    static const char *const suffix[] = {"th", "st", "nd", "rd"};
    unsigned long tens = n % 100, ones = n % 10;
    at = lt_fmt_dec(buf, size, at, (long)n);
    return lt_fmt_str(buf, size, at, (tens >= 11 && tens <= 13) || ones > 3 ? "th" : suffix[ones]);
}

size_t lt_fmt_shown(char *buf, size_t size, size_t at, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0, len; i < n && at + 1 < size; i += len) {
        len = u[i] >= 0x20 && u[i] < 0x7f ? 1 : u[i] >= 0x80 ? lt_utf8_len(s + i) : 0;
        if (len > n - i || (u[i] == 0xC2 && u[i + 1] < 0xA0)) /* (C1 controls: U+0080..009F) */
            len = 0;
        if (len == 0) {
            if (at + 4 >= size)
                break;
            buf[at++] = '\\';
            buf[at++] = 'x';
            buf[at++] = "0123456789abcdef"[u[i] >> 4];
            buf[at++] = "0123456789abcdef"[u[i] & 15];
            len = 1;
        } else if (at + len < size) {
            for (size_t k = 0; k < len; k++)
                buf[at++] = s[i + k];
        } else {
            break;
        }
    }
    if (at < size)
        buf[at] = 0;
    return at;
}

size_t lt_utf8_len(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    unsigned char lo = 0x80, hi = 0xBF; /* the bounds of the second byte */
    size_t n;
    if (u[0] < 0x80)
        return 1;
    if (u[0] >= 0xC2 && u[0] <= 0xDF)
        n = 2;
    else if (u[0] >= 0xE0 && u[0] <= 0xEF)
        n = 3;
    else if (u[0] >= 0xF0 && u[0] <= 0xF4)
        n = 4;
    else
        return 0;
    if (u[0] == 0xE0)
        lo = 0xA0; /* shorter forms */
    else if (u[0] == 0xED)
        hi = 0x9F; /* surrogates */
    else if (u[0] == 0xF0)
        lo = 0x90;
    else if (u[0] == 0xF4)
        hi = 0x8F; /* past U+10FFFF */
    if (u[1] < lo || u[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (u[i] < 0x80 || u[i] > 0xBF)
            return 0;
    return n;
}
