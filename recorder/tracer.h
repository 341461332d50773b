/*
 * The tracer interface: what the library's own tracers (tracers/: the
 * looper, the frame tracer, and those to come) may use of the core
 * besides the public headers. A tracer includes the public headers
 * (include/timeline/) and this header, nothing else of recorder/. Not
 * installed; hidden symbols.
 *
 * It gives four things the public API does not:
 *
 *   - timestamped emitters: the same events as tl_emit_begin, tl_emit_end
 *     and tl_emit, returning the raw timestamp (tl_timestamp) they were
 *     recorded with, so that a tracer needing the time of its own event
 *     does not read the clock twice; and which session they went to;
 *   - thread marks: a position in the calling thread's records, to read
 *     back what it recorded since (a slow dispatch's call tree);
 *   - the clock map: raw timestamps to nanoseconds, one linear map made
 *     in one place, for tracers that convert on their own hot path; and
 *     the exact conversion (tl_timestamp_to_ns) for many timestamps at
 *     once, for reports;
 *   - files written whole or not at all (recorder/atomic_file.h): a dump
 *     or a report goes under a temporary name, is synced and renamed, so
 *     a full disk never leaves a truncated file under its final name.
 *     Async-signal-safe, for a dump written from a signal handler.
 *
 * Every function here acts on the calling thread's own state, takes no
 * lock and does not allocate, unless its comment says otherwise.
 */
#ifndef TIMELINE_TRACER_H
#define TIMELINE_TRACER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <timeline/timeline.h>

#include "recorder/atomic_file.h"
#include "recorder/record_view.h"

#pragma GCC visibility push(hidden)

/* ---- sessions --------------------------------------------------------------
 * A session is one tl_init .. tl_shutdown. Its number changes at every
 * tl_init (and when a startup recorder fills); 0 while nothing runs. A
 * tracer that emitted a BEGIN compares the number its emit reported with
 * tl_tracer_session() before it emits the matching END.
 */
extern _Atomic uint32_t tl_state; /* read it through tl_tracer_session() */

static inline TL_NO_INSTRUMENT uint32_t tl_tracer_session(void)
{
	return atomic_load_explicit(&tl_state, memory_order_relaxed);
}

/* Where an event went: its raw timestamp, and the session it was recorded
 * in (0 when it was not recorded; ts is then a clock read of its own). */
typedef struct tl_tracer_where {
	tl_timestamp ts;
	uint32_t session;
} tl_tracer_where;

/* ---- timestamped emitters --------------------------------------------------
 * Each records what the public emitter of the same name records and
 * returns the event's raw timestamp, or 0 when it was not recorded (not
 * running, re-entry from a signal handler, recorder full, bad input): the
 * tracer then reads the clock itself. An event handed to a recorder that
 * writes through (systrace) counts as recorded. None of them looks at the
 * category's enabled flag (as tl_emit does not). Thread-safe, lock-free on
 * the fast path, async-signal-safe as the public emitters are.
 */

/* tl_emit_begin. When the BEGIN went to a buffer, also marks it (as
 * tl_thread_mark_last_begin would) when it went there on the fast path;
 * otherwise (the general path, a recorder that writes through, not
 * recorded) mark->block is NULL, and a caller that needs the mark reads the
 * record back with tl_thread_mark_last_begin.
 */
struct tl_thread_mark;
tl_timestamp tl_tracer_begin(const tl_category *cat, const char *name,
                             struct tl_thread_mark *mark);

/* tl_emit_end. */
tl_timestamp tl_tracer_end(const tl_category *cat);

/* tl_emit: ts itself when not 0. */
tl_timestamp tl_tracer_emit(const tl_category *cat, tl_phase phase, unsigned flags,
                            const char *name, uint64_t id, tl_timestamp ts, const tl_arg *args,
                            unsigned nargs);

/*
 * A BEGIN whose name is copied into the record, by whole words: name is a
 * NUL-terminated string of len bytes, zero-padded to the next multiple of
 * 8 bytes (len + 1 bytes at least). Same record as tl_emit(cat,
 * TL_PHASE_BEGIN, TL_EVENT_COPY_NAME, name, ...). Says where it went in
 * *where, written last so that a caller can tail-call it.
 */
void tl_tracer_begin_copy(const tl_category *cat, const char *name, size_t len,
                          tl_tracer_where *where);

/* tl_emit_begin_numbered (a slice named "name number"), saying where it
 * went in *where, written last. */
void tl_tracer_begin_numbered(const tl_category *cat, const char *name, uint64_t number,
                              tl_tracer_where *where);

/* ---- function records --------------------------------------------------------
 * A compact BEGIN for a code address (a function's entry, as the hooks of
 * -finstrument-functions see it): two words, the address interned once
 * per process into a 32-bit id held in the record's header (record.h,
 * TL_REC_F_FUNCTION). A snapshot carries the id -> address table and the
 * process's executable mappings, so that readers name it, offline, as
 * `module+0xoffset` or from the module's symbols. The matching exit is a
 * plain END (tl_tracer_end) of the caller's category.
 */

/*
 * Records the entry of the function at `address` and, when mark is not
 * NULL, marks the record, on the fast path and the general one alike
 * (mark->block NULL when it did not go to a buffer: tl_tracer_retract then
 * leaves it). Returns the raw timestamp, or 0 when nothing was recorded: not
 * running, re-entry, recorder full, NULL address, or the function table
 * full (TL_FUNCTION_TABLE_CAPACITY addresses; counted, see
 * tl_tracer_functions_unnamed). Under a recorder that writes through, the
 * BEGIN is written with the address in hexadecimal as its name.
 * Async-signal-safe, lock-free.
 */
tl_timestamp tl_tracer_function_enter(const void *address, struct tl_thread_mark *mark);

/* ---- inline forms -------------------------------------------------------------
 * For a tracer whose every call site is hot (the -finstrument-functions
 * hooks run around every call of a program): a two-word record (a
 * function record or an END) reserved, written and committed on the
 * caller's side, through the core's one reserve/commit pair (slot.h: enter
 * the thread's slot, check the session and the room, store, one release
 * store that commits and leaves). Between the reserve and the commit the
 * caller holds its thread's slot, as an emit does: it may do work of its
 * own there that must not interleave with its thread's other events (a
 * signal handler's emit on this thread goes to the next nesting level
 * meanwhile, and tl_tracer_reserve2 on this thread answers BUSY), but
 * must not emit, block or call into the library. Defined at the end of
 * this header; async-signal-safe, lock-free.
 *
 *   tl_tracer_reserve2(&r): RESERVED: the slot held, room for the record
 *     in the running session (r.session); the caller then commits or
 *     cancels. r.vdso says which clock the commit reads: false, the TSC
 *     (inline); true, clock_gettime (a call, and the registers a call
 *     makes a function save: a caller whose fast path is short may hand
 *     the reservation to a function of its own for that clock). BUSY: the
 *     thread is inside an emit, a mark or a reservation (a signal handler
 *     that interrupted one of them, or code that one of them called).
 *     MISS: nothing held, the fast path does not apply (the thread's
 *     first event, a new session or block, not running, a recorder that
 *     writes through): the out-of-line emitter records the same event.
 *   tl_tracer_commit_function(&r, id): writes the function record of id (a
 *     TL_FUNCTION_ID of the address, see tl_tracer_function_id), commits
 *     it, returns its timestamp: what tl_tracer_function_enter(address,
 *     NULL) records.
 *   tl_tracer_commit_end(&r, end): writes and commits tl_tracer_end(cat)'s
 *     END, end being tl_tracer_prepare_end(cat) (a value made once: the
 *     record's fixed part); returns its timestamp.
 *   tl_tracer_reserved_clock(&r): reads the clock the reservation's
 *     records take, for tl_tracer_commit_end_at.
 *   tl_tracer_commit_end_at(&r, end, ts): the same END, at ts.
 *   tl_tracer_retract_reserved(&r, ts): with the slot held, takes back the
 *     thread's last record when it is the function record recorded at ts
 *     in r.session (as tl_tracer_retract_function below); true: removed,
 *     and the slot left; false: nothing changed, the slot still held.
 *   tl_tracer_cancel(&r): leaves the slot, nothing written.
 *   tl_tracer_function_id(address): the id of an address already in the
 *     function table at its first probe (every address that did not
 *     collide), else TL_TRACER_NO_ID: then tl_tracer_function_enter
 *     interns it. address must not be NULL.
 *   tl_tracer_retract_function(ts, session): takes back the calling
 *     thread's last record when it is the function record recorded at ts
 *     in session, and that session still runs: tl_tracer_retract, the
 *     record itself standing for the mark (a record of this thread with
 *     the same timestamp is that record). Returns whether it was removed.
 *   tl_tracer_now(): the raw clock, as tl_now() reads it.
 *   tl_tracer_thread_busy(): whether the calling thread is inside an emit,
 *     a mark or a reservation (what makes tl_tracer_reserve2 answer BUSY):
 *     a signal handler that interrupted one, or code that one called.
 */
struct tl_slot;
typedef struct tl_tracer_reservation {
	struct tl_slot *slot;
	uint64_t pos;
	uint32_t session;
	bool vdso; /* the session's clock is clock_gettime */
} tl_tracer_reservation;
enum { TL_TRACER_RESERVED, TL_TRACER_BUSY, TL_TRACER_MISS };
#define TL_TRACER_NO_ID UINT32_MAX

static inline TL_NO_INSTRUMENT int tl_tracer_reserve2(tl_tracer_reservation *r);
static inline TL_NO_INSTRUMENT tl_timestamp tl_tracer_commit_function(tl_tracer_reservation *r,
                                                                      uint32_t id);
typedef uint64_t tl_tracer_prepared_end;
static inline TL_NO_INSTRUMENT tl_tracer_prepared_end tl_tracer_prepare_end(const tl_category *cat);
static inline TL_NO_INSTRUMENT tl_timestamp tl_tracer_commit_end(tl_tracer_reservation *r,
                                                                 tl_tracer_prepared_end end);
static inline TL_NO_INSTRUMENT tl_timestamp
tl_tracer_reserved_clock(const tl_tracer_reservation *r);
static inline TL_NO_INSTRUMENT void
tl_tracer_commit_end_at(tl_tracer_reservation *r, tl_tracer_prepared_end end, tl_timestamp ts);
static inline TL_NO_INSTRUMENT bool tl_tracer_retract_reserved(tl_tracer_reservation *r,
                                                               tl_timestamp ts);
static inline TL_NO_INSTRUMENT void tl_tracer_cancel(tl_tracer_reservation *r);
static inline TL_NO_INSTRUMENT uint32_t tl_tracer_function_id(const void *address);
static inline TL_NO_INSTRUMENT bool tl_tracer_retract_function(tl_timestamp ts, uint32_t session);
static inline TL_NO_INSTRUMENT tl_timestamp tl_tracer_now(void);
static inline TL_NO_INSTRUMENT bool tl_tracer_thread_busy(void);

/* Addresses that got no id because the function table was full, since the
 * process started. */
uint64_t tl_tracer_functions_unnamed(void);

/* The id a function record of `address` carries (interned on first use;
 * UINT32_MAX when the table is full), for state a tracer keeps per
 * function. Async-signal-safe, lock-free. */
uint32_t tl_tracer_function_intern(const void *address);

/*
 * The names of function ids in this process (recorder/function_names.c):
 *   tl_tracer_function_name_cached(id): its symbol when already resolved,
 *     else NULL. Any path, signal handlers included: lock-free.
 *   tl_tracer_function_name(id): resolved now when it was not (reads the
 *     process's maps and the ELF file once per file); NULL when it has no
 *     name. Never from a signal handler. The string lives as long as the
 *     process.
 *   tl_tracer_function_name_now(id, buf, size): for a writer that needs it
 *     at once, from any path (signal handlers included): the symbol, waited
 *     for (bounded) from the resolver thread when not resolved yet, else
 *     `module+0xoffset` in buf (function_names.h, tl_function_name_now).
 *   tl_tracer_function_symbols(fn, ctx): fn(NULL, start, end, ctx) for each
 *     executable mapping of a file in the process now, then fn(name, start,
 *     end, ctx) for each function symbol in it, named as
 *     tl_tracer_function_name names it, its addresses [start, end). 0, or
 *     -ENOTSUP without elfutils (fn not called). Reads every mapped file:
 *     not async-signal-safe; fn must not ask for names.
 *   tl_tracer_function_names_start(): starts the thread that resolves the
 *     ids met by tl_tracer_function_name_cached in the background. 0 or
 *     -errno.
 */
const char *tl_tracer_function_name_cached(uint32_t id);
const char *tl_tracer_function_name(uint32_t id);
const char *tl_tracer_function_name_now(uint32_t id, char *buf, size_t size);

/* The symbol of a decoded function record (an instrumented call's entry),
 * resolved as tl_tracer_function_name does; NULL for any other record or
 * an id not resolved. A tracer reads function records through this, not
 * through the record's flags. */
static inline TL_NO_INSTRUMENT const char *tl_tracer_record_function_name(const tl_record_view *v)
{
	return (v->flags & TL_REC_F_FUNCTION) ? tl_tracer_function_name((uint32_t)v->value) : NULL;
}
#define TL_TRACER_NAME_NOW_MAX 256 /* a buffer for it */
typedef void tl_tracer_symbol_fn(const char *name, uint64_t start, uint64_t end, void *ctx);
int tl_tracer_function_symbols(tl_tracer_symbol_fn *fn, void *ctx);
int tl_tracer_function_names_start(void);

/* Function ids are below this: the function table's capacity, for a
 * tracer's table by id. */
#define TL_TRACER_FUNCTION_IDS (1u << 16)

/*
 * Takes back the calling thread's last record, when it is still the one
 * the mark points to: same session, same block (not handed out again),
 * and the thread's position just past it, so nothing was committed since
 * (a minimum-duration filter: a short call's exit takes back its entry).
 * Returns true when the record was removed; false, with nothing changed,
 * otherwise (another record followed it, the thread moved to a new block,
 * a new session, no mark, or the thread is inside an emit: a signal
 * handler interrupting one).
 *
 * Signals: a handler that interrupts an emit of its thread writes through
 * another nesting level's block, which leaves the thread's own position
 * alone, so a retract after it still finds its record last; a handler
 * that emitted on the thread's own level, between the entry and its
 * retract, has made the record not last, and the retract does nothing.
 *
 * Readers: the record was published when it was committed. A snapshot,
 * dump, flush or slow-dispatch copy taken between its commit and its
 * retract may hold it (an entry with no exit, which readers close as
 * unbalanced). A snapshot that copies the thread's block while the
 * retract and the next record's stores happen may read the retracted
 * record's words mixed with the next record's (the same offsets): the
 * snapshot's decoder drops a record that does not decode, but two words
 * that decode as a record pass. A file recorder that already wrote the
 * retracted record (tl_flush) counts records by index: the record written
 * in its place is not written by that file. Async-signal-safe; the calling
 * thread only.
 */
bool tl_tracer_retract(const struct tl_thread_mark *mark);

/* ---- thread marks ------------------------------------------------------------
 * A position in the calling thread's records. The fields are the core's:
 * a tracer stores a mark and passes it back, nothing else.
 */
struct tl_block;
struct tl_thread_mark {
	const struct tl_block *block; /* NULL: no position (not recording) */
	uint64_t seq;
	uint32_t gen;
	uint32_t offset;
	uint32_t session;
};

/* Marks the end of the thread's last committed record. */
void tl_thread_mark(struct tl_thread_mark *mark);

/* After exactly one emit following tl_thread_mark: when that emit recorded
 * a record of this phase and category, returns its raw timestamp and moves
 * the mark onto it; else 0. */
tl_timestamp tl_thread_mark_record_ts(struct tl_thread_mark *mark, tl_phase phase,
                                      const tl_category *cat);

/* When the thread's last committed record is a BEGIN of cat with the kept
 * name `name` (compared by pointer), returns its raw timestamp and, when
 * mark is not NULL, marks it; else 0. */
tl_timestamp tl_thread_mark_last_begin(const tl_category *cat, const char *name,
                                       struct tl_thread_mark *mark);

/* The records the thread committed since the mark, in order: malloc'd
 * words (the caller frees them), decoded with tl_record_decode. intact is
 * false when the recorder recycled the mark's block, or one after it,
 * before the copy. */
struct tl_thread_copy {
	uint64_t *words;
	size_t nwords;
	bool intact;
};
/* Returns 0, -ENODATA (no mark, another session, a recorder that keeps no
 * buffer), -ENOMEM. Allocates. */
int tl_thread_copy_since(const struct tl_thread_mark *mark, struct tl_thread_copy *out);

/* ---- the clock map -----------------------------------------------------------
 * Raw timestamps (tl_timestamp) to nanoseconds of the trace clock, as a
 * line: exact for a clock that counts nanoseconds, within the TSC's
 * calibration otherwise (a few ns per second of distance from the map's
 * base; tl_clock_map_refresh moves the base to now). tl_timestamp_to_ns()
 * is the exact conversion snapshots use; the map is the cheap one.
 */
typedef struct tl_clock_map {
	uint32_t generation; /* the clock choice it was made for */
	bool ticks;          /* raw values are TSC ticks, not ns */
	uint64_t base_raw;
	int64_t base_ns;
	double ns_per_tick;
	uint64_t anchor_raw; /* the start of the span the rate was measured over */
	int64_t anchor_ns;
} tl_clock_map;

/* Changes whenever the clock's kind may change (every tl_init). */
extern _Atomic uint32_t tl_clock_generation;

/* Makes a map for the clock in use. The first map of a TSC session may
 * wait up to 1 ms for the rate (once per session, not per map). */
void tl_clock_map_init(tl_clock_map *map);

/* Re-centres the map on now and refines its rate over a longer span; makes
 * it again when the clock changed. */
void tl_clock_map_refresh(tl_clock_map *map);

/* Whether the map is for the clock in use now. */
static inline TL_NO_INSTRUMENT bool tl_clock_map_current(const tl_clock_map *map)
{
	return map->generation == atomic_load_explicit(&tl_clock_generation, memory_order_relaxed);
}

static inline TL_NO_INSTRUMENT int64_t tl_clock_map_ns(const tl_clock_map *map, tl_timestamp raw)
{
	if (!map->ticks)
		return (int64_t)raw;
	return map->base_ns + (int64_t)((double)(int64_t)(raw - map->base_raw) * map->ns_per_tick);
}

/* A span of raw time in nanoseconds (one conversion: within a nanosecond
 * of tl_clock_map_ns(end) - tl_clock_map_ns(start)). */
static inline TL_NO_INSTRUMENT int64_t tl_clock_map_span_ns(const tl_clock_map *map,
                                                            uint64_t raw_span)
{
	if (!map->ticks)
		return (int64_t)raw_span;
	return (int64_t)((double)(int64_t)raw_span * map->ns_per_tick);
}

static inline TL_NO_INSTRUMENT tl_timestamp tl_clock_map_raw(const tl_clock_map *map, int64_t ns)
{
	if (!map->ticks)
		return (tl_timestamp)ns;
	return map->base_raw + (uint64_t)(int64_t)((double)(ns - map->base_ns) / map->ns_per_tick);
}

/* The longest raw span that tl_clock_map_span_ns takes to ns or less. */
uint64_t tl_clock_map_span_raw_max(const tl_clock_map *map, int64_t ns);

/* The shortest raw span that tl_clock_map_span_ns takes to ns or more (0
 * for ns <= 0): a span is shorter than ns exactly when it is below it. */
uint64_t tl_clock_map_span_raw_min(const tl_clock_map *map, int64_t ns);

/*
 * The exact conversion for many timestamps: ns[i] = tl_timestamp_to_ns(raw[i])
 * for i < n, all with one set of calibration pairs (tl_timestamp_to_ns
 * gathers a set per call, a few hundred ns with the TSC), so that the
 * values agree with each other as the snapshot's do. For a report that
 * converts every record it copied (a slow dispatch's call tree). raw and ns
 * may be the same array. Async-signal-safe; any thread.
 */
void tl_timestamps_to_ns(const tl_timestamp *raw, int64_t *ns, size_t n);

/* ---- the inline forms' definitions ----------------------------------------------
 * The core's own headers, for these definitions only: a tracer uses what
 * this header declares.
 */
#pragma GCC visibility pop

#include "recorder/clock.h"
#include "recorder/function_table.h"
#include "recorder/record.h"
#include "recorder/session.h"
#include "recorder/slot.h"

#pragma GCC visibility push(hidden)

/* The clock of a reservation's session: the TSC (where there is one: the
 * state word tl_tsc_state) or clock_gettime (tl_vdso_state). */
static inline TL_NO_INSTRUMENT tl_timestamp tl_tracer_inline_clock(const tl_tracer_reservation *r)
{
#if TL_HAVE_TSC
	if (TL_LIKELY(!r->vdso))
		return __rdtsc();
#endif
	(void)r;
	struct timespec ts;
	clock_gettime(tl_clock_id_get(), &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The slot's epoch is the session's state word of the clock path in use
 * (session.h): the TSC's where the slot matches it, else clock_gettime's. */
static inline TL_NO_INSTRUMENT int tl_tracer_reserve2(tl_tracer_reservation *r)
{
	struct tl_slot *slot = tl_self;
	r->slot = slot;
	if (TL_UNLIKELY(!tl_slot_enter_pos(slot, &r->pos)))
		/* the slot of unregistered threads is shared: its busy flag
		 * may be another thread's */
		return slot == &tl_slot_none ? TL_TRACER_MISS : TL_TRACER_BUSY;
	uint32_t epoch = slot->epoch;
#if TL_HAVE_TSC
	uint32_t tsc = atomic_load_explicit(&tl_tsc_state, memory_order_relaxed);
	if (TL_LIKELY(epoch == tsc)) {
		r->session = tsc;
		r->vdso = false;
	} else
#endif
	{
		uint32_t vdso = atomic_load_explicit(&tl_vdso_state, memory_order_relaxed);
		r->session = vdso;
		r->vdso = true;
		if (epoch != vdso)
			goto miss;
	}
	if (TL_LIKELY(r->pos + tl_pos_step(2) <= slot->limit_pos))
		return TL_TRACER_RESERVED;
miss:
	tl_slot_commit_pos(slot, r->pos);
	return TL_TRACER_MISS;
}

_Static_assert(TL_FUNCTION_NONE == TL_TRACER_NO_ID, "one value for no id");

/* Writes the two-word record at ts and commits it (which leaves the slot). */
static inline TL_NO_INSTRUMENT void tl_tracer_commit2_at(tl_tracer_reservation *r, uint64_t header,
                                                         tl_timestamp ts)
{
	_Atomic uint64_t *p = tl_pos_ptr(r->pos);
	atomic_store_explicit(p + 1, header, memory_order_relaxed);
	atomic_store_explicit(p, ts, memory_order_relaxed);
	tl_slot_commit_pos(r->slot, r->pos + tl_pos_step(2));
}

/* The same, at the clock's time. The empty asm keeps the address computed
 * before the clock read (emit.c's reserve_at); the header is stored before
 * it too, so that only the address is kept across a call to
 * clock_gettime. */
static inline TL_NO_INSTRUMENT tl_timestamp tl_tracer_commit2(tl_tracer_reservation *r,
                                                              uint64_t header)
{
	_Atomic uint64_t *p = tl_pos_ptr(r->pos);
	__asm__ volatile("" : "+r"(p));
	atomic_store_explicit(p + 1, header, memory_order_relaxed);
	tl_timestamp ts = tl_tracer_inline_clock(r);
	atomic_store_explicit(p, ts, memory_order_relaxed);
	tl_slot_commit_pos(r->slot, r->pos + tl_pos_step(2));
	return ts;
}

static inline TL_NO_INSTRUMENT tl_timestamp tl_tracer_commit_function(tl_tracer_reservation *r,
                                                                      uint32_t id)
{
	/* an id is below the table's capacity: the mask tells the compiler */
	return tl_tracer_commit2(r, TL_REC_FUNCTION_HEADER(id & (TL_FUNCTION_TABLE_CAPACITY - 1)));
}

/* The header of the END. */
static inline TL_NO_INSTRUMENT tl_tracer_prepared_end tl_tracer_prepare_end(const tl_category *cat)
{
	return TL_REC_HEADER(TL_PHASE_END, 2, 0, cat->index, 0);
}

static inline TL_NO_INSTRUMENT tl_timestamp tl_tracer_commit_end(tl_tracer_reservation *r,
                                                                 tl_tracer_prepared_end end)
{
	return tl_tracer_commit2(r, end);
}

static inline TL_NO_INSTRUMENT tl_timestamp tl_tracer_reserved_clock(const tl_tracer_reservation *r)
{
	return tl_tracer_inline_clock(r);
}

static inline TL_NO_INSTRUMENT void
tl_tracer_commit_end_at(tl_tracer_reservation *r, tl_tracer_prepared_end end, tl_timestamp ts)
{
	tl_tracer_commit2_at(r, end, ts);
}

/* Whether the last record before the position word pos is the function
 * record at ts (a record of the block: the count is not 0). */
static inline TL_NO_INSTRUMENT bool tl_tracer_last_is_function(uint64_t pos, tl_timestamp ts)
{
	/* a function record's header besides its id: phase, length, flags */
	_Static_assert(TL_REC_PHASE_SHIFT == 16 && TL_REC_ARGTYPES_SHIFT == 48,
	               "phase, length and flags are bits 16-47");
	const _Atomic uint64_t *p = tl_pos_ptr(pos) - 2;
	return tl_pos_records(pos) != 0 &&
	       atomic_load_explicit(&p[0], memory_order_relaxed) == ts &&
	       (uint32_t)(atomic_load_explicit(&p[1], memory_order_relaxed) >> 16) ==
	           (uint32_t)(TL_REC_FUNCTION_HEADER(0) >> 16);
}

static inline TL_NO_INSTRUMENT bool tl_tracer_retract_reserved(tl_tracer_reservation *r,
                                                               tl_timestamp ts)
{
	if (!tl_tracer_last_is_function(r->pos, ts))
		return false;
	/* the position back over it, one record fewer; the store also leaves
	 * the slot */
	tl_slot_commit_pos(r->slot, r->pos - tl_pos_step(2));
	return true;
}

static inline TL_NO_INSTRUMENT void tl_tracer_cancel(tl_tracer_reservation *r)
{
	tl_slot_commit_pos(r->slot, r->pos);
}

static inline TL_NO_INSTRUMENT uint32_t tl_tracer_function_id(const void *address)
{
	return tl_function_find((uintptr_t)address);
}

static inline TL_NO_INSTRUMENT bool tl_tracer_retract_function(tl_timestamp ts, uint32_t session)
{
	struct tl_slot *slot = tl_self;
	uint64_t pos;
	if (TL_UNLIKELY(!tl_slot_enter_pos(slot, &pos)))
		return false;
	uint32_t state = atomic_load_explicit(&tl_state, memory_order_relaxed);
	if (session != 0 && slot->epoch == session && state == session &&
	    tl_tracer_last_is_function(pos, ts)) {
		tl_slot_commit_pos(slot, pos - tl_pos_step(2));
		return true;
	}
	tl_slot_commit_pos(slot, pos);
	return false;
}

static inline TL_NO_INSTRUMENT tl_timestamp tl_tracer_now(void)
{
	return tl_clock_read();
}

static inline TL_NO_INSTRUMENT bool tl_tracer_thread_busy(void)
{
	const struct tl_slot *slot = tl_self;
	/* the slot of unregistered threads is shared: its flag may be another
	 * thread's, and a thread is registered before it holds a slot */
	return slot != &tl_slot_none && tl_slot_busy(slot);
}

#pragma GCC visibility pop

#endif /* TIMELINE_TRACER_H */
