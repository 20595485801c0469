/*
 * report_seen.c - the reports seen so far, one per signature (report_identity.c), with its
 * number, occurrence count and first and last time; and a cache from what identifies an
 * occurrence cheaply (kind, reason and the captured addresses of its stacks, from
 * lt_report_build_raw) to what it turned out to be, so that a repeat is known without
 * symbolizing it again.
 *
 * The cache key is finer than the signature: every address of every stack, so whatever a
 * suppression rule matches (any frame) is decided by the key too. Two keys may lead to one
 * signature (a bug reached through other outer callers); one key never leads to two.
 *
 * Used under the report lock (report.c), or at exit: fixed tables, no allocation. When a
 * table is full, further reports are built and symbolized every time (the cache) or counted
 * by kind only (the reports).
 */
#include <string.h>

#include "lt_internal.h"
#include "report_data.h"

#define MAX_SEEN 2048   /* distinct reports: more than the per-kind caps print */
#define KEY_SLOTS 8192  /* power of two; open addressing, never more than half full */
#define SUPPRESSED (-1)
#define EXPECTED (-2)

static lt_seen seen[MAX_SEEN];
static size_t nseen LT_START_DATA; /* (with nkeys: read by every fork child) */

typedef struct key_slot {
    uint64_t key;   /* 0 = free */
    int what;       /* index into seen[], SUPPRESSED or EXPECTED */
} key_slot;

static key_slot keys[KEY_SLOTS];
static size_t nkeys LT_START_DATA;

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v;
    h *= 0x9e3779b97f4a7c15ull;
    return h ^ h >> 29;
}

static uint64_t mix_str(uint64_t h, const char *s)
{
    for (; s && *s; s++)
        h = mix(h, (unsigned char)*s);
    return mix(h, 0x100);
}

uint64_t lt_seen_key(const lt_rep *raw)
{
    uint64_t h = mix(mix(0x6c6f636b74726163ull, (uint64_t)raw->kind), (uint64_t)raw->why);
    for (size_t i = 0; i < raw->nstacks; i++) {
        const lt_rep_stack *s = &raw->stacks[i];
        h = mix_str(h, s->role);
        for (size_t k = 0; k < s->nframes; k++)
            h = mix(h, s->frames[k].ip);
        h = mix(h, s->nframes);
    }
    return h | 1; /* never 0, the free slot */
}

static key_slot *slot_of(uint64_t key)
{
    size_t i = (size_t)(key ^ key >> 32) & (KEY_SLOTS - 1);
    while (keys[i].key && keys[i].key != key)
        i = (i + 1) & (KEY_SLOTS - 1);
    return &keys[i];
}

int lt_seen_lookup(uint64_t key, lt_seen **out)
{
    key_slot *k = slot_of(key);
    *out = NULL;
    if (!k->key)
        return LT_SEEN_UNKNOWN;
    if (k->what == SUPPRESSED)
        return LT_SEEN_SUPPRESSED;
    if (k->what == EXPECTED)
        return LT_SEEN_EXPECTED;
    *out = &seen[k->what];
    return LT_SEEN_REPORT;
}

void lt_seen_remember(uint64_t key, int what, const lt_seen *s)
{
    key_slot *k = slot_of(key);
    if (k->key || nkeys >= KEY_SLOTS / 2 || (what == LT_SEEN_REPORT && !s))
        return;
    *k = (key_slot){key, what == LT_SEEN_REPORT       ? (int)(s - seen)
                         : what == LT_SEEN_SUPPRESSED ? SUPPRESSED
                                                      : EXPECTED};
    nkeys++;
}

lt_seen *lt_seen_of(const lt_rep *r)
{
    char sig[17];
    lt_rep_signature(r, sig);
    for (size_t i = 0; i < nseen; i++)
        if (memcmp(seen[i].signature, sig, sizeof sig) == 0)
            return &seen[i];
    if (nseen == MAX_SEEN)
        return NULL;
    lt_seen *s = &seen[nseen++];
    *s = (lt_seen){.kind = r->kind, .first_sec = r->time_sec, .first_nsec = r->time_nsec};
    memcpy(s->signature, sig, sizeof sig);
    lt_rep_format_place(r, s->place, sizeof s->place, 0);
    return s;
}

lt_seen *lt_seen_at(size_t i)
{
    return i < nseen ? &seen[i] : NULL;
}

/* A fork child forgets the parent's reports. The key table is 32 pages: cleared only when it
 * holds keys, since writing it in every child copies (or fills) each page, 31 of a fork's 72
 * page faults under the tracer for a program that made no report (stress-ng --fork). */
LT_FORK_PATH void lt_seen_fork_child(void)
{
    if (nkeys)
        memset(keys, 0, sizeof keys);
    if (nkeys || nseen)
        nkeys = nseen = 0;
}
