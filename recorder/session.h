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
 * What the TSC fast forms of the emitters compare a slot's epoch with:
 * tl_state while the TSC clock is in use, else TL_FAST_STATE_VDSO, which
 * no epoch equals (epochs are odd, 0 or UINT32_MAX). A machine without a
 * usable TSC then fails that one check and goes to the vDSO forms, so the
 * TSC forms need no clock test of their own. Written with tl_state by
 * tl_state_set only (and the FULL bit by tl_recorder_mark_full).
 */
#define TL_FAST_STATE_VDSO 2u
extern _Atomic uint32_t tl_fast_state;
void tl_state_set(uint32_t state);

/* The process: its pid (the child's after a fork) and its name. */
extern pid_t tl_pid;
extern char tl_process_name[TL_NAME_MAX];

#pragma GCC visibility pop

#endif /* TIMELINE_SESSION_H */
