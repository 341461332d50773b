/*
 * Stats (lifecycle.c): the counters gathered for tl_stats_get, and what
 * the exporters report back. Internal.
 */
#ifndef TIMELINE_STATS_H
#define TIMELINE_STATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <timeline/timeline.h>

#pragma GCC visibility push(hidden)

void tl_stats_collect(tl_stats *out);
void tl_stats_note_export(uint64_t unmatched_begin, uint64_t unmatched_end);
extern _Atomic uint64_t tl_blocks_torn;

#pragma GCC visibility pop

#endif /* TIMELINE_STATS_H */
