/*
 * Threads (thread.c): registration on a thread's first event, the general
 * path's session check and reservation, names, exit, sessions and fork.
 * Internal.
 */
#ifndef TIMELINE_THREADS_H
#define TIMELINE_THREADS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recorder/slot.h"

#pragma GCC visibility push(hidden)

/* The general path's session check, on an entered slot: false when nothing
 * runs or the recorder stopped recording (a drop, counted); else moves the
 * slot to the running session (its old block belonged to an earlier one). */
bool tl_thread_session_enter(struct tl_slot *slot);
/* The general path's reservation, after tl_thread_session_enter: where to
 * write `words` in the slot's block, changing block when it is full; or
 * NULL, the drop counted and the slot left. */
_Atomic uint64_t *tl_thread_reserve_slow(struct tl_slot *slot, size_t words);
/* The calling thread's slot, registering it (lock-free, async-signal-safe,
 * signals blocked meanwhile); NULL, the drop counted, when the table is
 * full or the thread is exiting. */
struct tl_slot *tl_thread_slot(void);
/* For an emit that found its thread's slot busy (a signal handler that
 * interrupted an emit): the first free nesting level of the thread of
 * `slot`, entered, its position word in *pos; NULL, the drop counted, when
 * every level is busy. */
struct tl_slot *tl_thread_enter_nested(struct tl_slot *slot, uint64_t *pos);
/* Logs how many threads found the table full since the last call. */
void tl_threads_log_refusals(void);
/* Reads a slot's name into out (signal-safe); returns its length, 0 if none. */
size_t tl_slot_read_name(struct tl_slot *slot, char *out, size_t size);
/* Session start/stop/fork for thread state. */
void tl_threads_session_start(void);
void tl_threads_session_stop(void);
void tl_threads_after_fork_child(void);
/* Waits up to timeout_ns for every slot's busy flag to clear; 0 or -ETIMEDOUT. */
int tl_threads_wait_idle(int64_t timeout_ns);
uint32_t tl_threads_registered(void);
/* A bound on the row-0 slots in use: no thread ever had a slot at this
 * index or above (the bound only grows), so a walk of the table that
 * looks for threads may stop there. A slot being claimed may be below it
 * with its tid still 0. Lock-free, async-signal-safe. */
uint32_t tl_threads_slots_used(void);
/* Sums the per-thread counters, recycled slots included. */
void tl_threads_counters(uint64_t *dropped, uint64_t *truncated, uint64_t *args_dropped);
extern _Atomic uint64_t tl_unregistered_dropped;

#pragma GCC visibility pop

#endif /* TIMELINE_THREADS_H */
