/*
 * order.h - the lock-order graph (order.c): lock-order inversions.
 */
#ifndef LT_ORDER_H
#define LT_ORDER_H

#include "lt_internal.h"

void lt_order_acquired(lt_event *ev);
int lt_order_anchor(const lt_event *ev); /* the acquired lock will be an anchor (order.c) */
void lt_order_forget(const void *addr);
void lt_order_fork(lt_fork_phase phase);

#endif
