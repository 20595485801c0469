/*
 * graph.c - breadth-first search over a caller's graph (see graph.h).
 */
#include "graph.h"

#include "alloc.h"

int lt_bfs_reach(lt_bfs *b, size_t from, void *node, void *via, uint32_t aux, int goal)
{
    if (b->found || b->failed)
        return 0;
    if (!lt_scratch_fit((void **)&b->items, &b->cap, b->n + 1, sizeof *b->items)) {
        b->failed = 1;
        return 0;
    }
    b->items[b->n] = (lt_bfs_item){node, via, aux, (uint32_t)from};
    if (goal) {
        b->goal = b->n;
        b->found = 1;
    }
    b->n++;
    return !goal;
}

/* The parents from the goal back to the start, written out start first. */
static size_t take_path(lt_bfs *b)
{
    size_t len = 1;
    for (size_t i = b->goal; i != 0; i = b->items[i].parent)
        len++;
    if (!lt_scratch_fit((void **)&b->path, &b->path_cap, len, sizeof *b->path)) {
        b->failed = 1;
        return 0;
    }
    size_t k = len;
    for (size_t i = b->goal;; i = b->items[i].parent) {
        b->path[--k] = b->items[i];
        if (i == 0)
            break;
    }
    return len;
}

size_t lt_bfs_run(lt_bfs *b, void *start, uint32_t aux)
{
    b->n = 0;
    b->found = b->failed = 0;
    if (!lt_bfs_reach(b, 0, start, NULL, aux, 0))
        return 0;
    for (size_t at = 0; at < b->n && !b->found && !b->failed; at++)
        b->expand(b, at);
    return b->found ? take_path(b) : 0;
}
