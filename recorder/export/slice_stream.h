/*
 * Slice matching over a thread's events as a cursor gives them
 * (snapshot_read.h), without holding them: the rules of slice_match.h,
 * applied in the same order, so that the slices, their flows and the items
 * come out exactly as tl_slice_match_build makes them from a model of the
 * same snapshot. The streaming exporters (export_stream.h) run it.
 *
 * A thread is read in passes, each a cursor over its events:
 *
 *  1. tl_thread_survey: what the matching must know ahead of the events.
 *     It keeps, for every 256 events (a segment), the earliest timestamp
 *     they and the events after them hold, so that the passes that write
 *     know when an item can no longer be preceded by one still to come
 *     (tl_slice_stream_floor). COMPLETE events are recorded when they end
 *     but are slices from their start, so they are merged by start time: a
 *     look-ahead two segments ahead of the matching (the cursor reading
 *     into a ring of 512 events that the matching then takes) finds most
 *     of them in time, and holds them until their start comes. The survey
 *     keeps only the others, those that start no later than an event two
 *     segments before their own (32 bytes each): a COMPLETE event that
 *     spans more than a segment's events. At an equal timestamp a BEGIN
 *     goes before a COMPLETE when its slice ends no later: that end is
 *     found then, in the ring and on with a copy of the cursor, at the
 *     BEGIN's END.
 *  2. tl_slice_stream: the matching itself, calling back for every slice
 *     opened, slice closed, other event and flow bound, with the item's
 *     position in the thread's processing order (tl_match_item.order).
 *     Memory: the open slices, the BEGINs waiting for their END, and, when
 *     the thread has COMPLETE events, the look-ahead's ring (24 KiB; for a
 *     thread of fewer events, room for them only) and
 *     the COMPLETE events it read that have not opened yet.
 *
 * A file recorder's packed blocks are unpacked as the cursors enter them.
 * When the consumer names what it keeps (r->trim_behind and ops->keep), the
 * survey and the matching free, every TRIM_BLOCKS blocks their cursor
 * passes, the unpacked records behind it that nothing holds
 * (tl_snapshot_thread_trim): memory is then the blocks around the cursors
 * and those holding a record kept (an open slice's BEGIN, a far COMPLETE
 * event, an item waiting for its place), not the whole thread's.
 *
 * A slice's fate can depend on events long after it opens (its END, a flow
 * bound to it while it is innermost, a child that starts with it): a
 * writer that needs it at the open runs the matching twice, noting at each
 * close what the second run will need (export_json.c).
 */
#ifndef TIMELINE_SLICE_STREAM_H
#define TIMELINE_SLICE_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "recorder/export/slice_match.h"
#include "recorder/export/snapshot_read.h"

/* Events per survey segment (tl_thread_survey.floor_ns). */
#define TL_STREAM_SEGMENT 256
/* Events a look-ahead holds (tl_slice_stream.ring). */
#define TL_STREAM_RING (2 * TL_STREAM_SEGMENT)

/* A COMPLETE event, in the order it is merged. */
typedef struct tl_stream_complete {
	int64_t start_ns;
	int64_t end_ns; /* >= start_ns */
	uint64_t position;
	const uint64_t *rec;
} tl_stream_complete;

/*
 * Which COMPLETE events a look-ahead two segments ahead of the matching
 * finds too late ("far"): those starting no later than an event (not a
 * COMPLETE) of a segment two before their own. Fed every event in order, by
 * the survey and by the look-ahead alike, so that both classify the same.
 */
typedef struct tl_far_test {
	uint64_t segment; /* of the last event seen */
	int64_t max_ns;   /* the latest event timestamp up to it, COMPLETE events left out */
	int64_t max_1_ns; /* ... up to the segment before it */
	int64_t max_2_ns; /* ... up to the segment two before it */
} tl_far_test;

/* What the matching counts (tl_slice_match's counters). */
typedef struct tl_match_counts {
	uint64_t unmatched_begin;
	uint64_t unmatched_end;
	uint64_t too_deep;
	uint64_t flow_markers;
	uint64_t flows_dropped;
	uint64_t events_unknown;
} tl_match_counts;

typedef struct tl_thread_survey {
	tl_snapshot_thread *thread;
	uint64_t nevents;
	int64_t close_ns;        /* where slices still open at the end close */
	uint64_t ncompletes;     /* COMPLETE events */
	tl_stream_complete *far; /* the far ones (tl_far_test), sorted by (start,
	                          * end decreasing, position) */
	size_t nfar;
	/* their records, copied where the reader frees unpacked records
	 * behind its cursors (r->trim_behind and packed blocks) */
	tl_rec_copies far_recs;
	/* floor_ns[k]: the earliest timestamp of the events from position
	 * k * TL_STREAM_SEGMENT on, far COMPLETE events left out */
	int64_t *floor_ns;
	size_t nsegments;

	uint64_t nbegins;
	uint64_t nitems_events; /* instants, async events and counters */
	uint64_t nan_counters;  /* double counters whose value is NaN */
	size_t max_depth;       /* most BEGINs open at once */
	/*
	 * The counts of unmatched BEGINs and ENDs that the matching will give,
	 * and the items it will make (2 per BEGIN and COMPLETE slice, 1 per
	 * other event), valid unless may_be_too_deep: then some slices may be
	 * dropped for depth, and only a run of the matching says which.
	 */
	uint64_t unmatched_begin;
	uint64_t unmatched_end;
	int may_be_too_deep;
	int fed; /* the events went to tl_thread_survey_run's feed, which ended */
} tl_thread_survey;

struct tl_slice_stream;

/*
 * Surveys thread t of r (pass 1 above); its events are counted into
 * r->nevents: survey each thread once. feed, when not NULL, is a matching
 * run over this survey (tl_slice_stream_init with out) given the events as
 * they are read, which saves a pass when the thread has no COMPLETE event:
 * it is then ended and out->fed set; otherwise what it was given must be
 * forgotten, and the matching run again. 0 or -ENOMEM. Free with
 * tl_thread_survey_free.
 */
int tl_thread_survey_run(tl_snapshot_read *r, tl_snapshot_thread *t, tl_thread_survey *out,
                         struct tl_slice_stream *feed);
void tl_thread_survey_free(tl_thread_survey *survey);

enum tl_stream_slice_kind {
	TL_STREAM_BEGIN,    /* from a BEGIN, closed by its END or at the end */
	TL_STREAM_COMPLETE, /* from a COMPLETE event */
	TL_STREAM_MARKER,   /* a flow's zero-length slice (TL_SLICE_FLOW_MARKER) */
};

/* A slice while it is open, as the callbacks see it. */
typedef struct tl_stream_slice {
	uint64_t index; /* among the thread's slices, in the order they open */
	int64_t start_ns;
	int64_t end_ns; /* for TL_STREAM_BEGIN: known when it closes */
	unsigned flags; /* TL_SLICE_*; TL_SLICE_AS_COMPLETE known when it closes */
	enum tl_stream_slice_kind kind;
	int child_as_complete;   /* a child starting with it is written as complete */
	const uint64_t *rec;     /* the BEGIN, COMPLETE or flow event */
	const uint64_t *end_rec; /* the matching END, when it closes; or NULL */
	tl_cursor_event flow;    /* the flow bound to it, when has_flow */
	int has_flow;
} tl_stream_slice;

/* What a run of the matching tells. Every callback may be NULL. order is
 * the item's position in the thread's processing order. */
typedef struct tl_slice_stream_ops {
	void (*open)(void *ctx, const tl_stream_slice *s, uint64_t order);
	void (*close)(void *ctx, const tl_stream_slice *s, uint64_t order);
	void (*event)(void *ctx, const tl_cursor_event *e, uint64_t order);
	/* a flow bound to s (s->flow), or given s as its marker */
	void (*flow)(void *ctx, const tl_stream_slice *s);
	/* Where the reader frees what the cursors passed (r->trim_behind):
	 * adds to k every record pointer the callbacks kept that is still to
	 * be read (NULL: none is kept past the callback). */
	void (*keep)(void *ctx, tl_kept_recs *k);
} tl_slice_stream_ops;

typedef struct tl_slice_stream {
	const tl_thread_survey *survey;
	tl_event_cursor cursor;
	const tl_slice_stream_ops *ops;
	void *ctx;

	size_t next_far;
	/* the look-ahead, when the thread has COMPLETE events that are not
	 * far: the cursor reads up to two segments ahead of the matching into
	 * a ring of events, and the COMPLETE events that are not far are held
	 * by (start, end decreasing, position) until they open */
	tl_cursor_event *ring; /* ring_cap events; NULL: no look-ahead */
	size_t ring_cap;       /* TL_STREAM_RING, or less for a thread of fewer events */
	uint64_t ring_head;    /* the position of the next event to match */
	uint64_t ring_tail;    /* the position of the next event to read */
	int ring_ended;        /* the cursor gave its last event */
	tl_far_test ahead_test;
	tl_stream_complete *held;
	size_t nheld;
	size_t held_cap;
	/* the end of the last BEGIN that started with a COMPLETE event */
	uint64_t tie_position; /* + 1; 0: none */
	int64_t tie_end_ns;
	tl_stream_slice *stack; /* open slices, innermost last */
	size_t depth;
	size_t stack_cap;
	uint64_t *begins; /* BEGINs waiting for their END: slice index, or dropped */
	size_t nbegins;
	size_t begins_cap;
	uint64_t nslices;
	uint64_t order;
	int done;
	tl_match_counts counts;
	/* r->trim_behind: the cursor's block at the last trim, and the list
	 * of the records kept then */
	size_t trimmed_block;
	tl_kept_recs kept;
} tl_slice_stream;

/* A run of the matching over the thread survey describes, its events read
 * from r, or given by the caller (tl_slice_stream_push) when r is NULL.
 * 0 or -ENOMEM. */
int tl_slice_stream_init(tl_slice_stream *s, tl_snapshot_read *r, const tl_thread_survey *survey,
                         const tl_slice_stream_ops *ops, void *ctx);

/*
 * Matches the next events, up to the end of the current survey segment.
 * Returns 1 while events remain, 0 once every slice is closed (the last
 * callbacks made), -ENOMEM.
 */
int tl_slice_stream_step(tl_slice_stream *s);

/* Runs the matching to its end: 0 or -ENOMEM. */
int tl_slice_stream_run(tl_slice_stream *s);

/* The matching given its events by the caller, in order (COMPLETE events
 * are skipped: they come from the survey), instead of from its cursor; then
 * ended. 0 or -ENOMEM. */
int tl_slice_stream_push(tl_slice_stream *s, const tl_cursor_event *e);
int tl_slice_stream_end(tl_slice_stream *s);

/*
 * The earliest timestamp that an item still to come can have: items given
 * so far with an earlier timestamp are in their final place among all of
 * the thread's items. INT64_MAX once the run is done.
 */
int64_t tl_slice_stream_floor(const tl_slice_stream *s);

/* Adds to k the records the matching holds (its open slices, look-ahead
 * and held COMPLETE events; the far ones are the survey's copies), and
 * those its callbacks keep (ops->keep). */
void tl_slice_stream_keep(const tl_slice_stream *s, tl_kept_recs *k);

void tl_slice_stream_free(tl_slice_stream *s);

#endif /* TIMELINE_SLICE_STREAM_H */
