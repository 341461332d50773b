/*
 * The session: its number (tl_state), the fast forms' copy of it that also
 * says which clock is in use, and the process it runs in. Internal.
 */
#ifndef TIMELINE_SESSION_H
#define TIMELINE_SESSION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "recorder/slot.h"

#pragma GCC visibility push(hidden)

/* ---- global state ----------------------------------------------------------
 * tl_state is the epoch of the running session (odd numbers, never 0), or
 * 0 when stopped. TL_STATE_FULL is or-ed in when a recorder stops
 * recording (startup). A slot whose epoch differs takes the slow path.
 */
#define TL_STATE_FULL 0x80000000u
extern _Atomic uint32_t tl_state;

/*
 * What the fast forms of each clock path compare a slot's epoch with:
 * tl_state while that path's clock is the session's, else
 * TL_STATE_OTHER_CLOCK, which no epoch equals (epochs are odd, 0 or
 * UINT32_MAX). The clock is chosen once per session (tl_clock_init), and
 * an emit picks its path's form by reading the choice; a form picked by a
 * stale choice fails this one check and takes the general path, so the
 * forms need no clock test of their own. Written with tl_state by
 * tl_state_set only (and the FULL bit by tl_recorder_mark_full).
 */
#define TL_STATE_OTHER_CLOCK 2u
extern _Atomic uint32_t tl_tsc_state;
extern _Atomic uint32_t tl_vdso_state;
void tl_state_set(uint32_t state);

/* The process: its pid (the child's after a fork) and its name. */
extern pid_t tl_pid;
extern char tl_process_name[TL_NAME_MAX];

#pragma GCC visibility pop

#endif /* TIMELINE_SESSION_H */
