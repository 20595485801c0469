/*
 * order.h - the lock-order graph (order.c): lock-order inversions.
 */
#ifndef LT_ORDER_H
#define LT_ORDER_H

#include "known.h"
#include "lt_internal.h"

void lt_order_acquired(lt_event *ev);
/* The calling thread let go of its last lock: the graph's work that waits for that. */
static inline void lt_order_idle(void)
{
    lt_known_idle();
}
/* Whether t's acquisition of l in `mode`, were it granted now, would add nothing to the graph
 * (no edge, or only known ones): then lt_order_acquired has nothing to do after the grant.
 * *memo is the caller's record of the last edge into l found known (0 = none): the edge is
 * known without a look at the known set when it is that one, and becomes it when the set has
 * it. (The event's fields, not the event: the caller keeps it in registers.) */
int lt_order_known_walk(lt_thread *t, lt_lock *l, lt_mode mode, uint64_t *memo);
/* Its answers without a walk inline: a lock's first acquisition under another (every one in
 * `groups`) paid a call and a full frame for the load of l->order_node. No edge leads into a
 * lock without a node but its inline edge, which is in no known set: whatever the walk finds,
 * it is not known (and lt_order_acquired, which
 * walks anyway, says so when it finds no edge to make). */
static inline int lt_order_known(lt_thread *t, lt_lock *l, lt_mode mode, lt_wait wait,
                                 uint64_t *memo)
{
    if (t->nheld == 0 || !lt_wait_orders(wait) || lt_cfg.inversion == LT_INVERSION_OFF)
        return 1;
    intptr_t ref = (intptr_t)atomic_load_explicit(&l->order_node, memory_order_acquire);
    if (ref <= 0) /* (no node: inline edges or none, order.c's "Inline edges") */
        return 0;
    if (lt_likely(lt_order_known_walk(t, l, mode, memo)))
        return 1;
    /* Edges to make after the grant, into this node: its line asked for now, not where they
     * are made (order.c's edges_prefetch). Its address is in l's entry, so it could not be
     * asked for with the known set's slots (order.c's prefetch_held); once those were, it was the
     * miss `lazy` waited for, a third of the time of making its new edges. */
    __builtin_prefetch((const void *)ref, 1);
    return 0;
}
/* The identity l has (or had, before its gen moves on) is history (`how`): its node and edges
 * leave the graph, the orders it stood in for between other locks stay. On init, destroy,
 * free and reuse, with the shadow entry still at the address. A lock without a node (at
 * init, nearly always) costs the inline load; lt_order_forget_node does the rest. */
void lt_order_forget_node(lt_lock *l, struct lt_order_node *n, lt_ended how);
void lt_order_forget_inline(lt_lock *l, struct lt_order_node *ref, lt_ended how);
static inline void lt_order_forget(lt_lock *l, lt_ended how)
{
    struct lt_order_node *n = l ? atomic_load_explicit(&l->order_node, memory_order_acquire) : NULL;
    if ((intptr_t)n < 0) { /* inline edges (order.c), or (low bits 3) none: an ended one's room */
        if (((uintptr_t)n & 3) != 3)
            lt_order_forget_inline(l, n, how);
    } else if (n) {
        lt_order_forget_node(l, n, how);
    }
}
/* The exiting thread t gives back what the graph kept for it. */
void lt_order_thread_exit(lt_thread *t);
void lt_order_fork(lt_fork_phase phase);

#endif
