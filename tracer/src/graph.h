/*
 * graph.h - the one graph search of the tracer: breadth-first, so the first goal found is
 * the nearest and a cycle is reported with the fewest locks or threads. order.c searches the
 * lock-order graph with it (cycles, and the reachability of its topological order), waitfor.c
 * the wait-for graph of blocked threads.
 *
 * The caller owns the graph and the visited marks: its expand callback offers the successors
 * of one item through lt_bfs_reach, skipping nodes it has marked. The queue and the path are
 * scratch memory kept in the lt_bfs between searches, under the caller's lock.
 */
#ifndef LT_GRAPH_H
#define LT_GRAPH_H

#include <stddef.h>
#include <stdint.h>

typedef struct lt_bfs_item {
    void *node;      /* the caller's node */
    void *via;       /* the caller's edge that reached it; NULL for the start */
    uint32_t aux;    /* the caller's state of the visit (order.c: the mode it was entered in) */
    uint32_t parent; /* index of the item it was reached from */
} lt_bfs_item;

typedef struct lt_bfs lt_bfs;
struct lt_bfs {
    void (*expand)(lt_bfs *b, size_t at); /* offers the successors of items[at] */
    void *ctx;                            /* for expand */
    lt_bfs_item *items;                   /* the queue: every item reached, in order */
    size_t n, cap;
    size_t goal;                          /* index of the goal item, once found */
    int found, failed;                    /* a goal was reached; memory ran out */
    lt_bfs_item *path;                    /* lt_bfs_run's result */
    size_t path_cap;
};

/* From expand: items[from] reaches node by edge `via` in state aux. goal: the search ends
 * there. Returns 0 when the search is to stop (goal reached, or out of memory). */
int lt_bfs_reach(lt_bfs *b, size_t from, void *node, void *via, uint32_t aux, int goal);

/* Searches from start (in state aux). Returns the number of items on the path to the first
 * goal reached, start and goal included, which are then in b->path[0 ..]; 0 when no goal is
 * reachable or memory ran out (b->failed). Without a goal (goal never set), the items
 * visited stay in b->items[0 .. b->n) for the caller. */
size_t lt_bfs_run(lt_bfs *b, void *start, uint32_t aux);

#endif
