/*
 * error.c - errors as values. Each thread keeps the status and message of its last failure;
 * fallible calls return NULL or a nonzero tl_status and leave the why here.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tl_internal.h"

#define TL_ERR_MSG_MAX 512

static _Thread_local tl_status last_status;
static _Thread_local char last_msg[TL_ERR_MSG_MAX];
static _Thread_local unsigned fail_count;

tl_status tl_last_status(void)
{
    return last_status;
}

const char *tl_last_error(void)
{
    return last_msg;
}

tl_status tl_fail(tl_status status, const char *fmt, ...)
{
    /* Format into a scratch buffer first: an argument may be the previous message. */
    char msg[TL_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(last_msg, sizeof last_msg, "%s", msg);
    last_status = status == TL_OK ? TL_ERR_ARG : status;
    fail_count++;
    return last_status;
}

tl_status tl_fail_within(const char *op)
{
    size_t n = strlen(op);
    if (strncmp(last_msg, op, n) != 0 || last_msg[n] != ':')
        tl_fail(last_status, "%s: %s", op, last_msg);
    return last_status;
}

unsigned tl_fail_count(void)
{
    return fail_count;
}

tl_status tl_fail_unsupported(const char *op, tl_device device)
{
    return tl_fail(TL_ERR_UNSUPPORTED, "no %s implementation for %s", tl_device_name(device), op);
}

tl_status tl_fail_nomem(const char *op, size_t nbytes)
{
    return tl_fail(TL_ERR_NOMEM, "%s: out of memory allocating %zu bytes", op, nbytes);
}
