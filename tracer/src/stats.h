/*
 * stats.h - LOCKTRACE_STATS (stats.c); every hook is behind
 * `if (lt_unlikely(lt_cfg.stats))`.
 */
#ifndef LT_STATS_H
#define LT_STATS_H

#include "lt_internal.h"

void lt_stats_setup(void);
void lt_stats_fork(lt_fork_phase phase);
void lt_stats_wait_begin(lt_event *ev);
void lt_stats_wait_end(lt_event *ev);
void lt_stats_acquired(lt_event *ev, lt_held *h);
void lt_stats_released(lt_held *h);

#endif
