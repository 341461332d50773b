/*
 * The importer (see trace_import.h and docs/reading.md). One pass over the
 * events in Perfetto's order; every track keeps a stack of its open slices.
 *
 * Closing rule for slices whose end is known when they begin (X, instants):
 * such a slice leaves its track's stack when an event comes after its end,
 * or at its end when it lasts longer than zero, or - for a zero-duration
 * slice - when a B or E arrives at its timestamp. So two zero-duration X at
 * one timestamp nest, while a B at that timestamp becomes their sibling.
 */
#include "tools/readers/trace_import.h"

#include "recorder/export/export_stream.h"
#include "recorder/export/snapshot_read.h"
#include "recorder/hash_map.h"
#include "recorder/snapshot_format.h"
#include "tools/readers/spill_sort.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const tl_import_stat_names[TL_STAT_COUNT] = {
    [TL_STAT_SYSTRACE_PARSE_FAILURE] = "systrace_parse_failure",
    [TL_STAT_SYSTRACE_UNTERMINATED_LINE] = "systrace_unterminated_line",
    [TL_STAT_SYSTRACE_MARKER_UNSUPPORTED] = "systrace_marker_unsupported",
    [TL_STAT_SYSTRACE_KERNEL_EVENT] = "systrace_kernel_event_skipped",
    [TL_STAT_SLICE_MAX_DEPTH_EXCEEDED] = "slice_max_depth_exceeded",
    [TL_STAT_SLICE_END_UNMATCHED] = "slice_end_unmatched",
    [TL_STAT_SLICE_SPILL_OVERLAPPING] = "slice_spill_overlapping_complete_event",
    [TL_STAT_ASYNC_END_UNMATCHED] = "async_end_unmatched",
    [TL_STAT_JSON_EMPTY_EVENT] = "json_empty_event",
    [TL_STAT_JSON_DISPLAY_TIME_UNIT] = "json_display_time_unit",
    [TL_STAT_JSON_MISSING_PHASE] = "json_missing_phase",
    [TL_STAT_JSON_MISSING_TS] = "json_missing_ts",
    [TL_STAT_JSON_PHASE_IGNORED] = "json_phase_ignored",
    [TL_STAT_JSON_COMPLETE_MISSING_DUR] = "json_complete_missing_dur",
    [TL_STAT_JSON_COMPLETE_NEGATIVE_DUR] = "json_complete_negative_dur",
    [TL_STAT_JSON_INSTANT_MISSING_TID] = "json_instant_missing_tid",
    [TL_STAT_JSON_ASYNC_MISSING_ID] = "json_async_missing_pid_or_id",
    [TL_STAT_JSON_COUNTER_INVALID_VALUE] = "json_counter_invalid_value",
    [TL_STAT_JSON_METADATA_IGNORED] = "json_metadata_ignored",
    [TL_STAT_FLOW_INVALID_ID] = "flow_invalid_id",
    [TL_STAT_FLOW_WITHOUT_DIRECTION] = "flow_without_direction",
    [TL_STAT_FLOW_NO_ENCLOSING_SLICE] = "flow_no_enclosing_slice",
    [TL_STAT_FLOW_STEP_WITHOUT_START] = "flow_step_without_start",
    [TL_STAT_FLOW_END_WITHOUT_START] = "flow_end_without_start",
    [TL_STAT_TRACK_EVENT_PARSER_ERRORS] = "track_event_parser_errors",
};

/* ------------------------------------------------------------------------ */
/* String-keyed map: key bytes -> index (recorder/hash_map.h) */

typedef tl_str_slot map_slot;

typedef struct strmap {
	tl_str_map map;
	int owned; /* keys are allocated one by one (map_delete frees them), not in the arena */
} strmap;

struct tl_import_maps {
	strmap thread_by_key;  /* "pid/tid" -> thread */
	strmap current_thread; /* "tid" -> the thread that tid currently is (systrace) */
	strmap process_by_pid;
	strmap track_by_key;
	strmap synthetic_ids; /* string pid/tid -> synthetic id */
	strmap flow_v1;       /* cat, name, id -> slice */
	strmap flow_v2;       /* bind id -> slice */
	strmap names;         /* with a sink: one copy of each name, category, arg key */
};

static map_slot *map_find_slot(const strmap *m, const char *key, size_t len, uint64_t hash)
{
	return tl_str_map_find(&m->map, key, len, hash);
}

static uint64_t *map_get(const strmap *m, const char *key, size_t len)
{
	map_slot *s = map_find_slot(m, key, len, tl_hash_bytes(key, len));
	return s ? &s->value : NULL;
}

static int map_set(strmap *m, tl_str_arena *arena, const char *key, size_t len, size_t value)
{
	uint64_t hash = tl_hash_bytes(key, len);
	map_slot *s = tl_str_map_place(&m->map, key, len, hash);
	if (!s)
		return -ENOMEM;
	if (!s->key) {
		const char *copy;
		if (m->owned) {
			char *own = malloc(len + 1);
			if (own) {
				memcpy(own, key, len);
				own[len] = '\0';
			}
			copy = own;
		} else {
			copy = tl_str_arena_copy(arena, key, len);
		}
		if (!copy)
			return -ENOMEM;
		tl_str_map_fill(&m->map, s, copy, len, hash, value);
	}
	s->value = value;
	return 0;
}

/* Removes key (an owned map's copy is freed). */
static void map_delete(strmap *m, const char *key, size_t len)
{
	map_slot *s = map_find_slot(m, key, len, tl_hash_bytes(key, len));
	if (!s)
		return;
	if (m->owned)
		free((char *)s->key);
	tl_str_map_remove(&m->map, s);
}

static void map_free(strmap *m)
{
	for (size_t i = 0; m->owned && i < m->map.cap; i++)
		free((char *)m->map.slots[i].key);
	tl_str_map_free(&m->map);
	m->owned = 0;
}

/* ------------------------------------------------------------------------ */
/* The importer state */

enum close_mode {
	CLOSE_FOR_BEGIN,  /* B, E, async begin/end: zero-duration slices at ts close */
	CLOSE_FOR_SCOPED, /* X and instants: zero-duration slices at ts stay */
	CLOSE_FOR_FLOW,   /* flows: slices ending exactly at ts still enclose */
};

/* A v1 'f' flow end waiting for the next slice of its thread: in its
 * thread's list, in the order they came (pending_list), or free. */
typedef struct pending_flow {
	size_t out;  /* the slice the flow comes from */
	size_t next; /* the next of the thread's list, or of the free entries */
} pending_flow;

typedef struct pending_list {
	size_t first, last; /* TL_IMPORT_NONE: none */
} pending_list;

/*
 * With a sink, out->slices is a pool of slots: a slice takes one when it
 * begins and gives it back once handed on (slot_info says where it is),
 * unless a flow still refers to it. Its args are a list of stream_args,
 * also given back. Slices leave their track's stack in the middle of an
 * event (its args and flows may follow), so they are queued (popped) and
 * handed on at the start of the next begin or end, or at the end.
 */
enum slot_state { SLOT_OPEN, SLOT_POPPED, SLOT_HANDED, SLOT_FREE };

typedef struct slot_info {
	uint64_t seq;
	size_t first_arg, last_arg; /* TL_IMPORT_NONE: none */
	uint32_t refs;              /* flow maps and pending flow ends pointing at it */
	uint8_t state;              /* enum slot_state */
} slot_info;

typedef struct stream_arg {
	uint64_t seq;
	const char *key;
	tl_json_value value; /* a string value is owned */
	size_t next;         /* the slice's next arg, or the next free one */
} stream_arg;

/* A stack of indices: the free slots and tracks, the slices popped. */
typedef struct index_list {
	size_t *at;
	size_t n, cap;
} index_list;

typedef struct stream {
	const tl_import_sink *sink;
	slot_info *slots;
	size_t slots_cap;
	index_list free_slots, popped;
	stream_arg *args;
	size_t nargs, args_cap, free_arg, live_args;
	index_list free_tracks;
	char **track_keys; /* an async track's key in track_by_key (owned), to retire it */
	size_t track_keys_cap;
	tl_import_sink_arg *handed; /* scratch: a slice's args as handed on */
	size_t handed_cap;
	uint64_t next_seq, next_arg_seq, next_counter_seq, next_flow_seq;
	size_t live_slices, live_tracks;
	int rc; /* the sink's error */
} stream;

typedef struct importer {
	tl_import *out;
	struct tl_import_maps *maps;
	char *key; /* scratch for map keys */
	size_t key_len, key_cap;
	uint32_t next_synthetic_id;
	pending_flow *pending; /* v1 'f' waiting for the next slice of a thread */
	size_t npending, pending_cap, free_pending, waiting;
	pending_list *pending_of; /* by thread */
	size_t pending_of_cap;
	size_t slices_cap, tracks_cap, threads_cap, processes_cap, counters_cap, flows_cap,
	    args_cap, clock_syncs_cap;
	stream *st; /* NULL: a whole import */
	int nomem;
} importer;

static void *grow_array(importer *im, void *array, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return array;
	size_t n = *cap ? *cap * 2 : 64;
	while (n < need)
		n *= 2;
	void *grown = realloc(array, n * elem);
	if (!grown) {
		im->nomem = 1;
		return NULL;
	}
	*cap = n;
	return grown;
}

#define APPEND(im, array, count, cap)                                                              \
	((array) = grow_array((im), (array), &(im)->cap, (count) + 1, sizeof *(array)),            \
	 (array) ? &(array)[(count)++] : NULL)

/* Pushes index on l; false when memory ran out. */
static bool index_push(importer *im, index_list *l, size_t index)
{
	size_t *at = grow_array(im, l->at, &l->cap, l->n + 1, sizeof *at);
	if (!at)
		return false;
	l->at = at;
	at[l->n++] = index;
	return true;
}

/* The index pushed last, taken off l; TL_IMPORT_NONE when l is empty. */
static size_t index_pop(index_list *l)
{
	return l->n ? l->at[--l->n] : TL_IMPORT_NONE;
}

static void stat_add(importer *im, tl_import_stat stat)
{
	im->out->stats[stat]++;
}

static const char *copy_str(importer *im, const char *s, size_t len)
{
	const char *c = tl_str_arena_copy(&im->out->strings, s ? s : "", s ? len : 0);
	if (!c)
		im->nomem = 1;
	return c;
}

static const char *copy_cstr(importer *im, const char *s)
{
	return s ? copy_str(im, s, strlen(s)) : NULL;
}

/*
 * A slice's name or category, a track's name, an arg's key: a copy in the
 * arena for a whole import; with a sink, the one copy of each distinct
 * string in use, counted, given back by name_release when its last user
 * is (a trace has few distinct names, but some hold a frame's number).
 */
static const char *name_str(importer *im, const char *s, size_t len)
{
	if (!im->st)
		return copy_str(im, s, len);
	if (!s) {
		s = "";
		len = 0;
	}
	/* the copy is read as a C string (name_release looks it up so) */
	const char *nul = memchr(s, '\0', len);
	if (nul)
		len = (size_t)(nul - s);
	strmap *m = &im->maps->names;
	uint64_t hash = tl_hash_bytes(s, len);
	map_slot *slot = map_find_slot(m, s, len, hash);
	if (!slot) {
		if (map_set(m, &im->out->strings, s, len, 0)) {
			im->nomem = 1;
			return NULL;
		}
		slot = map_find_slot(m, s, len, hash);
		if (m->map.used > im->out->held_names)
			im->out->held_names = m->map.used;
	}
	slot->value++;
	return slot->key;
}

/* A user of name_str's copy s is gone (NULL, a literal: nothing to do). */
static void name_release(importer *im, const char *s)
{
	if (!im->st || !s)
		return;
	strmap *m = &im->maps->names;
	size_t len = strlen(s);
	map_slot *slot = map_find_slot(m, s, len, tl_hash_bytes(s, len));
	if (!slot || slot->key != s)
		return;
	if (--slot->value == 0)
		map_delete(m, s, len);
}

static const char *name_cstr(importer *im, const char *s)
{
	return s ? name_str(im, s, strlen(s)) : NULL;
}

/* Builds a map key in im->key from printf-style pieces. */
static int key_printf(importer *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int key_printf(importer *im, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(im->key, im->key_cap, fmt, ap);
		va_end(ap);
		if (n < 0)
			return -1;
		if ((size_t)n < im->key_cap) {
			im->key_len = (size_t)n;
			return 0;
		}
		size_t cap = (size_t)n + 64;
		char *grown = realloc(im->key, cap);
		if (!grown) {
			im->nomem = 1;
			return -1;
		}
		im->key = grown;
		im->key_cap = cap;
	}
}

/* ------------------------------------------------------------------------ */
/* Processes, threads, tracks */

static size_t get_process(importer *im, uint32_t pid)
{
	tl_import *out = im->out;
	if (key_printf(im, "%u", (unsigned)pid))
		return TL_IMPORT_NONE;
	uint64_t *found = map_get(&im->maps->process_by_pid, im->key, im->key_len);
	if (found)
		return *found;
	tl_import_process *p = APPEND(im, out->processes, out->nprocesses, processes_cap);
	if (!p)
		return TL_IMPORT_NONE;
	*p = (tl_import_process){.pid = pid};
	size_t index = out->nprocesses - 1;
	if (map_set(&im->maps->process_by_pid, &out->strings, im->key, im->key_len, index))
		im->nomem = 1;
	return index;
}

static size_t new_track(importer *im, tl_import_track_kind kind, tl_import_scope scope,
                        const char *name, uint32_t pid, size_t thread)
{
	tl_import *out = im->out;
	stream *st = im->st;
	size_t index = st ? index_pop(&st->free_tracks) : TL_IMPORT_NONE;
	if (index == TL_IMPORT_NONE) {
		if (!APPEND(im, out->tracks, out->ntracks, tracks_cap))
			return TL_IMPORT_NONE;
		index = out->ntracks - 1;
	}
	out->tracks[index] = (tl_import_track){.kind = kind,
	                                       .scope = scope,
	                                       .name = name ? name : "",
	                                       .pid = pid,
	                                       .thread = thread,
	                                       .overflow = TL_IMPORT_NONE};
	if (st && ++st->live_tracks > out->held_tracks)
		out->held_tracks = st->live_tracks;
	return index;
}

/* A thread of exactly (tid, pid), created when new. */
static size_t thread_exact(importer *im, uint32_t tid, uint32_t pid)
{
	tl_import *out = im->out;
	if (key_printf(im, "%u/%u", (unsigned)pid, (unsigned)tid))
		return TL_IMPORT_NONE;
	uint64_t *found = map_get(&im->maps->thread_by_key, im->key, im->key_len);
	size_t index;
	if (found) {
		index = *found;
	} else {
		tl_import_thread *t = APPEND(im, out->threads, out->nthreads, threads_cap);
		if (!t)
			return TL_IMPORT_NONE;
		index = out->nthreads - 1;
		*t = (tl_import_thread){.tid = tid, .pid = pid};
		if (map_set(&im->maps->thread_by_key, &out->strings, im->key, im->key_len, index))
			im->nomem = 1;
		size_t track =
		    new_track(im, TL_TRACK_THREAD, TL_IMPORT_SCOPE_THREAD, "", pid, index);
		if (track == TL_IMPORT_NONE)
			return TL_IMPORT_NONE;
		out->threads[index].track = track;
		if (pid)
			get_process(im, pid);
	}
	if (key_printf(im, "%u", (unsigned)tid) ||
	    map_set(&im->maps->current_thread, &out->strings, im->key, im->key_len, index))
		im->nomem = 1;
	return index;
}

/* The thread tid currently is, or TL_IMPORT_NONE when tid was never seen. */
static size_t thread_current(importer *im, uint32_t tid)
{
	if (key_printf(im, "%u", (unsigned)tid))
		return TL_IMPORT_NONE;
	uint64_t *found = map_get(&im->maps->current_thread, im->key, im->key_len);
	return found ? *found : TL_IMPORT_NONE;
}

/*
 * Systrace: the thread tid within process pid (0: unknown). A thread known
 * without a process adopts pid; one known in another process is replaced
 * by a new entry (formats.md 1.2, "E with and without a pid").
 */
static size_t thread_for(importer *im, uint32_t tid, uint32_t pid)
{
	size_t cur = thread_current(im, tid);
	if (cur != TL_IMPORT_NONE) {
		tl_import_thread *t = &im->out->threads[cur];
		if (pid == 0 || t->pid == pid)
			return cur;
		if (t->pid == 0) {
			t->pid = pid;
			im->out->tracks[t->track].pid = pid;
			get_process(im, pid);
			if (key_printf(im, "%u/%u", (unsigned)pid, (unsigned)tid) ||
			    map_set(&im->maps->thread_by_key, &im->out->strings, im->key,
			            im->key_len, cur))
				im->nomem = 1;
			return cur;
		}
	}
	return thread_exact(im, tid, pid);
}

/* A track identified by the key in im->key; created with the rest. */
static size_t keyed_track(importer *im, tl_import_track_kind kind, tl_import_scope scope,
                          const char *name, size_t name_len, uint32_t pid)
{
	uint64_t *found = map_get(&im->maps->track_by_key, im->key, im->key_len);
	if (found)
		return *found;
	char *key = malloc(im->key_len + 1);
	if (!key) {
		im->nomem = 1;
		return TL_IMPORT_NONE;
	}
	memcpy(key, im->key, im->key_len + 1);
	size_t key_len = im->key_len;
	size_t track = TL_IMPORT_NONE;
	const char *copy = name_str(im, name, name_len);
	if (copy)
		track = new_track(im, kind, scope, copy, pid, TL_IMPORT_NONE);
	if (track != TL_IMPORT_NONE &&
	    map_set(&im->maps->track_by_key, &im->out->strings, key, key_len, track))
		im->nomem = 1;
	free(key);
	return track;
}

/*
 * With a sink, the keyed track just made or found (its key still in
 * im->key) is given back once empty (retire_track). Only for an atrace
 * async track: its key holds all it is (process, name or track name,
 * cookie), so one made again for a later slice is the same. A JSON or
 * Perfetto async track is named after its first slice, which a later one
 * with that id need not share: it stays.
 */
static void track_may_retire(importer *im, size_t track)
{
	stream *st = im->st;
	if (!st || track == TL_IMPORT_NONE || (track < st->track_keys_cap && st->track_keys[track]))
		return;
	size_t had = st->track_keys_cap;
	char **keys = grow_array(im, st->track_keys, &st->track_keys_cap, track + 1, sizeof *keys);
	if (!keys)
		return;
	memset(keys + had, 0, (st->track_keys_cap - had) * sizeof *keys);
	st->track_keys = keys;
	keys[track] = strndup(im->key, im->key_len);
	if (!keys[track])
		im->nomem = 1;
}

/* ------------------------------------------------------------------------ */
/* Handing items on to a sink */

/* The sink's answer: an error stops the import (the loops stop on nomem). */
static void sink_said(importer *im, int rc)
{
	if (rc && !im->st->rc) {
		im->st->rc = rc < 0 ? rc : -EIO;
		im->nomem = 1;
	}
}

/* A new slice's index: the next one (a whole import), or a free slot. */
static size_t take_slice(importer *im)
{
	tl_import *out = im->out;
	stream *st = im->st;
	size_t index = st ? index_pop(&st->free_slots) : TL_IMPORT_NONE;
	if (index == TL_IMPORT_NONE) {
		if (!APPEND(im, out->slices, out->nslices, slices_cap))
			return TL_IMPORT_NONE;
		index = out->nslices - 1;
	}
	if (!st)
		return index;
	slot_info *slots = grow_array(im, st->slots, &st->slots_cap, index + 1, sizeof *slots);
	if (!slots)
		return TL_IMPORT_NONE; /* (nomem: the import stops) */
	st->slots = slots;
	slots[index] = (slot_info){.seq = st->next_seq++,
	                           .first_arg = TL_IMPORT_NONE,
	                           .last_arg = TL_IMPORT_NONE,
	                           .state = SLOT_OPEN};
	if (index < out->nthread_times)
		out->thread_times[2 * index] = out->thread_times[2 * index + 1] = TL_IMPORT_NULL;
	if (++st->live_slices > out->held_slices)
		out->held_slices = st->live_slices;
	return index;
}

/* Slice index has left its track's stack: handed on at the next event. */
static void slice_popped(importer *im, size_t index)
{
	stream *st = im->st;
	if (st && index_push(im, &st->popped, index))
		st->slots[index].state = SLOT_POPPED;
}

static void free_slot(importer *im, size_t index)
{
	stream *st = im->st;
	if (!index_push(im, &st->free_slots, index))
		return; /* (the slot is lost, not reused) */
	st->slots[index].state = SLOT_FREE;
	st->live_slices--;
	name_release(im, im->out->slices[index].name);
	name_release(im, im->out->slices[index].cat);
}

/* A flow's reference to slice index (a flow map's value, a pending end):
 * the slot stays while one does. */
static void slice_hold(importer *im, size_t index)
{
	if (im->st && index != TL_IMPORT_NONE)
		im->st->slots[index].refs++;
}

static void slice_release(importer *im, size_t index)
{
	stream *st = im->st;
	if (!st || index == TL_IMPORT_NONE)
		return;
	if (--st->slots[index].refs == 0 && st->slots[index].state == SLOT_HANDED)
		free_slot(im, index);
}

/* Hands slice index and its args to the sink, and gives the args back. */
static void hand_slice(importer *im, size_t index)
{
	stream *st = im->st;
	slot_info *slot = &st->slots[index];
	size_t n = 0;
	for (size_t a = slot->first_arg; a != TL_IMPORT_NONE; a = st->args[a].next)
		n++;
	tl_import_sink_arg *handed =
	    grow_array(im, st->handed, &st->handed_cap, n + 1, sizeof *handed);
	if (handed) {
		st->handed = handed;
		n = 0;
		for (size_t a = slot->first_arg; a != TL_IMPORT_NONE; a = st->args[a].next)
			handed[n++] = (tl_import_sink_arg){.seq = st->args[a].seq,
			                                   .key = st->args[a].key,
			                                   .value = st->args[a].value};
		if (!st->rc)
			sink_said(im, st->sink->slice(
			                  st->sink->ctx, im->out, &im->out->slices[index],
			                  slot->seq, tl_import_slice_thread_ts(im->out, index),
			                  tl_import_slice_thread_dur(im->out, index), handed, n));
		im->out->streamed++;
	}
	for (size_t a = slot->first_arg, next; a != TL_IMPORT_NONE; a = next) {
		next = st->args[a].next;
		if (st->args[a].value.type == TL_JSON_STRING)
			free((char *)st->args[a].value.s);
		name_release(im, st->args[a].key);
		st->args[a].next = st->free_arg;
		st->free_arg = a;
		st->live_args--;
	}
	slot->first_arg = slot->last_arg = TL_IMPORT_NONE;
	slot->state = SLOT_HANDED;
}

/* An async track whose slices have all been handed on is given back, its
 * key with it: a cookie or id seen again later makes a new one. */
static void retire_track(importer *im, size_t track)
{
	stream *st = im->st;
	tl_import_track *t = &im->out->tracks[track];
	if (track >= st->track_keys_cap || !st->track_keys[track] || t->depth)
		return;
	char *key = st->track_keys[track];
	map_delete(&im->maps->track_by_key, key, strlen(key));
	free(key);
	st->track_keys[track] = NULL;
	name_release(im, t->name);
	free(t->stack);
	*t = (tl_import_track){.kind = TL_TRACK_ASYNC,
	                       .name = "",
	                       .overflow = TL_IMPORT_NONE,
	                       .thread = TL_IMPORT_NONE};
	if (index_push(im, &st->free_tracks, track))
		st->live_tracks--;
}

/* Hands on the slices popped since the last call: at the start of each
 * event, when no index of them is held any more. */
static void stream_flush(importer *im)
{
	stream *st = im->st;
	if (!st || !st->popped.n)
		return;
	const index_list *q = &st->popped;
	for (size_t i = 0; i < q->n; i++)
		hand_slice(im, q->at[i]);
	for (size_t i = 0; i < q->n; i++)
		retire_track(im, im->out->slices[q->at[i]].track);
	for (size_t i = 0; i < q->n; i++) {
		if (st->slots[q->at[i]].refs == 0)
			free_slot(im, q->at[i]);
	}
	st->popped.n = 0;
}

/* A sink's arg: in a list of its slice, its string value copied. */
static void stream_add_arg(importer *im, size_t slice, const char *key, const tl_json_value *v)
{
	stream *st = im->st;
	size_t a = st->free_arg;
	if (a != TL_IMPORT_NONE) {
		st->free_arg = st->args[a].next;
	} else {
		stream_arg *grown =
		    grow_array(im, st->args, &st->args_cap, st->nargs + 1, sizeof *grown);
		if (!grown)
			return;
		st->args = grown;
		a = st->nargs++;
	}
	stream_arg *arg = &st->args[a];
	*arg = (stream_arg){
	    .seq = st->next_arg_seq++, .key = key, .value = *v, .next = TL_IMPORT_NONE};
	if (arg->value.type == TL_JSON_BOOL)
		arg->value.type = TL_JSON_INT;
	if (arg->value.type == TL_JSON_STRING) {
		arg->value.s = strdup(v->s ? v->s : "");
		if (!arg->value.s) {
			arg->value.type = TL_JSON_INT;
			im->nomem = 1;
		}
	}
	slot_info *slot = &st->slots[slice];
	if (slot->last_arg == TL_IMPORT_NONE)
		slot->first_arg = a;
	else
		st->args[slot->last_arg].next = a;
	slot->last_arg = a;
	if (++st->live_args > im->out->held_args)
		im->out->held_args = st->live_args;
}

/* Ends the stream: what is still open is handed on as it stands. */
static void stream_end(importer *im)
{
	tl_import *out = im->out;
	for (size_t i = 0; i < out->ntracks && !im->nomem; i++) {
		tl_import_track *t = &out->tracks[i];
		for (size_t d = 0; d < t->depth; d++)
			slice_popped(im, t->stack[d]);
		t->depth = 0;
	}
	stream_flush(im);
}

/* Gives back what a sink's import held; the import keeps no item. */
static void stream_free(importer *im)
{
	stream *st = im->st;
	tl_import *out = im->out;
	for (size_t i = 0; i < out->nslices && i < st->slots_cap; i++) {
		slot_info *slot = &st->slots[i];
		if (slot->state == SLOT_FREE || slot->state == SLOT_HANDED)
			continue;
		for (size_t a = slot->first_arg; a != TL_IMPORT_NONE; a = st->args[a].next) {
			if (st->args[a].value.type == TL_JSON_STRING)
				free((char *)st->args[a].value.s);
		}
	}
	for (size_t i = 0; i < st->track_keys_cap; i++)
		free(st->track_keys[i]);
	free(st->track_keys);
	free(st->slots);
	free(st->free_slots.at);
	free(st->popped.at);
	free(st->args);
	free(st->free_tracks.at);
	free(st->handed);
	free(out->slices);
	out->slices = NULL;
	out->nslices = 0;
	free(out->thread_times);
	out->thread_times = NULL;
	out->nthread_times = 0;
	im->st = NULL;
}

/* ------------------------------------------------------------------------ */
/* Slices on tracks */

static int64_t slice_end(const tl_import_slice *s)
{
	return tl_add_ns(s->ts, s->dur);
}

static void close_ended(importer *im, size_t track, int64_t ts, enum close_mode mode)
{
	tl_import_track *t = &im->out->tracks[track];
	while (t->depth) {
		const tl_import_slice *top = &im->out->slices[t->stack[t->depth - 1]];
		if (!top->complete)
			return;
		int64_t end = slice_end(top);
		int ended = end < ts;
		if (end == ts && mode != CLOSE_FOR_FLOW)
			ended = top->dur > 0 || mode == CLOSE_FOR_BEGIN;
		if (!ended)
			return;
		t->depth--;
		slice_popped(im, t->stack[t->depth]);
	}
}

static int push(importer *im, size_t track, size_t slice)
{
	tl_import_track *t = &im->out->tracks[track];
	if (t->depth == t->stack_cap) {
		size_t cap = t->stack_cap ? t->stack_cap * 2 : 8;
		size_t *grown = realloc(t->stack, cap * sizeof *grown);
		if (!grown) {
			im->nomem = 1;
			return -1;
		}
		t->stack = grown;
		t->stack_cap = cap;
	}
	t->stack[t->depth++] = slice;
	return 0;
}

static void remove_from_stack(tl_import_track *t, size_t pos)
{
	memmove(&t->stack[pos], &t->stack[pos + 1], (t->depth - pos - 1) * sizeof *t->stack);
	t->depth--;
}

static void add_flow(importer *im, size_t out_slice, size_t in_slice)
{
	stream *st = im->st;
	if (st) {
		if (!st->rc && st->sink->flow)
			sink_said(
			    im, st->sink->flow(st->sink->ctx, im->out, &im->out->slices[out_slice],
			                       st->slots[out_slice].seq, &im->out->slices[in_slice],
			                       st->slots[in_slice].seq, st->next_flow_seq));
		st->next_flow_seq++;
		im->out->streamed++;
		return;
	}
	tl_import_flow *f = APPEND(im, im->out->flows, im->out->nflows, flows_cap);
	if (f)
		*f = (tl_import_flow){out_slice, in_slice};
}

/* Points a flow map's entry (key in im->key) at slice, or removes it
 * (TL_IMPORT_NONE: a whole import keeps the key, which reads the same). */
static void set_flow_source(importer *im, strmap *m, size_t slice)
{
	uint64_t *had = map_get(m, im->key, im->key_len);
	size_t old = had ? *had : TL_IMPORT_NONE;
	if (slice == TL_IMPORT_NONE && im->st)
		map_delete(m, im->key, im->key_len);
	else if (had && slice == TL_IMPORT_NONE)
		*had = slice;
	else if (map_set(m, &im->out->strings, im->key, im->key_len, slice))
		im->nomem = 1;
	slice_hold(im, slice);
	slice_release(im, old);
}

/* A v1 flow end from slice out, to wait for the next slice of thread. */
static void add_pending_flow(importer *im, size_t thread, size_t out)
{
	if (thread >= im->pending_of_cap) {
		size_t had = im->pending_of_cap;
		pending_list *lists =
		    grow_array(im, im->pending_of, &im->pending_of_cap, thread + 1, sizeof *lists);
		if (!lists)
			return;
		for (size_t i = had; i < im->pending_of_cap; i++)
			lists[i] = (pending_list){TL_IMPORT_NONE, TL_IMPORT_NONE};
		im->pending_of = lists;
	}
	size_t e = im->free_pending;
	if (e != TL_IMPORT_NONE) {
		im->free_pending = im->pending[e].next;
	} else {
		if (!APPEND(im, im->pending, im->npending, pending_cap))
			return;
		e = im->npending - 1;
	}
	im->pending[e] = (pending_flow){out, TL_IMPORT_NONE};
	pending_list *l = &im->pending_of[thread];
	if (l->last == TL_IMPORT_NONE)
		l->first = e;
	else
		im->pending[l->last].next = e;
	l->last = e;
	im->waiting++;
	slice_hold(im, out);
}

/* v1 flow ends waiting for the next slice of this thread. */
static void bind_pending_flows(importer *im, size_t thread, size_t slice)
{
	if (thread >= im->pending_of_cap)
		return;
	pending_list *l = &im->pending_of[thread];
	for (size_t e = l->first, next; e != TL_IMPORT_NONE; e = next) {
		next = im->pending[e].next;
		add_flow(im, im->pending[e].out, slice);
		slice_release(im, im->pending[e].out);
		im->pending[e].next = im->free_pending;
		im->free_pending = e;
		im->waiting--;
	}
	*l = (pending_list){TL_IMPORT_NONE, TL_IMPORT_NONE};
}

typedef struct slice_spec {
	tl_import_kind kind;
	int64_t ts;
	int64_t dur;      /* -1: open until an end */
	const char *name; /* name[0..name_len), NULL: ""; copied by begin_slice */
	size_t name_len;
	const char *cat; /* NULL: none */
	enum close_mode mode;
} slice_spec;

/*
 * Begins a slice on track (a complete one when dur >= 0). A complete slice
 * that would end after its complete parent goes to the thread's overflow
 * tracks. Returns the slice index or TL_IMPORT_NONE (dropped).
 */
static size_t begin_slice(importer *im, size_t track, const slice_spec *spec)
{
	tl_import *out = im->out;
	for (;;) {
		close_ended(im, track, spec->ts, spec->mode);
		tl_import_track *t = &out->tracks[track];
		if (spec->dur < 0 || !t->depth || t->thread == TL_IMPORT_NONE)
			break;
		const tl_import_slice *parent = &out->slices[t->stack[t->depth - 1]];
		if (!parent->complete || slice_end(parent) >= tl_add_ns(spec->ts, spec->dur))
			break;
		if (t->kind == TL_TRACK_THREAD)
			stat_add(im, TL_STAT_SLICE_SPILL_OVERLAPPING);
		if (t->overflow == TL_IMPORT_NONE) {
			size_t o = new_track(im, TL_TRACK_OVERFLOW, TL_IMPORT_SCOPE_THREAD,
			                     "overflow", t->pid, t->thread);
			if (o == TL_IMPORT_NONE)
				return TL_IMPORT_NONE;
			out->tracks[track].overflow = o;
		}
		track = out->tracks[track].overflow;
	}
	tl_import_track *t = &out->tracks[track];
	if (t->depth >= TL_IMPORT_MAX_DEPTH) {
		stat_add(im, TL_STAT_SLICE_MAX_DEPTH_EXCEEDED);
		return TL_IMPORT_NONE;
	}
	_Static_assert(TL_IMPORT_MAX_DEPTH <= UINT16_MAX, "a depth fits a slice's 16 bits");
	if (track > UINT32_MAX) {
		im->nomem = 1; /* more tracks than an import holds */
		return TL_IMPORT_NONE;
	}
	const char *name = spec->name ? name_str(im, spec->name, spec->name_len) : "";
	const char *cat = spec->cat ? name_cstr(im, spec->cat) : NULL;
	size_t index = name && (cat || !spec->cat) ? take_slice(im) : TL_IMPORT_NONE;
	if (index == TL_IMPORT_NONE) {
		name_release(im, name);
		name_release(im, cat);
		return TL_IMPORT_NONE;
	}
	out->slices[index] = (tl_import_slice){.kind = (uint8_t)spec->kind,
	                                       .ts = spec->ts,
	                                       .dur = spec->dur,
	                                       .name = name,
	                                       .cat = cat,
	                                       .track = (uint32_t)track,
	                                       .depth = (uint16_t)out->tracks[track].depth,
	                                       .complete = spec->dur >= 0};
	if (push(im, track, index))
		return TL_IMPORT_NONE;
	size_t thread = out->tracks[track].thread;
	if (thread != TL_IMPORT_NONE && im->waiting)
		bind_pending_flows(im, thread, index);
	return index;
}

/* Sets slice s's thread timestamp (which 0) or thread duration (1). */
static void set_thread_time(importer *im, size_t s, int which, int64_t value)
{
	tl_import *out = im->out;
	if (s >= out->nthread_times) {
		size_t n = out->nthread_times ? out->nthread_times : 64;
		while (n <= s)
			n *= 2;
		int64_t *grown = realloc(out->thread_times, n * 2 * sizeof *grown);
		if (!grown) {
			im->nomem = 1;
			return;
		}
		for (size_t i = 2 * out->nthread_times; i < 2 * n; i++)
			grown[i] = TL_IMPORT_NULL;
		out->thread_times = grown;
		out->nthread_times = n;
	}
	out->thread_times[2 * s + (size_t)which] = value;
}

/*
 * Ends the innermost open (not complete) slice on track whose name and cat
 * match (NULL matches anything). Returns it, or TL_IMPORT_NONE.
 */
static size_t end_slice(importer *im, size_t track, int64_t ts, const char *name, const char *cat)
{
	close_ended(im, track, ts, CLOSE_FOR_BEGIN);
	tl_import_track *t = &im->out->tracks[track];
	for (size_t pos = t->depth; pos-- > 0;) {
		tl_import_slice *s = &im->out->slices[t->stack[pos]];
		if (s->complete)
			continue;
		if (name && strcmp(name, s->name) != 0)
			continue;
		if (cat && (!s->cat || strcmp(cat, s->cat) != 0))
			continue;
		size_t index = t->stack[pos];
		s->dur = tl_span_ns(s->ts, ts);
		s->complete = 1;
		remove_from_stack(t, pos);
		slice_popped(im, index);
		return index;
	}
	return TL_IMPORT_NONE;
}

/* The innermost slice enclosing ts on the thread's track, or NONE. */
static size_t enclosing_slice(importer *im, size_t thread, int64_t ts)
{
	size_t track = im->out->threads[thread].track;
	close_ended(im, track, ts, CLOSE_FOR_FLOW);
	const tl_import_track *t = &im->out->tracks[track];
	return t->depth ? t->stack[t->depth - 1] : TL_IMPORT_NONE;
}

static void add_arg(importer *im, size_t slice, const char *key, const tl_json_value *v)
{
	if (im->st) {
		stream_add_arg(im, slice, key, v);
		return;
	}
	tl_import_arg *a = APPEND(im, im->out->args, im->out->nargs, args_cap);
	if (!a)
		return;
	a->slice = slice;
	a->key = key;
	a->value = *v;
	if (a->value.type == TL_JSON_BOOL)
		a->value.type = TL_JSON_INT;
}

/* A counter sample on track (a TL_TRACK_COUNTER one), or nothing when
 * the track could not be made. */
static void add_counter(importer *im, int64_t ts, double value, size_t track)
{
	if (track == TL_IMPORT_NONE)
		return;
	tl_import_counter c = {ts, value, track};
	stream *st = im->st;
	if (st) {
		if (!st->rc && st->sink->counter)
			sink_said(im, st->sink->counter(st->sink->ctx, im->out, &c,
			                                st->next_counter_seq));
		st->next_counter_seq++;
		im->out->streamed++;
		return;
	}
	tl_import_counter *kept = APPEND(im, im->out->counters, im->out->ncounters, counters_cap);
	if (kept)
		*kept = c;
}

/* ------------------------------------------------------------------------ */
/* Systrace markers */

/* Names a thread after a line's task; the copy is made when it changes,
 * not once per line. */
static void set_thread_name(importer *im, size_t thread, tl_str_view task)
{
	const char *name = im->out->threads[thread].name;
	if (name && strlen(name) == task.len && memcmp(name, task.ptr, task.len) == 0)
		return;
	im->out->threads[thread].name = copy_str(im, task.ptr, task.len);
}

/* Keeps the earliest line that could not be read (lines are imported in
 * time order, not file order). */
static void note_failure(tl_import *out, size_t line_no, const char *text, size_t len)
{
	if (!line_no || (out->first_failure_line && out->first_failure_line < line_no))
		return;
	out->first_failure_line = line_no;
	size_t n =
	    len < sizeof out->first_failure_text - 1 ? len : sizeof out->first_failure_text - 1;
	memcpy(out->first_failure_text, text, n);
	out->first_failure_text[n] = '\0';
}

/* A marker line whose payload does not parse. */
static void marker_failed(importer *im, const tl_ftrace_line *line)
{
	stat_add(im, TL_STAT_SYSTRACE_PARSE_FAILURE);
	note_failure(im->out, line->line_no, line->line.ptr, line->line.len);
}

/* What a text reader counted: lines that did not tokenize, the last one
 * without '\n', and the clock. */
static void add_reader_counts(tl_import *out, uint64_t failures, size_t first_failure_line,
                              const char *first_failure_text, uint64_t unterminated,
                              size_t unterminated_line, tl_trace_clock clock,
                              const tl_clock_values *values)
{
	out->stats[TL_STAT_SYSTRACE_PARSE_FAILURE] += failures;
	out->stats[TL_STAT_SYSTRACE_UNTERMINATED_LINE] += unterminated;
	if (unterminated_line && !out->unterminated_line)
		out->unterminated_line = unterminated_line;
	if (failures)
		note_failure(out, first_failure_line, first_failure_text,
		             strlen(first_failure_text));
	if (!out->clock)
		out->clock = clock;
	if (!out->clock_values.known)
		out->clock_values = *values;
}

/* A trace_event_clock_sync marker: kept, the writer's process resolved at
 * the end (importer_finish). */
static void keep_clock_sync(importer *im, const tl_ftrace_line *line, size_t thread)
{
	int64_t value;
	tl_clock_sync_kind kind =
	    tl_atrace_parse_clock_sync(line->text.ptr, line->text.len, &value);
	if (kind == TL_CLOCK_SYNC_NONE)
		return;
	tl_import_clock_sync *c =
	    APPEND(im, im->out->clock_syncs, im->out->nclock_syncs, clock_syncs_cap);
	if (c)
		*c = (tl_import_clock_sync){.kind = kind,
		                            .ts = line->ts_ns,
		                            .value_ns = value,
		                            .tid = line->tid,
		                            .pid = line->tgid,
		                            .line = line->line_no,
		                            .thread = thread};
}

static void import_marker(importer *im, const tl_ftrace_line *line)
{
	stream_flush(im);
	tl_atrace_point p;
	tl_atrace_result r = tl_atrace_parse(line->text.ptr, line->text.len, &p);
	size_t thread =
	    line->tgid ? thread_for(im, line->tid, line->tgid) : thread_current(im, line->tid);
	if (thread == TL_IMPORT_NONE && !im->nomem)
		thread = thread_exact(im, line->tid, 0);
	if (thread == TL_IMPORT_NONE)
		return;
	if (line->task.len && !(line->task.len == 5 && memcmp(line->task.ptr, "<...>", 5) == 0))
		set_thread_name(im, thread, line->task);
	if (r == TL_ATRACE_FAIL) {
		marker_failed(im, line);
		return;
	}
	if (r == TL_ATRACE_UNSUPPORTED) {
		stat_add(im, TL_STAT_SYSTRACE_MARKER_UNSUPPORTED);
		keep_clock_sync(im, line, thread);
		return;
	}

	slice_spec spec = {.ts = line->ts_ns, .dur = -1, .mode = CLOSE_FOR_BEGIN};
	size_t track;
	switch (p.phase) {
	case 'B':
		thread = thread_for(im, line->tid, p.tgid);
		if (thread == TL_IMPORT_NONE)
			return;
		spec.kind = TL_IMPORT_SLICE;
		spec.name = p.name.ptr;
		spec.name_len = p.name.len;
		begin_slice(im, im->out->threads[thread].track, &spec);
		return;
	case 'E':
		if (p.tgid)
			thread = thread_for(im, line->tid, p.tgid);
		if (thread == TL_IMPORT_NONE)
			return;
		if (end_slice(im, im->out->threads[thread].track, line->ts_ns, NULL, NULL) ==
		    TL_IMPORT_NONE)
			stat_add(im, TL_STAT_SLICE_END_UNMATCHED);
		return;
	case 'I':
		thread = thread_for(im, line->tid, p.tgid);
		if (thread == TL_IMPORT_NONE)
			return;
		spec.kind = TL_IMPORT_INSTANT;
		spec.dur = 0;
		spec.mode = CLOSE_FOR_SCOPED;
		spec.name = p.name.ptr;
		spec.name_len = p.name.len;
		begin_slice(im, im->out->threads[thread].track, &spec);
		return;
	case 'C': {
		if (key_printf(im, "C|%u|%.*s", (unsigned)p.tgid, (int)p.name.len, p.name.ptr))
			return;
		track = keyed_track(im, TL_TRACK_COUNTER, TL_IMPORT_SCOPE_PROCESS, p.name.ptr,
		                    p.name.len, p.tgid);
		add_counter(im, line->ts_ns, (double)p.value, track);
		get_process(im, p.tgid);
		return;
	}
	case 'N':
		if (key_printf(im, "N|%u|%.*s", (unsigned)p.tgid, (int)p.track.len, p.track.ptr))
			return;
		track = keyed_track(im, TL_TRACK_INSTANT, TL_IMPORT_SCOPE_PROCESS, p.track.ptr,
		                    p.track.len, p.tgid);
		if (track == TL_IMPORT_NONE)
			return;
		spec.kind = TL_IMPORT_INSTANT;
		spec.dur = 0;
		spec.mode = CLOSE_FOR_SCOPED;
		spec.name = p.name.ptr;
		spec.name_len = p.name.len;
		begin_slice(im, track, &spec);
		return;
	case 'S':
	case 'F':
	case 'G':
	case 'H': {
		int legacy = p.phase == 'S' || p.phase == 'F';
		tl_str_view label = legacy ? p.name : p.track;
		if (key_printf(im, "%c|%u|%.*s|%lld", legacy ? 'S' : 'G', (unsigned)p.tgid,
		               (int)label.len, label.ptr, (long long)p.cookie))
			return;
		track = keyed_track(im, TL_TRACK_ASYNC, TL_IMPORT_SCOPE_PROCESS, label.ptr,
		                    label.len, p.tgid);
		if (track == TL_IMPORT_NONE)
			return;
		track_may_retire(im, track);
		im->out->tracks[track].has_cookie = 1;
		im->out->tracks[track].cookie = p.cookie;
		if (p.phase == 'F' || p.phase == 'H') {
			if (end_slice(im, track, line->ts_ns, NULL, NULL) == TL_IMPORT_NONE) {
				stat_add(im, TL_STAT_ASYNC_END_UNMATCHED);
				if (im->st) /* (a track made for an end with no begin) */
					retire_track(im, track);
			}
			return;
		}
		/* S: unnestable, a second begin with the same key is ignored. */
		if (legacy && im->out->tracks[track].depth)
			return;
		spec.kind = TL_IMPORT_ASYNC;
		spec.name = p.name.ptr;
		spec.name_len = p.name.len;
		begin_slice(im, track, &spec);
		get_process(im, p.tgid);
		return;
	}
	default:
		marker_failed(im, line);
		return;
	}
}

/* ------------------------------------------------------------------------ */
/* JSON events */

/* A synthetic id for a string pid or tid, counting down from 2^32 - 1. */
static uint32_t synthetic_id(importer *im, char what, const char *name)
{
	if (key_printf(im, "%c%s", what, name))
		return 0;
	uint64_t *found = map_get(&im->maps->synthetic_ids, im->key, im->key_len);
	if (found)
		return (uint32_t)*found;
	uint32_t id = im->next_synthetic_id--;
	if (map_set(&im->maps->synthetic_ids, &im->out->strings, im->key, im->key_len, id))
		im->nomem = 1;
	return id;
}

static uint32_t json_pid(importer *im, const tl_json_event *e)
{
	if (!e->pid_name)
		return e->pid;
	uint32_t pid = synthetic_id(im, 'p', e->pid_name);
	size_t proc = get_process(im, pid);
	if (proc != TL_IMPORT_NONE && !im->out->processes[proc].name)
		im->out->processes[proc].name = copy_cstr(im, e->pid_name);
	return pid;
}

static size_t json_thread(importer *im, const tl_json_event *e, uint32_t pid)
{
	uint32_t tid = e->tid;
	if (e->tid_name)
		tid = synthetic_id(im, 't', e->tid_name);
	if (tid == 0)
		tid = pid;
	size_t thread = thread_exact(im, tid, pid);
	if (thread != TL_IMPORT_NONE && e->tid_name && !im->out->threads[thread].name)
		im->out->threads[thread].name = copy_cstr(im, e->tid_name);
	return thread;
}

/* Stores args[0..n) on slice as "args.<key>". */
static void import_args(importer *im, const tl_json_arg *args, size_t n, size_t slice)
{
	for (size_t i = 0; i < n; i++) {
		const tl_json_arg *a = &args[i];
		if (a->value.type == TL_JSON_NULL || a->value.type == TL_JSON_OBJECT ||
		    a->value.type == TL_JSON_ARRAY)
			continue;
		if (key_printf(im, "args.%s", a->key))
			return;
		const char *key = name_str(im, im->key, im->key_len);
		tl_json_value v = a->value;
		if (v.type == TL_JSON_STRING && !im->st) /* (a sink's args own theirs) */
			v.s = copy_cstr(im, v.s);
		if (key)
			add_arg(im, slice, key, &v);
	}
}

static void json_args(importer *im, const tl_json_trace *json, const tl_json_event *e, size_t slice)
{
	if (e->nargs)
		import_args(im, &json->args[e->first_arg], e->nargs, slice);
}

/* A flow id: an integer, or a string of hex digits ("0x" allowed). */
static int flow_id(const tl_json_value *v, uint64_t *id)
{
	if (v->type == TL_JSON_INT) {
		*id = (uint64_t)v->i;
		return 1;
	}
	if (v->type != TL_JSON_STRING)
		return 0;
	const char *s = v->s;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (!*s)
		return 0;
	uint64_t r = 0;
	for (; *s; s++) {
		int h = (*s >= '0' && *s <= '9')   ? *s - '0'
		        : (*s >= 'a' && *s <= 'f') ? *s - 'a' + 10
		        : (*s >= 'A' && *s <= 'F') ? *s - 'A' + 10
		                                   : -1;
		if (h < 0 || r >> 60)
			return 0; /* not hex, or beyond 64 bits */
		r = r << 4 | (uint64_t)h;
	}
	*id = r;
	return 1;
}

/* Flow v2: bind_id with flow_in / flow_out on a slice event. */
static void json_flow_v2(importer *im, const tl_json_event *e, size_t slice)
{
	if (e->bind_id.type == TL_JSON_NONE)
		return;
	uint64_t id;
	if (!flow_id(&e->bind_id, &id)) {
		stat_add(im, TL_STAT_FLOW_INVALID_ID);
		return;
	}
	if (!e->flow_in && !e->flow_out) {
		stat_add(im, TL_STAT_FLOW_WITHOUT_DIRECTION);
		return;
	}
	if (slice == TL_IMPORT_NONE || key_printf(im, "%llx", (unsigned long long)id))
		return;
	strmap *m = &im->maps->flow_v2;
	if (e->flow_in) {
		uint64_t *from = map_get(m, im->key, im->key_len);
		if (from && *from != TL_IMPORT_NONE)
			add_flow(im, *from, slice);
		else if (!e->flow_out)
			stat_add(im, TL_STAT_FLOW_END_WITHOUT_START);
		else
			stat_add(im, TL_STAT_FLOW_STEP_WITHOUT_START);
	}
	if (e->flow_out)
		set_flow_source(im, m, slice);
}

/* Flow v1: s / t / f keyed by (cat, name, id). */
static void json_flow_v1(importer *im, const tl_json_event *e, size_t thread)
{
	uint64_t id;
	if (e->id_scope == TL_JSON_ID_NONE || !flow_id(&e->id, &id)) {
		stat_add(im, TL_STAT_FLOW_INVALID_ID);
		return;
	}
	if (key_printf(im, "%s\x1f%s\x1f%llx", e->cat ? e->cat : "", e->name ? e->name : "",
	               (unsigned long long)id))
		return;
	strmap *m = &im->maps->flow_v1;
	uint64_t *from = map_get(m, im->key, im->key_len);
	size_t prev = from ? *from : TL_IMPORT_NONE;
	if (e->ph != 's' && prev == TL_IMPORT_NONE) {
		stat_add(im, e->ph == 't' ? TL_STAT_FLOW_STEP_WITHOUT_START
		                          : TL_STAT_FLOW_END_WITHOUT_START);
		return;
	}
	if (e->ph == 'f' && !e->bp_enclosing) {
		add_pending_flow(im, thread, prev);
		set_flow_source(im, m, TL_IMPORT_NONE);
		return;
	}
	/* enclosing_slice reuses im->key: keep the flow key apart. */
	char *key = malloc(im->key_len + 1);
	if (!key) {
		im->nomem = 1;
		return;
	}
	size_t key_len = im->key_len;
	memcpy(key, im->key, key_len + 1);
	size_t slice = enclosing_slice(im, thread, e->ts);
	if (slice == TL_IMPORT_NONE) {
		stat_add(im, TL_STAT_FLOW_NO_ENCLOSING_SLICE);
	} else {
		if (prev != TL_IMPORT_NONE)
			add_flow(im, prev, slice);
		size_t next = e->ph == 'f' ? TL_IMPORT_NONE : slice;
		if (key_len < im->key_cap) { /* the flow key back in im->key */
			memcpy(im->key, key, key_len + 1);
			im->key_len = key_len;
			set_flow_source(im, m, next);
		}
	}
	free(key);
}

static void json_counter(importer *im, const tl_json_trace *json, const tl_json_event *e,
                         uint32_t pid)
{
	for (size_t i = 0; i < e->nargs; i++) {
		const tl_json_arg *a = &json->args[e->first_arg + i];
		if (!a->top_level)
			continue;
		double value;
		if (a->value.type == TL_JSON_INT)
			value = (double)a->value.i;
		else if (a->value.type == TL_JSON_DOUBLE)
			value = a->value.d;
		else if (a->value.type != TL_JSON_STRING ||
		         !tl_json_parse_double(a->value.s, &value) || !isfinite(value)) {
			/* (a string "inf" or "nan" too: no format written holds one) */
			stat_add(im, TL_STAT_JSON_COUNTER_INVALID_VALUE);
			continue;
		}
		const char *name = e->name ? e->name : "";
		int rc = e->id_scope == TL_JSON_ID_PLAIN && e->id.type == TL_JSON_STRING
		             ? key_printf(im, "%s id: %s %s", name, e->id.s, a->key)
		             : key_printf(im, "%s %s", name, a->key);
		if (rc)
			return;
		char *track_name = malloc(im->key_len + 1);
		if (!track_name) {
			im->nomem = 1;
			return;
		}
		size_t len = im->key_len;
		memcpy(track_name, im->key, len + 1);
		size_t track = TL_IMPORT_NONE;
		if (!key_printf(im, "C|%u|%s", (unsigned)pid, track_name))
			track = keyed_track(im, TL_TRACK_COUNTER, TL_IMPORT_SCOPE_PROCESS,
			                    track_name, len, pid);
		free(track_name);
		add_counter(im, e->ts, value, track);
	}
}

static void json_async(importer *im, const tl_json_trace *json, const tl_json_event *e,
                       uint32_t pid)
{
	if (!(e->has & TL_JSON_HAS_PID) || e->id_scope == TL_JSON_ID_NONE ||
	    (e->id.type != TL_JSON_INT && e->id.type != TL_JSON_STRING)) {
		stat_add(im, TL_STAT_JSON_ASYNC_MISSING_ID);
		return;
	}
	int local = e->id_scope == TL_JSON_ID_LOCAL;
	char id_text[32];
	const char *id = e->id.s;
	if (e->id.type == TL_JSON_INT) {
		snprintf(id_text, sizeof id_text, "%lld", (long long)e->id.i);
		id = id_text;
	}
	int rc = local ? key_printf(im, "L|%u|%s|%c%s", (unsigned)pid, e->cat ? e->cat : "",
	                            e->id.type == TL_JSON_INT ? 'i' : 's', id)
	               : key_printf(im, "J|%s|%c%s", e->cat ? e->cat : "",
	                            e->id.type == TL_JSON_INT ? 'i' : 's', id);
	if (rc)
		return;
	const char *name = e->name ? e->name : "";
	size_t track = keyed_track(im, TL_TRACK_ASYNC,
	                           local ? TL_IMPORT_SCOPE_PROCESS : TL_IMPORT_SCOPE_GLOBAL, name,
	                           strlen(name), local ? pid : 0);
	if (track == TL_IMPORT_NONE)
		return;
	if (e->ph == 'e') {
		size_t s = end_slice(im, track, e->ts, e->name, NULL);
		if (s == TL_IMPORT_NONE)
			stat_add(im, TL_STAT_ASYNC_END_UNMATCHED);
		else
			json_args(im, json, e, s);
		return;
	}
	slice_spec spec = {.kind = e->ph == 'n' ? TL_IMPORT_INSTANT : TL_IMPORT_ASYNC,
	                   .ts = e->ts,
	                   .dur = e->ph == 'n' ? 0 : -1,
	                   .name = name,
	                   .name_len = strlen(name),
	                   .cat = e->cat,
	                   .mode = e->ph == 'n' ? CLOSE_FOR_SCOPED : CLOSE_FOR_BEGIN};
	size_t s = begin_slice(im, track, &spec);
	if (s == TL_IMPORT_NONE)
		return;
	json_args(im, json, e, s);
	json_flow_v2(im, e, s);
}

static void json_instant(importer *im, const tl_json_trace *json, const tl_json_event *e,
                         uint32_t pid)
{
	size_t track;
	if (e->scope == 'g') {
		if (key_printf(im, "I|global"))
			return;
		track = keyed_track(im, TL_TRACK_INSTANT, TL_IMPORT_SCOPE_GLOBAL, "", 0, 0);
	} else if (e->scope == 'p') {
		if (key_printf(im, "I|%u", (unsigned)pid))
			return;
		track = keyed_track(im, TL_TRACK_INSTANT, TL_IMPORT_SCOPE_PROCESS, "", 0, pid);
		get_process(im, pid);
	} else {
		if (!(e->has & TL_JSON_HAS_TID)) {
			stat_add(im, TL_STAT_JSON_INSTANT_MISSING_TID);
			return;
		}
		size_t thread = json_thread(im, e, pid);
		track = thread == TL_IMPORT_NONE ? TL_IMPORT_NONE : im->out->threads[thread].track;
	}
	if (track == TL_IMPORT_NONE)
		return;
	slice_spec spec = {.kind = TL_IMPORT_INSTANT,
	                   .ts = e->ts,
	                   .dur = 0,
	                   .name = e->name,
	                   .name_len = e->name ? strlen(e->name) : 0,
	                   .cat = e->cat,
	                   .mode = CLOSE_FOR_SCOPED};
	size_t s = begin_slice(im, track, &spec);
	if (s != TL_IMPORT_NONE)
		json_args(im, json, e, s);
}

static void import_json_event(importer *im, const tl_json_trace *json, const tl_json_event *e)
{
	stream_flush(im);
	uint32_t pid = json_pid(im, e);
	size_t thread, s;
	slice_spec spec = {.ts = e->ts, .name = e->name, .cat = e->cat};

	switch (e->ph) {
	case 'B':
	case 'X':
		if (e->ph == 'X' && !(e->has & TL_JSON_HAS_DUR)) {
			stat_add(im, TL_STAT_JSON_COMPLETE_MISSING_DUR);
			return;
		}
		if (e->ph == 'X' && e->dur < 0) {
			stat_add(im, TL_STAT_JSON_COMPLETE_NEGATIVE_DUR);
			return;
		}
		thread = json_thread(im, e, pid);
		if (thread == TL_IMPORT_NONE)
			return;
		spec.kind = TL_IMPORT_SLICE;
		spec.dur = e->ph == 'X' ? e->dur : -1;
		spec.mode = e->ph == 'X' ? CLOSE_FOR_SCOPED : CLOSE_FOR_BEGIN;
		spec.name_len = e->name ? strlen(e->name) : 0;
		s = begin_slice(im, im->out->threads[thread].track, &spec);
		if (s == TL_IMPORT_NONE)
			return;
		if (e->has & TL_JSON_HAS_TTS)
			set_thread_time(im, s, 0, e->tts);
		if (e->ph == 'X' && (e->has & TL_JSON_HAS_TDUR))
			set_thread_time(im, s, 1, e->tdur);
		json_args(im, json, e, s);
		json_flow_v2(im, e, s);
		return;
	case 'E':
		thread = json_thread(im, e, pid);
		if (thread == TL_IMPORT_NONE)
			return;
		s = end_slice(im, im->out->threads[thread].track, e->ts, e->name, e->cat);
		if (s == TL_IMPORT_NONE) {
			stat_add(im, TL_STAT_SLICE_END_UNMATCHED);
			return;
		}
		if ((e->has & TL_JSON_HAS_TTS) &&
		    tl_import_slice_thread_ts(im->out, s) != TL_IMPORT_NULL)
			set_thread_time(im, s, 1, e->tts - tl_import_slice_thread_ts(im->out, s));
		json_args(im, json, e, s);
		return;
	case 'i':
	case 'I':
	case 'R':
		json_instant(im, json, e, pid);
		return;
	case 'C':
		get_process(im, pid);
		json_counter(im, json, e, pid);
		return;
	case 'b':
	case 'e':
	case 'n':
		json_async(im, json, e, pid);
		return;
	case 's':
	case 't':
	case 'f':
		thread = json_thread(im, e, pid);
		if (thread != TL_IMPORT_NONE)
			json_flow_v1(im, e, thread);
		return;
	default:
		stat_add(im, TL_STAT_JSON_PHASE_IGNORED);
		return;
	}
}

static const tl_json_arg *find_arg(const tl_json_trace *json, const tl_json_event *e,
                                   const char *key)
{
	for (size_t i = 0; i < e->nargs; i++) {
		const tl_json_arg *a = &json->args[e->first_arg + i];
		if (a->top_level && strcmp(a->key, key) == 0)
			return a;
	}
	return NULL;
}

/* M events: names and sort indices, applied before everything else. */
static void import_json_metadata(importer *im, const tl_json_trace *json, const tl_json_event *e)
{
	uint32_t pid = json_pid(im, e);
	const char *what = e->name ? e->name : "";
	int is_process = strncmp(what, "process_", 8) == 0;
	int is_thread = strncmp(what, "thread_", 7) == 0;
	/* the suffix is only looked at behind a known prefix: a shorter name
	 * must not be read past its end */
	const char *suffix = is_process ? what + 8 : is_thread ? what + 7 : "";
	int is_name = strcmp(suffix, "name") == 0;
	int is_sort = strcmp(suffix, "sort_index") == 0;
	if ((!is_process && !is_thread) || (!is_name && !is_sort)) {
		stat_add(im, TL_STAT_JSON_METADATA_IGNORED);
		return;
	}
	const tl_json_arg *a = find_arg(json, e, is_name ? "name" : "sort_index");
	if (!a || (is_name && a->value.type != TL_JSON_STRING) ||
	    (is_sort && a->value.type != TL_JSON_INT)) {
		stat_add(im, TL_STAT_JSON_METADATA_IGNORED);
		return;
	}
	if (is_process) {
		size_t proc = get_process(im, pid);
		if (proc == TL_IMPORT_NONE)
			return;
		tl_import_process *p = &im->out->processes[proc];
		if (is_name) {
			p->name = copy_cstr(im, a->value.s);
		} else {
			p->has_sort_index = 1;
			p->sort_index = a->value.i;
		}
		return;
	}
	size_t thread = json_thread(im, e, pid);
	if (thread == TL_IMPORT_NONE)
		return;
	tl_import_thread *t = &im->out->threads[thread];
	if (is_name) {
		t->name = copy_cstr(im, a->value.s);
	} else {
		t->has_sort_index = 1;
		t->sort_index = a->value.i;
	}
}

/* ------------------------------------------------------------------------ */
/* Ordering */

enum { ORDER_END, ORDER_COMPLETE, ORDER_OTHER };

typedef struct work_item {
	int64_t ts;
	int64_t dur;
	size_t order;
	int cls;
	const tl_json_event *json;
	const tl_ftrace_line *line;
} work_item;

/* Perfetto's order of two events: by time, then class, then the longer
 * COMPLETE event first, then file order. */
static int compare_import_order(int64_t ts_a, int cls_a, int64_t dur_a, size_t order_a,
                                int64_t ts_b, int cls_b, int64_t dur_b, size_t order_b)
{
	if (ts_a != ts_b)
		return ts_a < ts_b ? -1 : 1;
	if (cls_a != cls_b)
		return cls_a < cls_b ? -1 : 1;
	if (cls_a == ORDER_COMPLETE && dur_a != dur_b)
		return dur_a > dur_b ? -1 : 1;
	return order_a < order_b ? -1 : order_a > order_b;
}

static int compare_work(const void *pa, const void *pb)
{
	const work_item *a = pa, *b = pb;
	return compare_import_order(a->ts, a->cls, a->dur, a->order, b->ts, b->cls, b->dur,
	                            b->order);
}

static void add_lines(const tl_ftrace_text *text, work_item *items, size_t *n, size_t base,
                      tl_import *out)
{
	for (size_t i = 0; i < text->nlines; i++) {
		const tl_ftrace_line *l = &text->lines[i];
		if (l->kind != TL_FTRACE_LINE_MARKER) {
			out->stats[TL_STAT_SYSTRACE_KERNEL_EVENT]++;
			continue;
		}
		items[(*n)++] =
		    (work_item){.ts = l->ts_ns, .order = base + i, .cls = ORDER_OTHER, .line = l};
	}
	add_reader_counts(out, text->parse_failures, text->first_failure_line,
	                  text->first_failure_text, text->unterminated, text->unterminated_line,
	                  text->clock, &text->clock_values);
}

/* An empty import and the importer that fills it, handing its items to
 * sink when there is one; 0 or -ENOMEM. */
static int importer_start(importer *im, tl_import *out, const tl_import_sink *sink)
{
	memset(out, 0, sizeof *out);
	*im =
	    (importer){.out = out, .next_synthetic_id = UINT32_MAX, .free_pending = TL_IMPORT_NONE};
	out->maps = calloc(1, sizeof *out->maps);
	im->maps = out->maps;
	if (out->maps && sink) {
		im->st = calloc(1, sizeof *im->st);
		if (!im->st)
			return -ENOMEM;
		im->st->sink = sink;
		im->st->free_arg = TL_IMPORT_NONE;
		/* keys that are removed again: the tracks of async ids, ended flows */
		out->maps->track_by_key.owned = 1;
		out->maps->flow_v1.owned = 1;
		out->maps->flow_v2.owned = 1;
		out->maps->names.owned = 1;
	}
	return out->maps ? 0 : -ENOMEM;
}

/* Frees the importer's scratch; on failure (rc, or memory that ran out)
 * the import too. Returns the outcome. */
static int importer_finish(importer *im, int rc)
{
	if (rc == 0 && im->st && !im->nomem)
		stream_end(im);
	int sink_failed = 0;
	if (im->st) {
		/* (a sink's error stops the loops as memory that ran out does) */
		if ((rc == 0 || rc == -ENOMEM) && im->st->rc) {
			rc = im->st->rc;
			sink_failed = 1;
		}
		stream *st = im->st;
		stream_free(im);
		free(st);
	}
	free(im->key);
	free(im->pending);
	free(im->pending_of);
	if (rc == 0 && im->nomem)
		rc = -ENOMEM;
	/* a clock sync's writer: the process its thread turned out to be in */
	for (size_t i = 0; rc == 0 && i < im->out->nclock_syncs; i++) {
		tl_import_clock_sync *c = &im->out->clock_syncs[i];
		if (!c->pid && c->thread != TL_IMPORT_NONE)
			c->pid = im->out->threads[c->thread].pid;
	}
	if (rc)
		tl_import_free(im->out);
	im->out->sink_failed = sink_failed;
	return rc;
}

static int build_import(const tl_ftrace_text *text, const tl_json_trace *json,
                        const tl_import_sink *sink, tl_import *out)
{
	importer im;
	if (importer_start(&im, out, sink))
		return importer_finish(&im, -ENOMEM);
	size_t total = (text ? text->nlines : 0) + (json ? json->nevents + json->system.nlines : 0);
	work_item *items = calloc(total + 1, sizeof *items);
	if (!items)
		return importer_finish(&im, -ENOMEM);

	size_t n = 0;
	int any_complete = 0;
	if (json) {
		out->clock = json->clock;
		if (json->clock)
			out->clock_values = json->clock_values;
		out->stats[TL_STAT_JSON_EMPTY_EVENT] += json->empty_events;
		out->stats[TL_STAT_JSON_DISPLAY_TIME_UNIT] += json->display_time_unit;
		for (size_t i = 0; i < json->nevents; i++) {
			const tl_json_event *e = &json->events[i];
			if (e->ph == 'M') {
				import_json_metadata(&im, json, e);
				continue;
			}
			if (!e->ph) {
				stat_add(&im, TL_STAT_JSON_MISSING_PHASE);
				continue;
			}
			if (!(e->has & TL_JSON_HAS_TS)) {
				stat_add(&im, TL_STAT_JSON_MISSING_TS);
				continue;
			}
			work_item *w = &items[n++];
			*w = (work_item){.ts = e->ts, .order = e->order, .json = e};
			w->cls = e->ph == 'E'   ? ORDER_END
			         : e->ph == 'X' ? ORDER_COMPLETE
			                        : ORDER_OTHER;
			w->dur = e->dur;
			any_complete |= e->ph == 'X';
		}
		add_lines(&json->system, items, &n, json->nevents, out);
	}
	if (text)
		add_lines(text, items, &n, 0, out);
	if (!any_complete) {
		for (size_t i = 0; i < n; i++)
			items[i].cls = ORDER_OTHER;
	}
	qsort(items, n, sizeof *items, compare_work);

	for (size_t i = 0; i < n && !im.nomem; i++) {
		if (items[i].json)
			import_json_event(&im, json, items[i].json);
		else
			import_marker(&im, items[i].line);
	}
	free(items);
	return importer_finish(&im, 0);
}

int tl_import_build(const tl_ftrace_text *text, const tl_json_trace *json, tl_import *out)
{
	return build_import(text, json, NULL, out);
}

/* ------------------------------------------------------------------------ */
/* From a decoded snapshot */

static void model_arg_to_json(tl_json_trace *json, const tl_model_arg *a, tl_json_value *v)
{
	char hex[24];
	memset(v, 0, sizeof *v);
	switch (a->type) {
	case TL_ARG_INT:
		v->type = TL_JSON_INT;
		v->i = a->v.i;
		break;
	case TL_ARG_UINT:
		if (a->v.u <= (uint64_t)INT64_MAX) {
			v->type = TL_JSON_INT;
			v->i = (int64_t)a->v.u;
		} else {
			v->type = TL_JSON_DOUBLE;
			v->d = (double)a->v.u;
		}
		break;
	case TL_ARG_DOUBLE:
		v->type = TL_JSON_DOUBLE;
		v->d = a->v.d;
		break;
	case TL_ARG_BOOL:
		v->type = TL_JSON_BOOL;
		v->i = !!a->v.b;
		break;
	case TL_ARG_POINTER:
		snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)a->v.p);
		v->type = TL_JSON_STRING;
		v->s = tl_str_arena_copy(&json->strings, hex, strlen(hex));
		break;
	case TL_ARG_STRING:
	case TL_ARG_STRING_COPY:
		v->type = TL_JSON_STRING;
		v->s = a->v.s ? a->v.s : "";
		break;
	default:
		v->type = TL_JSON_NULL;
		break;
	}
}

/* Event me as a JSON event appended to json; a COMPLETE one lasts dur. */
static int model_event_to_json(const tl_model *model, const tl_model_event *me, int64_t dur,
                               tl_json_trace *json)
{
	tl_json_event *e = tl_json_trace_add_event(json);
	if (!e)
		return -ENOMEM;
	uint32_t pid = me->pid ? me->pid : model->pid;
	e->ph = me->phase;
	e->name = me->name;
	e->cat = me->cat && me->cat[0] ? me->cat : NULL;
	e->ts = me->ts_ns;
	e->pid = pid;
	e->tid = me->tid ? me->tid : pid;
	e->has = TL_JSON_HAS_TS | TL_JSON_HAS_PID | TL_JSON_HAS_TID;
	switch (me->phase) {
	case TL_PHASE_COMPLETE:
		e->dur = dur;
		e->has |= TL_JSON_HAS_DUR;
		break;
	case TL_PHASE_END:
		e->name = NULL; /* an END closes the innermost open slice */
		e->cat = NULL;
		break;
	case TL_PHASE_INSTANT:
		switch (me->scope & TL_EVENT_SCOPE_MASK) {
		case TL_EVENT_SCOPE_GLOBAL:
			e->scope = 'g';
			break;
		case TL_EVENT_SCOPE_PROCESS:
			e->scope = 'p';
			break;
		default:
			e->scope = 't';
			break;
		}
		break;
	case TL_PHASE_ASYNC_BEGIN:
	case TL_PHASE_ASYNC_END:
	case TL_PHASE_ASYNC_INSTANT:
		e->id_scope = TL_JSON_ID_LOCAL;
		e->id.type = TL_JSON_INT;
		e->id.i = (int64_t)me->id;
		break;
	case TL_PHASE_FLOW_BEGIN:
	case TL_PHASE_FLOW_STEP:
	case TL_PHASE_FLOW_END:
		/* Keyed by id alone, bound to the enclosing slice. */
		e->name = NULL;
		e->cat = NULL;
		e->bp_enclosing = 1;
		e->id_scope = TL_JSON_ID_PLAIN;
		e->id.type = TL_JSON_INT;
		e->id.i = (int64_t)me->id;
		break;
	default:
		break;
	}
	size_t first = json->nargs;
	if (me->phase == TL_PHASE_COUNTER) {
		tl_json_arg *a = tl_json_trace_add_arg(json);
		if (!a)
			return -ENOMEM;
		a->key = "value";
		a->top_level = 1;
		if (me->counter_is_double) {
			a->value.type = TL_JSON_DOUBLE;
			a->value.d = me->counter_d;
		} else {
			a->value.type = TL_JSON_INT;
			a->value.i = me->counter_i;
		}
	} else {
		for (unsigned i = 0; i < me->nargs && i < TL_MAX_ARGS; i++) {
			if (me->args[i].type == TL_ARG_NONE)
				continue;
			tl_json_value v;
			model_arg_to_json(json, &me->args[i], &v);
			tl_json_arg *a = tl_json_trace_add_arg(json);
			if (!a)
				return -ENOMEM;
			a->key = me->args[i].key ? me->args[i].key : "";
			a->top_level = 1;
			a->value = v;
		}
	}
	e = &json->events[json->nevents - 1];
	e->first_arg = first;
	e->nargs = json->nargs - first;
	return 0;
}

/* A metadata event naming a process or a thread. */
static int model_name_to_json(tl_json_trace *json, const char *what, uint32_t pid, uint32_t tid,
                              const char *name)
{
	tl_json_event *e = tl_json_trace_add_event(json);
	tl_json_arg *a = e ? tl_json_trace_add_arg(json) : NULL;
	if (!a)
		return -ENOMEM;
	e = &json->events[json->nevents - 1];
	e->ph = 'M';
	e->name = what;
	e->pid = pid;
	e->tid = tid;
	e->has = TL_JSON_HAS_PID | TL_JSON_HAS_TID;
	e->first_arg = json->nargs - 1;
	e->nargs = 1;
	a->key = "name";
	a->top_level = 1;
	a->value.type = TL_JSON_STRING;
	a->value.s = name;
	return 0;
}

/* A model event's place in the import's order (compare_work's key): 24
 * bytes an event, where a JSON event and its work item took 192. */
typedef struct model_place {
	int64_t ts;
	int64_t dur;    /* a COMPLETE event's */
	uint32_t index; /* in the model: its order */
	uint32_t cls;
} model_place;

static int compare_model_place(const void *pa, const void *pb)
{
	const model_place *a = pa, *b = pb;
	return compare_import_order(a->ts, (int)a->cls, a->dur, a->index, b->ts, (int)b->cls,
	                            b->dur, b->index);
}

/* The place of event `index`: its time, end (COMPLETE) and phase. */
static model_place place_of(size_t index, char phase, int64_t ts_ns, int64_t end_ns)
{
	model_place p = {.ts = ts_ns, .index = (uint32_t)index, .cls = ORDER_OTHER};
	if (phase == TL_PHASE_END) {
		p.cls = ORDER_END;
	} else if (phase == TL_PHASE_COMPLETE) {
		p.cls = ORDER_COMPLETE;
		p.dur = end_ns > ts_ns ? tl_span_ns(ts_ns, end_ns) : 0;
	}
	return p;
}

/* The event at place p of a model's events, wherever they are (its time
 * is the place's; a COMPLETE event's duration is taken from the place).
 * 0 or -ENOMEM. */
typedef int (*model_event_fn)(void *ctx, const model_place *p, tl_model_event *e);

/*
 * The events of places[0..n) (an event's index in it, given to get) imported
 * in the order tl_import_build gives the JSON events they become: the model
 * meta's names first, then by compare_work, an event at a time (the order
 * sorted from the places, each event made a JSON event in a trace of one
 * just before it is imported). Frees places. 0 or -ENOMEM.
 */
static int import_events(const tl_model *meta, model_place *places, size_t n, model_event_fn get,
                         void *ctx, const tl_import_sink *sink, tl_import *out)
{
	importer im;
	if (importer_start(&im, out, sink)) {
		free(places);
		return importer_finish(&im, -ENOMEM);
	}
	tl_json_trace one = {0};
	int rc = 0;
	if (meta->process_name && meta->process_name[0])
		rc = model_name_to_json(&one, "process_name", meta->pid, meta->pid,
		                        meta->process_name);
	for (size_t i = 0; i < meta->nthreads && !rc; i++) {
		const tl_model_thread *t = &meta->threads[i];
		uint32_t pid = t->pid ? t->pid : meta->pid;
		if (t->name && t->name[0])
			rc = model_name_to_json(&one, "thread_name", pid, t->tid ? t->tid : pid,
			                        t->name);
	}
	for (size_t i = 0; i < meta->nprocesses && !rc; i++) {
		const tl_model_process *p = &meta->processes[i];
		if (p->name && p->name[0])
			rc = model_name_to_json(&one, "process_name", p->pid, p->pid, p->name);
	}
	for (size_t i = 0; i < one.nevents && !rc; i++)
		import_json_metadata(&im, &one, &one.events[i]);
	one.nevents = one.nargs = 0;

	int any_complete = 0;
	for (size_t i = 0; i < n; i++)
		any_complete |= places[i].cls == ORDER_COMPLETE;
	if (!any_complete) {
		for (size_t i = 0; i < n; i++)
			places[i].cls = ORDER_OTHER;
	}
	if (!rc && n)
		qsort(places, n, sizeof *places, compare_model_place);
	tl_model_arg args[TL_MAX_ARGS];
	for (size_t i = 0; i < n && !rc && !im.nomem; i++) {
		tl_model_event e = {.args = args};
		rc = get(ctx, &places[i], &e);
		if (rc == 0)
			rc = model_event_to_json(meta, &e, places[i].dur, &one);
		if (rc)
			break;
		import_json_event(&im, &one, &one.events[0]);
		one.nevents = one.nargs = 0;
		if (i % 1024 == 1023)
			tl_str_arena_reset(&one.strings);
	}
	free(places);
	tl_json_trace_free(&one);
	out->clock = meta->clock_id == 7   ? TL_TRACE_CLOCK_BOOT
	             : meta->clock_id == 1 ? TL_TRACE_CLOCK_MONO
	                                   : TL_TRACE_CLOCK_UNKNOWN;
	if (out->clock)
		out->clock_values =
		    (tl_clock_values){.known = meta->boottime_ns > 0 && meta->monotonic_ns > 0 &&
		                               meta->realtime_ns > 0,
		                      .boottime_ns = meta->boottime_ns,
		                      .monotonic_ns = meta->monotonic_ns,
		                      .realtime_ns = meta->realtime_ns};
	return importer_finish(&im, rc);
}

static int model_event_at(void *model, const model_place *p, tl_model_event *e)
{
	*e = ((const tl_model *)model)->events[p->index];
	return 0;
}

int tl_import_model(const tl_model *model, tl_import *out)
{
	if (model->nevents > UINT32_MAX)
		return -ENOMEM;
	model_place *places = malloc((model->nevents + 1) * sizeof *places);
	if (!places)
		return -ENOMEM;
	for (size_t i = 0; i < model->nevents; i++) {
		const tl_model_event *me = &model->events[i];
		places[i] = place_of(i, me->phase, me->ts_ns, me->end_ns);
	}
	return import_events(model, places, model->nevents, model_event_at, (void *)model, NULL,
	                     out);
}

/* A snapshot read in place: each event's record and thread by its index,
 * every thread's records kept (a packed block's unpacked) until the end. */
typedef struct snapshot_events {
	tl_snapshot_read *r;
	const uint64_t **recs;
	uint32_t *tids;
	tl_stream_strings strings;
} snapshot_events;

static int snapshot_event_at(void *ctx, const model_place *p, tl_model_event *e)
{
	snapshot_events *se = ctx;
	if (tl_stream_strings_reset(&se->strings, &se->recs[p->index], 1))
		return -ENOMEM;
	tl_model_arg *args = e->args;
	tl_snapshot_read_event(se->r, se->recs[p->index], se->tids[p->index], 1,
	                       tl_stream_strings_store, &se->strings, e);
	e->args = e->nargs ? args : NULL;
	e->ts_ns = p->ts; /* (a COMPLETE event's duration is the place's) */
	return 0;
}

/* Grows a's room for n elements of size bytes (*cap: its room). */
static int grow_room(void **a, size_t *cap, size_t n, size_t size)
{
	if (n <= *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 4096;
	while (c < n)
		c *= 2;
	void *grown = realloc(*a, c * size);
	if (!grown)
		return -ENOMEM;
	*a = grown;
	*cap = c;
	return 0;
}

static int import_snapshot(const void *data, size_t len, const tl_import_sink *sink,
                           const tl_symbol_options *symbols, tl_import *out, char *err,
                           size_t errlen)
{
	tl_model meta;
	tl_snapshot_read r;
	int rc = tl_snapshot_read_open(&r, data, len, &meta, err, errlen);
	if (rc < 0)
		return rc;
	r.symbols = symbols;
	snapshot_events se = {.r = &r};
	model_place *places = NULL;
	size_t n = 0, cap_recs = 0, cap_tids = 0, cap_places = 0;
	for (size_t t = 0; t < r.nthreads && rc == 0; t++) {
		tl_event_cursor c;
		tl_cursor_event e;
		rc = tl_event_cursor_init(&c, &r, &r.threads[t], 1);
		while (rc == 0 && tl_event_cursor_next(&c, &e)) {
			if (n == UINT32_MAX ||
			    grow_room((void **)&se.recs, &cap_recs, n + 1, sizeof *se.recs) ||
			    grow_room((void **)&se.tids, &cap_tids, n + 1, sizeof *se.tids) ||
			    grow_room((void **)&places, &cap_places, n + 1, sizeof *places)) {
				rc = -ENOMEM;
				break;
			}
			se.recs[n] = e.rec;
			se.tids[n] = r.threads[t].tid;
			places[n] = place_of(n, e.phase, e.ts_ns, e.end_ns);
			n++;
		}
	}
	if (rc == 0 && r.unpack_failed)
		rc = -ENOMEM;
	if (rc == 0) {
		tl_snapshot_read_finish(&r);
		rc = import_events(&meta, places, n, snapshot_event_at, &se, sink, out);
	} else {
		free(places);
		if (err && errlen)
			snprintf(err, errlen, "out of memory");
	}
	free(se.recs);
	free(se.tids);
	tl_stream_strings_free(&se.strings);
	tl_snapshot_read_close(&r);
	tl_model_free(&meta);
	return rc;
}

int tl_import_snapshot(const void *data, size_t len, tl_import *out, char *err, size_t errlen)
{
	return import_snapshot(data, len, NULL, NULL, out, err, errlen);
}

int tl_import_is_empty(const tl_import *imp)
{
	return imp->nslices == 0 && imp->ncounters == 0 && imp->nflows == 0 && !imp->streamed;
}

/* ------------------------------------------------------------------------ */
/* Perfetto TrackEvents */

/* The process a track belongs to: its own, its thread's, or its parents'. */
static uint32_t perfetto_track_pid(const tl_perfetto_trace *t, const tl_perfetto_track *track)
{
	for (int hops = 0; track && hops < 16; hops++) {
		if (track->kind == TL_PERFETTO_TRACK_PROCESS ||
		    track->kind == TL_PERFETTO_TRACK_THREAD)
			return track->pid;
		if (track->kind != TL_PERFETTO_TRACK_CHILD)
			return 0;
		track = tl_perfetto_track_find(t, track->parent_uuid);
	}
	return 0;
}

static uint32_t perfetto_thread_tid(const tl_perfetto_track *track)
{
	return track->tid ? track->tid : track->pid;
}

/* flow_ids begin a flow or continue it; terminating_flow_ids end an open one. */
static void perfetto_flows(importer *im, const tl_perfetto_trace *t, const tl_perfetto_event *e,
                           size_t slice)
{
	strmap *m = &im->maps->flow_v2;
	for (size_t i = 0; i < e->nflows; i++) {
		const tl_perfetto_flow *f = &t->flows[e->first_flow + i];
		if (key_printf(im, "P%llx", (unsigned long long)f->id))
			return;
		uint64_t *prev = map_get(m, im->key, im->key_len);
		int open = prev && *prev != TL_IMPORT_NONE;
		if (open)
			add_flow(im, *prev, slice);
		if (!f->terminating || open)
			set_flow_source(im, m, f->terminating ? TL_IMPORT_NONE : slice);
	}
}

static void perfetto_counter(importer *im, const tl_perfetto_trace *t,
                             const tl_perfetto_track *track, const tl_perfetto_event *e)
{
	uint32_t pid = perfetto_track_pid(t, track);
	const char *name = track->name ? track->name : "";
	if (key_printf(im, "C|%u|%s", (unsigned)pid, name))
		return;
	size_t counter_track =
	    keyed_track(im, TL_TRACK_COUNTER, TL_IMPORT_SCOPE_PROCESS, name, strlen(name), pid);
	add_counter(im, e->ts, e->counter_is_double ? e->counter_d : (double)e->counter_i,
	            counter_track);
}

/* The track an instant goes on: its thread's, its process's or the global one. */
static size_t perfetto_instant_track(importer *im, const tl_perfetto_track *track)
{
	if (track && track->kind == TL_PERFETTO_TRACK_PROCESS) {
		get_process(im, track->pid);
		if (key_printf(im, "I|%u", (unsigned)track->pid))
			return TL_IMPORT_NONE;
		return keyed_track(im, TL_TRACK_INSTANT, TL_IMPORT_SCOPE_PROCESS, "", 0,
		                   track->pid);
	}
	if (key_printf(im, "I|global"))
		return TL_IMPORT_NONE;
	return keyed_track(im, TL_TRACK_INSTANT, TL_IMPORT_SCOPE_GLOBAL, "", 0, 0);
}

static void import_perfetto_event(importer *im, const tl_perfetto_trace *t,
                                  const tl_perfetto_event *e)
{
	stream_flush(im);
	const tl_perfetto_track *track = e->track ? tl_perfetto_track_find(t, e->track) : NULL;
	if ((e->track && !track) || e->type < TL_PERFETTO_SLICE_BEGIN ||
	    e->type > TL_PERFETTO_COUNTER) {
		stat_add(im, TL_STAT_TRACK_EVENT_PARSER_ERRORS);
		return;
	}
	if (e->type == TL_PERFETTO_COUNTER || (track && track->counter)) {
		if (e->type == TL_PERFETTO_COUNTER && track && track->counter)
			perfetto_counter(im, t, track, e);
		else
			stat_add(im, TL_STAT_TRACK_EVENT_PARSER_ERRORS);
		return;
	}
	slice_spec spec = {
	    .ts = e->ts, .name = e->name, .name_len = e->name ? strlen(e->name) : 0, .cat = e->cat};
	if (e->type == TL_PERFETTO_INSTANT) {
		spec.kind = TL_IMPORT_INSTANT;
		spec.dur = 0;
		spec.mode = CLOSE_FOR_SCOPED;
	} else {
		spec.dur = -1;
		spec.mode = CLOSE_FOR_BEGIN;
	}

	size_t on, s;
	if (track && track->kind == TL_PERFETTO_TRACK_THREAD) {
		size_t thread = thread_exact(im, perfetto_thread_tid(track), track->pid);
		if (thread == TL_IMPORT_NONE)
			return;
		on = im->out->threads[thread].track;
		if (spec.kind != TL_IMPORT_INSTANT)
			spec.kind = TL_IMPORT_SLICE;
	} else if (e->type == TL_PERFETTO_INSTANT &&
	           (!track || track->kind != TL_PERFETTO_TRACK_CHILD)) {
		on = perfetto_instant_track(im, track);
	} else {
		uint32_t pid = perfetto_track_pid(t, track);
		const char *name = track && track->name ? track->name : e->name ? e->name : "";
		if (key_printf(im, "A|%llx", (unsigned long long)e->track))
			return;
		on = keyed_track(im, TL_TRACK_ASYNC,
		                 pid ? TL_IMPORT_SCOPE_PROCESS : TL_IMPORT_SCOPE_GLOBAL, name,
		                 strlen(name), pid);
		if (spec.kind != TL_IMPORT_INSTANT)
			spec.kind = TL_IMPORT_ASYNC;
	}
	if (on == TL_IMPORT_NONE)
		return;
	if (e->type == TL_PERFETTO_SLICE_END) {
		s = end_slice(im, on, e->ts, spec.name, spec.cat);
		if (s == TL_IMPORT_NONE) {
			stat_add(im, spec.kind == TL_IMPORT_SLICE ? TL_STAT_SLICE_END_UNMATCHED
			                                          : TL_STAT_ASYNC_END_UNMATCHED);
			return;
		}
	} else {
		s = begin_slice(im, on, &spec);
		if (s == TL_IMPORT_NONE)
			return;
	}
	if (e->nargs)
		import_args(im, &t->args[e->first_arg], e->nargs, s);
	perfetto_flows(im, t, e, s);
}

static int compare_perfetto_event(const void *pa, const void *pb)
{
	const tl_perfetto_event *a = *(const tl_perfetto_event *const *)pa;
	const tl_perfetto_event *b = *(const tl_perfetto_event *const *)pb;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

static int import_perfetto(const tl_perfetto_trace *trace, const tl_import_sink *sink,
                           tl_import *out)
{
	importer im;
	if (importer_start(&im, out, sink))
		return importer_finish(&im, -ENOMEM);
	for (size_t i = 0; i < trace->ntracks && !im.nomem; i++) {
		const tl_perfetto_track *track = &trace->tracks[i];
		if (track->kind == TL_PERFETTO_TRACK_PROCESS) {
			size_t proc = get_process(&im, track->pid);
			if (proc != TL_IMPORT_NONE && track->name)
				out->processes[proc].name = copy_cstr(&im, track->name);
		} else if (track->kind == TL_PERFETTO_TRACK_THREAD) {
			size_t thread = thread_exact(&im, perfetto_thread_tid(track), track->pid);
			if (thread != TL_IMPORT_NONE && track->name)
				out->threads[thread].name = copy_cstr(&im, track->name);
		}
	}
	const tl_perfetto_event **order = malloc((trace->nevents + 1) * sizeof *order);
	if (!order)
		return importer_finish(&im, -ENOMEM);
	for (size_t i = 0; i < trace->nevents; i++)
		order[i] = &trace->events[i];
	qsort(order, trace->nevents, sizeof *order, compare_perfetto_event);
	for (size_t i = 0; i < trace->nevents && !im.nomem; i++)
		import_perfetto_event(&im, trace, order[i]);
	free(order);
	return importer_finish(&im, 0);
}

int tl_import_perfetto(const tl_perfetto_trace *trace, tl_import *out)
{
	return import_perfetto(trace, NULL, out);
}

/* Frees what only building the import needs: its lookup tables and the
 * tracks' stacks of open slices. */
static void import_free_building(tl_import *imp)
{
	for (size_t i = 0; i < imp->ntracks; i++) {
		free(imp->tracks[i].stack);
		imp->tracks[i].stack = NULL;
		imp->tracks[i].depth = imp->tracks[i].stack_cap = 0;
	}
	if (imp->maps) {
		map_free(&imp->maps->thread_by_key);
		map_free(&imp->maps->current_thread);
		map_free(&imp->maps->process_by_pid);
		map_free(&imp->maps->track_by_key);
		map_free(&imp->maps->synthetic_ids);
		map_free(&imp->maps->flow_v1);
		map_free(&imp->maps->flow_v2);
		map_free(&imp->maps->names);
		free(imp->maps);
		imp->maps = NULL;
	}
}

void tl_import_free(tl_import *imp)
{
	import_free_building(imp);
	free(imp->slices);
	free(imp->thread_times);
	imp->thread_times = NULL;
	imp->nthread_times = 0;
	free(imp->tracks);
	free(imp->threads);
	free(imp->processes);
	free(imp->counters);
	free(imp->flows);
	free(imp->args);
	free(imp->clock_syncs);
	tl_str_arena_free(&imp->strings);
	memset(imp, 0, sizeof *imp);
}

/* ------------------------------------------------------------------------ */
/* Printing */

int64_t tl_import_slice_thread_ts(const tl_import *imp, size_t slice)
{
	return slice < imp->nthread_times ? imp->thread_times[2 * slice] : TL_IMPORT_NULL;
}

int64_t tl_import_slice_thread_dur(const tl_import *imp, size_t slice)
{
	return slice < imp->nthread_times ? imp->thread_times[2 * slice + 1] : TL_IMPORT_NULL;
}

uint32_t tl_import_slice_pid(const tl_import *imp, const tl_import_slice *s)
{
	const tl_import_track *t = &imp->tracks[s->track];
	if (t->thread != TL_IMPORT_NONE)
		return imp->threads[t->thread].pid;
	return t->pid;
}

uint32_t tl_import_slice_tid(const tl_import *imp, const tl_import_slice *s)
{
	const tl_import_track *t = &imp->tracks[s->track];
	return t->thread != TL_IMPORT_NONE ? imp->threads[t->thread].tid : 0;
}

/* ------------------------------------------------------------------------ */
/* Files */

/* Whether data holds a byte that text does not: a control character other
 * than white space (a Perfetto trace's tags and lengths have them). */
static int has_binary_byte(const char *data, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)data[i];
		if ((c < 0x20 && (c < '\t' || c > '\r')) || c == 0x7f)
			return 1;
	}
	return 0;
}

tl_trace_format tl_trace_format_sniff(const char *data, size_t len)
{
	if (len >= TL_SNAPSHOT_MAGIC_LEN &&
	    memcmp(data, TL_SNAPSHOT_MAGIC, TL_SNAPSHOT_MAGIC_LEN) == 0)
		return TL_TRACE_FORMAT_BINARY;
	if (tl_json_sniff(data, len))
		return TL_TRACE_FORMAT_JSON;
	if (tl_perfetto_sniff(data, len))
		return TL_TRACE_FORMAT_PERFETTO;
	if (tl_ftrace_text_sniff(data, len))
		return TL_TRACE_FORMAT_FTRACE;
	/* Perfetto's own rule, after text as there: a Trace.packet tag first.
	 * What is not well-formed after it is the Perfetto reader's error. */
	if (len && data[0] == 0x0a && has_binary_byte(data, len < 4096 ? len : 4096))
		return TL_TRACE_FORMAT_PERFETTO;
	return TL_TRACE_FORMAT_UNKNOWN;
}

/*
 * A file's bytes, followed by a NUL: read into memory, or for a JSON trace
 * in a regular file of TL_MAP_MIN_BYTES or more mapped (read-only,
 * private), with a zero page after its end, so that the JSON reader can
 * give back what it has read (tl_json_read_mapped). Only JSON: a mapped
 * file cut short while it is read faults (SIGBUS) instead of reading as a
 * truncated file, and the other formats gain nothing from the mapping.
 */
typedef struct file_bytes {
	char *data;
	size_t len;
	size_t map_len; /* 0: data is malloc'd */
	int fd;         /* a mapped file's, open until unload_file; else -1 */
} file_bytes;

#define TL_MAP_MIN_BYTES ((size_t)1 << 20)

static char *read_whole_file(const char *path, size_t *len);

/* Returns 0, or -1 with errno set. */
static int load_file(const char *path, file_bytes *fb)
{
	memset(fb, 0, sizeof *fb);
	fb->fd = -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		struct stat st;
		size_t page = (size_t)sysconf(_SC_PAGESIZE);
		char head[4096];
		ssize_t got;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    (uint64_t)st.st_size >= TL_MAP_MIN_BYTES &&
		    (uint64_t)st.st_size < SIZE_MAX - 2 * page &&
		    (got = pread(fd, head, sizeof head, 0)) > 0 &&
		    tl_json_sniff(head, (size_t)got)) {
			size_t len = (size_t)st.st_size;
			/* the file's pages, then at least one zero byte */
			size_t map_len = (len / page + 1) * page;
			char *area =
			    mmap(NULL, map_len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (area != MAP_FAILED &&
			    mmap(area, len, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) == area) {
				fb->fd = fd;
				fb->data = area;
				fb->len = len;
				fb->map_len = map_len;
				return 0;
			}
			if (area != MAP_FAILED)
				munmap(area, map_len);
		}
		close(fd);
	}
	fb->data = read_whole_file(path, &fb->len);
	return fb->data ? 0 : -1;
}

static void unload_file(file_bytes *fb)
{
	if (fb->map_len)
		munmap(fb->data, fb->map_len);
	else
		free(fb->data);
	if (fb->fd >= 0)
		close(fb->fd);
	memset(fb, 0, sizeof *fb);
	fb->fd = -1;
}

static char *read_whole_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		size_t got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
		if (got == 0)
			break;
		if (cap - n - 1 == 0) {
			char *grown = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
			if (!grown) {
				free(buf);
				buf = NULL;
				errno = ENOMEM;
				break;
			}
			buf = grown;
			cap *= 2;
		}
	}
	int failed = ferror(f);
	fclose(f);
	if (buf && failed) {
		free(buf);
		errno = EIO;
		return NULL;
	}
	if (buf) {
		buf[n] = '\0';
		*len = n;
	}
	return buf;
}

/*
 * ftrace text streamed from a file: read a chunk at a time, each marker
 * imported as soon as its line is read, so that memory is the import and
 * one chunk, not the file. The lines must come in time order, as a
 * kernel's trace does; that is the order the importer wants, so the result
 * is tl_import_build's. The first marker earlier than the one before it
 * stops the stream (STREAM_UNSORTED, nothing kept): the caller then reads
 * the file whole and sorts.
 */
#define STREAM_CHUNK_BYTES (1 << 20)
#define STREAM_NOT_TEXT 1 /* not a regular file of ftrace text: not streamed */
#define STREAM_UNSORTED 2

/* Reads until buf holds want bytes or the file ends; 0 or -errno. */
static int read_some(int fd, char *buf, size_t want, size_t *filled, int *eof)
{
	while (*filled < want && !*eof) {
		ssize_t got = read(fd, buf + *filled, want - *filled);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		*eof = got == 0;
		*filled += (size_t)got;
	}
	return 0;
}

/*
 * Whether the first bytes of a file are ftrace text by
 * tl_trace_format_sniff's rules. Undecided (so not streamed) when they
 * are only blanks and brackets: the rest of the file could still make
 * them a JSON trace, or the file holds nothing (import_loaded says so).
 */
static int head_is_ftrace(const char *head, size_t len)
{
	size_t i = 0;
	while (i < len && strchr(" \t\r\n[{", head[i]) && head[i])
		i++;
	return i < len && tl_trace_format_sniff(head, len) == TL_TRACE_FORMAT_FTRACE;
}

/* Imports the marker lines of buf[*start..filled) that end with '\n'. */
static int import_lines(importer *im, tl_ftrace_reader *reader, const char *buf, size_t *start,
                        size_t filled, int64_t *last_ts)
{
	const char *nl;
	while (!reader->finished && (nl = memchr(buf + *start, '\n', filled - *start)) != NULL) {
		const char *line = buf + *start;
		size_t n = (size_t)(nl - line);
		*start += n + 1;
		tl_ftrace_line l;
		if (tl_ftrace_reader_line(reader, line, n, &l, NULL) != 1)
			continue;
		if (l.kind != TL_FTRACE_LINE_MARKER) {
			stat_add(im, TL_STAT_SYSTRACE_KERNEL_EVENT);
			continue;
		}
		if (l.ts_ns < *last_ts)
			return STREAM_UNSORTED;
		*last_ts = l.ts_ns;
		import_marker(im, &l);
		if (im->nomem)
			return -ENOMEM;
	}
	return 0;
}

static int stream_ftrace(int fd, const tl_import_sink *sink, tl_import *out)
{
	size_t cap = STREAM_CHUNK_BYTES, filled = 0, start = 0;
	int eof = 0;
	char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	int rc = read_some(fd, buf, TL_FTRACE_HEAD_BYTES, &filled, &eof);
	if (rc == 0 && !head_is_ftrace(buf, filled))
		rc = STREAM_NOT_TEXT;
	if (rc) {
		free(buf);
		return rc;
	}

	importer im;
	tl_ftrace_reader reader;
	int64_t last_ts = INT64_MIN;
	rc = importer_start(&im, out, sink);
	start = tl_ftrace_reader_start(&reader, 0, buf, filled);
	while (rc == 0) {
		rc = import_lines(&im, &reader, buf, &start, filled, &last_ts);
		if (rc || eof || reader.finished)
			break;
		/* Keep the partial last line; make room for a longer one. */
		memmove(buf, buf + start, filled - start);
		filled -= start;
		start = 0;
		if (filled == cap) {
			char *grown = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
			if (!grown) {
				rc = -ENOMEM;
				break;
			}
			buf = grown;
			cap *= 2;
		}
		rc = read_some(fd, buf, cap, &filled, &eof);
	}
	if (rc == 0) {
		tl_ftrace_reader_finish(&reader, buf + start, filled - start);
		add_reader_counts(out, reader.parse_failures, reader.first_failure_line,
		                  reader.first_failure_text, reader.unterminated,
		                  reader.unterminated_line, reader.clock, &reader.clock_values);
	}
	free(buf);
	return importer_finish(&im, rc);
}

/* STREAM_NOT_TEXT when path is not a regular file, or its error. */
static int stream_ftrace_file(const char *path, const tl_import_sink *sink, tl_import *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return STREAM_NOT_TEXT; /* the whole-file read reports it */
	struct stat st;
	int rc = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? stream_ftrace(fd, sink, out)
	                                                    : STREAM_NOT_TEXT;
	close(fd);
	return rc;
}

/*
 * A JSON trace read in two passes, so that memory is the import and what
 * is open, not the file and its parsed events (over 3 times the file).
 *
 * The first pass reads every event (tl_json_scan), imports the metadata
 * events at once, as tl_import_build does before any other, and notes the
 * runs: stretches of events that follow one another in one array, each in
 * the importer's order after the one before (compare_place's: by time,
 * then the ties' rules, then file order). The exporters write each
 * thread's events together, in time order: a run per thread. It also
 * keeps of every event 32 bytes (where it lies and what orders it), for a
 * trace of too many runs.
 *
 * The second pass, for a trace of at most MERGE_RUNS_MAX runs, reads each
 * run from its start with a cursor of its own and imports the events of
 * all of them merged in that order: memory is, per run, a buffer of 16 KiB
 * and one parsed event with its strings (an arena's 64 KiB block and its
 * table of recent strings): about 120 KiB. Otherwise the places are sorted and each event is read
 * again alone. The result is tl_import_build's either way.
 *
 * A trace with a systemTraceEvents text, whose lines are merged with the
 * events, is read whole instead (STREAM_WHOLE, nothing kept), and so is
 * one with an event of 1 GiB or more or over 2^32 events.
 */
#define STREAM_WHOLE 3
#define STREAM_RESCAN 4
#define MERGE_RUNS_MAX 256
#define SPILL_BUDGET ((size_t)4 << 20) /* a sink's index held in memory */
#define CURSOR_BYTES ((size_t)16 << 10)

typedef struct json_place {
	int64_t ts;
	int64_t dur;
	uint64_t offset;
	uint32_t len_cls; /* the event's length << 2 | its ORDER_ class */
	uint32_t order;
} json_place;

#define PLACE_LEN_MAX (((uint32_t)1 << 30) - 1)

/* The bytes of a run's events in the file, and the order of its first. */
typedef struct json_run {
	uint64_t start, end;
	uint32_t first_order;
} json_run;

typedef struct json_stream {
	importer *im;
	const char *data; /* the file's bytes (the first pass reads the gaps) */
	json_place *places;
	size_t nplaces, cap;
	json_run runs[MERGE_RUNS_MAX];
	size_t nruns;
	int too_many_runs;
	json_place last; /* the last event placed, while has_last */
	int has_last;
	uint64_t last_end; /* the end of the last event handed on */
	int any_complete;
	int whole; /* an event the index cannot hold: read the file whole */
	/* A sink's import keeps no index while the runs do: at the 257th run
	 * it scans again (STREAM_RESCAN), every place then going to the spill
	 * sorter (index_all), the events before handled_before not imported
	 * again. */
	tl_spill_sort *spill;
	int index_all;
	uint64_t handled_before;
} json_stream;

static int compare_place(const void *pa, const void *pb)
{
	const json_place *a = pa, *b = pb;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	int ca = (int)(a->len_cls & 3), cb = (int)(b->len_cls & 3);
	if (ca != cb)
		return ca < cb ? -1 : 1;
	if (ca == ORDER_COMPLETE && a->dur != b->dur)
		return a->dur > b->dur ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* A place's time as a key of the spill sorter: the same order, unsigned. */
static uint64_t place_key(int64_t ts)
{
	return (uint64_t)ts ^ ((uint64_t)1 << 63);
}

/* compare_place for places of one time, in the spill sorter: the order of
 * a trace with X events (one without is put right as it is read back). */
static int compare_spilled_place(const void *a, size_t alen, const void *b, size_t blen, void *ctx)
{
	(void)alen;
	(void)blen;
	(void)ctx;
	json_place x, y;
	memcpy(&x, a, sizeof x);
	memcpy(&y, b, sizeof y);
	return compare_place(&x, &y);
}

/* Whether data[from..to) is white space around one ',': the next element
 * of the same array. */
static int next_in_array(const char *data, uint64_t from, uint64_t to)
{
	int commas = 0;
	for (uint64_t i = from; i < to; i++) {
		char c = data[i];
		if (c == ',')
			commas++;
		else if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			return 0;
	}
	return commas == 1;
}

/* Extends the last run with the event data[offset..offset + len), or
 * starts a run with it; placed: its place when it is imported in order
 * (not a metadata event), else NULL. A new run starts at an event placed
 * before the last one placed (compare_place, with the ties' rules of a
 * trace with X events: a run in that order is also in the order of a
 * trace without, its file order rising) or not next in the same array. */
static void note_run(json_stream *js, const tl_json_event *e, uint64_t offset, size_t len,
                     const json_place *placed)
{
	if (js->too_many_runs)
		return;
	int extends = js->nruns && next_in_array(js->data, js->last_end, offset) &&
	              (!placed || !js->has_last || compare_place(&js->last, placed) <= 0);
	if (!extends) {
		if (js->nruns == MERGE_RUNS_MAX) {
			js->too_many_runs = 1;
			return;
		}
		js->runs[js->nruns++] = (json_run){offset, offset, (uint32_t)e->order};
		js->has_last = 0; /* a run's order is its own */
	}
	js->runs[js->nruns - 1].end = offset + len;
	js->last_end = offset + len;
	if (placed) {
		js->last = *placed;
		js->has_last = 1;
	}
}

static int event_class(const tl_json_event *e)
{
	return e->ph == 'E' ? ORDER_END : e->ph == 'X' ? ORDER_COMPLETE : ORDER_OTHER;
}

/* Whether the importer takes e in time order (not a metadata event, nor
 * one it counts and drops). */
static int is_placed(const tl_json_event *e)
{
	return e->ph && e->ph != 'M' && (e->has & TL_JSON_HAS_TS);
}

/*
 * The index's memory is mapped and grown by the kernel (mremap), not
 * taken from malloc: freed before the second pass, a block of malloc's
 * would raise its threshold for mapping large blocks (glibc moves it up to
 * the size of a mapped block freed), and the import's arrays, growing next,
 * would then be copied inside the heap at each doubling, the old copy
 * left behind: more memory than the index gave back.
 */
static int grow_places(json_stream *js)
{
	size_t cap = js->cap ? js->cap * 2 : 4096;
	if (cap > SIZE_MAX / sizeof *js->places)
		return -ENOMEM;
	void *grown = js->cap ? mremap(js->places, js->cap * sizeof *js->places,
	                               cap * sizeof *js->places, MREMAP_MAYMOVE)
	                      : mmap(NULL, cap * sizeof *js->places, PROT_READ | PROT_WRITE,
	                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (grown == MAP_FAILED)
		return -ENOMEM;
	js->places = grown;
	js->cap = cap;
	return 0;
}

static void free_places(json_stream *js)
{
	if (js->cap)
		munmap(js->places, js->cap * sizeof *js->places);
	js->places = NULL;
	js->cap = js->nplaces = 0;
}

static int place_event(void *ctx, const tl_json_trace *json, const tl_json_event *e, size_t offset,
                       size_t len)
{
	json_stream *js = ctx;
	importer *im = js->im;
	if (len > PLACE_LEN_MAX || e->order > UINT32_MAX || json->has_system_text) {
		js->whole = 1;
		return -E2BIG;
	}
	if (!is_placed(e)) {
		if (js->index_all && e->order < js->handled_before)
			return 0; /* (the scan before handled it) */
		if (e->ph == 'M')
			import_json_metadata(im, json, e);
		else
			stat_add(im, e->ph ? TL_STAT_JSON_MISSING_TS : TL_STAT_JSON_MISSING_PHASE);
		note_run(js, e, offset, len, NULL);
		return im->nomem ? -ENOMEM : 0;
	}
	js->any_complete |= e->ph == 'X';
	json_place place = {.ts = e->ts,
	                    .dur = e->dur,
	                    .offset = offset,
	                    .len_cls = (uint32_t)len << 2 | (uint32_t)event_class(e),
	                    .order = (uint32_t)e->order};
	note_run(js, e, offset, len, &place);
	if (js->index_all)
		return tl_spill_sort_add(js->spill, place_key(place.ts), &place, sizeof place);
	if (js->spill && js->too_many_runs) {
		js->handled_before = e->order;
		return STREAM_RESCAN;
	}
	if (js->spill)
		return 0;
	if (js->nplaces == js->cap && grow_places(js))
		return -ENOMEM;
	js->places[js->nplaces++] = place;
	return 0;
}

static int changed_while_read(tl_read_error *err, uint64_t offset)
{
	snprintf(err->message, sizeof err->message,
	         "the file changed while it was read (at byte %llu)", (unsigned long long)offset);
	return -EIO;
}

/* Reads len bytes of fd at offset into buf: 0, or -errno with err said
 * (a file shorter than when it was first read: it changed). */
static int pread_full(int fd, char *buf, size_t len, uint64_t offset, tl_read_error *err)
{
	size_t done = 0;
	while (done < len) {
		size_t want = len - done > ((size_t)1 << 30) ? (size_t)1 << 30 : len - done;
		ssize_t got = pread(fd, buf + done, want, (off_t)(offset + done));
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int e = errno;
			snprintf(err->message, sizeof err->message, "cannot read at byte %llu: %s",
			         (unsigned long long)(offset + done), strerror(e));
			return -e;
		}
		if (got == 0)
			return changed_while_read(err, offset + done);
		done += (size_t)got;
	}
	return 0;
}

/* The second pass through the index: each placed event read again and
 * imported, in order. From the file (fd) when its mapping was given back,
 * else from data. */
/*
 * The places in the importer's order: the sorted index's, or the spill
 * sorter's. From the sorter, for a trace without X events, each time's
 * places are read together and put in file order (the sorter put the E
 * first, as for a trace with X events): memory is the places of one time.
 */
typedef struct place_reader {
	json_stream *js;
	size_t next;
	json_place *group;
	size_t ngroup, group_cap, group_next;
	json_place ahead; /* read from the sorter, of the next time */
	int has_ahead;
} place_reader;

static int spilled_place(place_reader *pr, json_place *place)
{
	uint64_t key;
	const void *rec;
	size_t len;
	int rc = tl_spill_sort_next(pr->js->spill, &key, &rec, &len);
	if (rc == 1)
		memcpy(place, rec, sizeof *place);
	return rc;
}

/* The next place: 1, 0 (none left) or -errno. */
static int next_place(place_reader *pr, json_place *place)
{
	json_stream *js = pr->js;
	if (!js->spill) {
		if (pr->next == js->nplaces)
			return 0;
		*place = js->places[pr->next++];
		return 1;
	}
	if (js->any_complete)
		return spilled_place(pr, place);
	if (pr->group_next == pr->ngroup) {
		pr->ngroup = pr->group_next = 0;
		int rc = pr->has_ahead ? 1 : spilled_place(pr, &pr->ahead);
		for (; rc == 1; rc = spilled_place(pr, &pr->ahead)) {
			if (pr->ngroup && pr->ahead.ts != pr->group[0].ts)
				break;
			json_place *g = grow_array(js->im, pr->group, &pr->group_cap,
			                           pr->ngroup + 1, sizeof *g);
			if (!g)
				return -ENOMEM;
			pr->group = g;
			g[pr->ngroup] = pr->ahead;
			g[pr->ngroup++].len_cls = (pr->ahead.len_cls & ~3u) | ORDER_OTHER;
		}
		if (rc < 0)
			return rc;
		pr->has_ahead = rc == 1;
		if (pr->ngroup > 1)
			qsort(pr->group, pr->ngroup, sizeof *pr->group, compare_place);
		if (!pr->ngroup)
			return 0;
	}
	*place = pr->group[pr->group_next++];
	return 1;
}

static int import_places(importer *im, json_stream *js, const file_bytes *file, tl_read_error *err)
{
	tl_json_trace one = {0};
	char *buf = NULL;
	size_t buf_cap = 0;
	place_reader pr = {.js = js};
	json_place next;
	int rc = js->spill ? tl_spill_sort_finish(js->spill) : 0;
	for (size_t i = 0; rc == 0 && !im->nomem; i++) {
		if ((rc = next_place(&pr, &next)) != 1)
			break;
		rc = 0;
		const json_place *place = &next;
		size_t len = place->len_cls >> 2;
		const char *bytes = file->data + place->offset;
		if (file->map_len) {
			if (len > buf_cap) {
				char *grown = realloc(buf, len);
				if (!grown) {
					rc = -ENOMEM;
					break;
				}
				buf = grown;
				buf_cap = len;
			}
			bytes = buf;
			rc = pread_full(file->fd, buf, len, place->offset, err);
		}
		if (rc == 0 && (rc = tl_json_read_event(bytes, len, &one)) == -EINVAL)
			rc = changed_while_read(err, place->offset);
		if (rc)
			break;
		import_json_event(im, &one, &one.events[0]);
		one.nevents = 0;
		one.nargs = 0;
		if (i % 1024 == 1023)
			tl_str_arena_reset(&one.strings);
	}
	free(pr.group);
	free(buf);
	tl_json_trace_free(&one);
	return rc;
}

/* A run read again, an event at a time: its bytes from the file in memory
 * (mem) or through a buffer of its own (pread), and its next placed event
 * (one.events[0], its place in key) while has is set. */
typedef struct json_cursor {
	uint64_t pos, end;
	const char *mem;
	char *buf;
	size_t cap, filled;
	uint64_t buf_off;
	tl_json_trace one;
	uint32_t next_order;
	size_t read;
	json_place key;
	int has;
} json_cursor;

/* Reads the file's bytes from c->pos into the buffer, as many as it takes
 * (doubled first when grow is set). 0, -ENOMEM or -EIO. */
static int cursor_fill(json_cursor *c, int fd, int grow, tl_read_error *err)
{
	if (grow) {
		char *bigger = c->cap <= SIZE_MAX / 2 ? realloc(c->buf, c->cap * 2) : NULL;
		if (!bigger)
			return -ENOMEM;
		c->buf = bigger;
		c->cap *= 2;
	}
	uint64_t left = c->end - c->pos;
	size_t want = left < c->cap ? (size_t)left : c->cap;
	int rc = pread_full(fd, c->buf, want, c->pos, err);
	if (rc)
		return rc;
	c->buf_off = c->pos;
	c->filled = want;
	return 0;
}

/* Moves c to the next placed event of its run (has 0 at its end). */
static int cursor_next(json_cursor *c, int fd, int any_complete, tl_read_error *err)
{
	c->one.nevents = 0;
	c->one.nargs = 0;
	c->has = 0;
	while (c->pos < c->end) {
		/* no event of this cursor is kept here: forget their strings now
		 * and then */
		if (++c->read % 1024 == 0)
			tl_str_arena_reset(&c->one.strings);
		const char *at = c->mem ? c->mem + c->pos : c->buf + (c->pos - c->buf_off);
		size_t avail =
		    c->mem ? (size_t)(c->end - c->pos) : (size_t)(c->buf_off + c->filled - c->pos);
		size_t used;
		int appended, rc = tl_json_read_next_event(at, avail, &used, &appended, &c->one);
		if (rc == -EAGAIN && !c->mem && avail < c->end - c->pos) {
			/* the event goes on past the buffer: read from its start,
			 * into a larger buffer when it filled this one */
			if ((rc = cursor_fill(c, fd, avail == c->cap, err)))
				return rc;
			continue;
		}
		if (rc == -EAGAIN || rc == -EINVAL)
			return changed_while_read(err, c->pos);
		if (rc)
			return rc;
		c->pos += used;
		if (!appended)
			continue; /* an empty {} */
		tl_json_event *e = &c->one.events[0];
		e->order = c->next_order++;
		if (!is_placed(e)) {
			c->one.nevents = 0;
			c->one.nargs = 0;
			continue;
		}
		int cls = any_complete ? event_class(e) : ORDER_OTHER;
		c->key = (json_place){.ts = e->ts,
		                      .dur = e->dur,
		                      .len_cls = (uint32_t)cls,
		                      .order = (uint32_t)e->order};
		c->has = 1;
		return 0;
	}
	return 0;
}

/* The heap of cursors (indices), the one whose event comes first on top. */
static int cursor_before(const json_cursor *c, size_t a, size_t b)
{
	return compare_place(&c[a].key, &c[b].key) < 0;
}

static void heap_down(const json_cursor *c, size_t *heap, size_t n, size_t i)
{
	for (;;) {
		size_t first = i, l = 2 * i + 1, r = l + 1;
		if (l < n && cursor_before(c, heap[l], heap[first]))
			first = l;
		if (r < n && cursor_before(c, heap[r], heap[first]))
			first = r;
		if (first == i)
			return;
		size_t t = heap[i];
		heap[i] = heap[first];
		heap[first] = t;
		i = first;
	}
}

/* The second pass through the runs: their events merged in order. */
static int import_runs(importer *im, const json_stream *js, const file_bytes *file,
                       tl_read_error *err)
{
	size_t k = js->nruns, n = 0;
	json_cursor *c = calloc(k + 1, sizeof *c);
	size_t *heap = calloc(k + 1, sizeof *heap);
	int rc = c && heap ? 0 : -ENOMEM;
	for (size_t i = 0; i < k && rc == 0; i++) {
		c[i].pos = js->runs[i].start;
		c[i].end = js->runs[i].end;
		c[i].next_order = js->runs[i].first_order;
		if (file->map_len) {
			c[i].cap = CURSOR_BYTES;
			c[i].buf = malloc(c[i].cap);
			c[i].buf_off = c[i].pos;
			if (!c[i].buf)
				rc = -ENOMEM;
		} else {
			c[i].mem = file->data;
		}
		if (rc == 0)
			rc = cursor_next(&c[i], file->fd, js->any_complete, err);
		if (rc == 0 && c[i].has)
			heap[n++] = i;
	}
	for (size_t i = n / 2; rc == 0 && i-- > 0;)
		heap_down(c, heap, n, i);
	while (rc == 0 && n > 0 && !im->nomem) {
		json_cursor *top = &c[heap[0]];
		import_json_event(im, &top->one, &top->one.events[0]);
		rc = cursor_next(top, file->fd, js->any_complete, err);
		if (!top->has)
			heap[0] = heap[--n];
		heap_down(c, heap, n, 0);
	}
	for (size_t i = 0; c && i < k; i++) {
		free(c[i].buf);
		tl_json_trace_free(&c[i].one);
	}
	free(c);
	free(heap);
	return rc;
}

static int stream_json(file_bytes *file, const tl_import_sink *sink, tl_import *out,
                       tl_read_error *err)
{
	importer im;
	json_stream js = {.im = &im, .data = file->data};
	tl_json_trace json;
	int rc = importer_start(&im, out, sink);
	if (rc == 0 && sink) {
		/* memory is what is open: the index goes to a temporary file */
		js.spill = tl_spill_sort_new(SPILL_BUDGET, NULL);
		rc = js.spill ? tl_spill_sort_set_tie(js.spill, compare_spilled_place, NULL)
		              : -ENOMEM;
	}
	if (rc == 0)
		rc = tl_json_scan(file->data, file->len, file->map_len != 0, place_event, &js,
		                  &json, err);
	if (rc == 0 && js.spill && js.too_many_runs) {
		/* the 257th run began with no event placed after it */
		tl_json_trace_free(&json);
		js.handled_before = UINT64_MAX;
		rc = STREAM_RESCAN;
	}
	if (rc == STREAM_RESCAN) {
		js.index_all = 1;
		js.any_complete = 0;
		rc = tl_json_scan(file->data, file->len, file->map_len != 0, place_event, &js,
		                  &json, err);
	}
	if (rc == -E2BIG && js.whole) {
		rc = STREAM_WHOLE;
	} else if (rc == 0 && json.has_system_text) {
		rc = STREAM_WHOLE;
		tl_json_trace_free(&json);
	} else if (rc == 0) {
		out->clock = json.clock;
		if (json.clock)
			out->clock_values = json.clock_values;
		out->stats[TL_STAT_JSON_EMPTY_EVENT] += json.empty_events;
		out->stats[TL_STAT_JSON_DISPLAY_TIME_UNIT] += json.display_time_unit;
		/* as tl_import_build does after the events: the counts and clock
		 * of the (here empty) systemTraceEvents text */
		size_t none = 0;
		add_lines(&json.system, NULL, &none, json.nevents, out);
		tl_json_trace_free(&json);
		if (!js.too_many_runs) {
			/* the index is not needed: give it back before the import grows */
			free_places(&js);
			tl_spill_sort_free(js.spill);
			js.spill = NULL;
			out->reading = TL_READING_JSON_RUNS;
			out->json_runs = js.nruns;
			rc = import_runs(&im, &js, file, err);
		} else {
			if (!js.any_complete && !js.spill) {
				for (size_t i = 0; i < js.nplaces; i++)
					js.places[i].len_cls =
					    (js.places[i].len_cls & ~3u) | ORDER_OTHER;
			}
			if (js.nplaces > 1)
				qsort(js.places, js.nplaces, sizeof *js.places, compare_place);
			out->reading = TL_READING_JSON_INDEX;
			rc = import_places(&im, &js, file, err);
		}
	}
	free_places(&js);
	if (js.spill && rc < 0 && rc != -ENOMEM && !err->message[0])
		snprintf(err->message, sizeof err->message,
		         "the index of the events, kept in a temporary file: %s", strerror(-rc));
	tl_spill_sort_free(js.spill);
	if (rc == STREAM_WHOLE) {
		importer_finish(&im, -ECANCELED); /* frees what the first pass imported */
		return STREAM_WHOLE;
	}
	rc = importer_finish(&im, rc);
	if (rc == -ENOMEM && !err->message[0])
		snprintf(err->message, sizeof err->message, "out of memory");
	return rc;
}

/* The sink forgets what a read it is given up for handed on. */
static void sink_restart(const tl_import_sink *sink)
{
	if (sink && sink->restart)
		sink->restart(sink->ctx);
}

static int import_loaded(file_bytes *loaded, const tl_import_sink *sink,
                         const tl_symbol_options *symbols, tl_import *out, tl_trace_format *format,
                         tl_read_error *err);

/* The file at path (a regular file's text streamed, the rest loaded). */
static int read_file(const char *path, const tl_import_sink *sink, const tl_symbol_options *symbols,
                     tl_import *out, tl_trace_format *format, tl_read_error *err)
{
	int rc = stream_ftrace_file(path, sink, out);
	if (rc <= 0) {
		if (format)
			*format = TL_TRACE_FORMAT_FTRACE;
		return rc;
	}
	if (rc == STREAM_UNSORTED)
		sink_restart(sink);
	file_bytes file;
	if (load_file(path, &file) != 0)
		return -errno;
	return import_loaded(&file, sink, symbols, out, format, err);
}

/* Imports a file's bytes, whatever their format, and gives them back. */
static int import_loaded(file_bytes *loaded, const tl_import_sink *sink,
                         const tl_symbol_options *symbols, tl_import *out, tl_trace_format *format,
                         tl_read_error *err)
{
	file_bytes file = *loaded;
	const char *data = file.data;
	size_t len = file.len;
	int rc;

	size_t blanks = 0;
	while (blanks < len && strchr(" \t\n\v\f\r", data[blanks]) && data[blanks])
		blanks++;
	tl_trace_format kind =
	    blanks == len ? TL_TRACE_FORMAT_UNKNOWN : tl_trace_format_sniff(data, len);
	if (format)
		*format = kind;
	switch (kind) {
	case TL_TRACE_FORMAT_JSON: {
		rc = stream_json(&file, sink, out, err);
		if (rc != STREAM_WHOLE)
			break;
		sink_restart(sink);
		tl_json_trace json;
		/* A mapped file is given back as it is read. */
		rc = file.map_len ? tl_json_read_mapped(data, len, &json, err)
		                  : tl_json_read(data, len, &json, err);
		/* The trace holds copies of what it needs: the file can go
		 * before the import, which is the peak. */
		unload_file(&file);
		if (rc == 0) {
			rc = build_import(NULL, &json, sink, out);
			tl_json_trace_free(&json);
		}
		break;
	}
	case TL_TRACE_FORMAT_FTRACE: {
		tl_ftrace_text text;
		rc = tl_ftrace_text_read(data, len, 0, &text, err);
		if (rc == 0) {
			rc = build_import(&text, NULL, sink, out);
			tl_ftrace_text_free(&text);
		}
		break;
	}
	case TL_TRACE_FORMAT_PERFETTO: {
		tl_perfetto_trace trace;
		rc = tl_perfetto_read(data, len, &trace, err);
		unload_file(&file);
		if (rc == 0) {
			rc = import_perfetto(&trace, sink, out);
			tl_perfetto_trace_free(&trace);
		}
		break;
	}
	case TL_TRACE_FORMAT_BINARY:
		rc = import_snapshot(data, len, sink, symbols, out, err->message,
		                     sizeof err->message);
		break;
	default:
		if (len == 0)
			snprintf(err->message, sizeof err->message,
			         "empty file: it holds no events");
		else if (blanks == len)
			snprintf(err->message, sizeof err->message,
			         "nothing but white space (%zu bytes): it holds no events", len);
		else
			snprintf(
			    err->message, sizeof err->message,
			    "not a trace: neither Chrome JSON, a Perfetto trace, ftrace text nor "
			    "a timeline snapshot");
		rc = -EINVAL;
		break;
	}
	unload_file(&file);
	return rc;
}

/*
 * Reads the file at path, or the bytes already read when data is not NULL
 * (freed here), into out, handing the items to sink when there is one;
 * err (may be NULL) says what went wrong, the sink's error too.
 */
static int read_source(const char *path, char *data, size_t len, const tl_import_sink *sink,
                       const tl_symbol_options *symbols, tl_import *out, tl_trace_format *format,
                       tl_read_error *err)
{
	tl_read_error scratch;
	if (!err)
		err = &scratch;
	memset(err, 0, sizeof *err);
	memset(out, 0, sizeof *out);
	file_bytes file = {.data = data, .len = len, .fd = -1};
	int rc = data ? import_loaded(&file, sink, symbols, out, format, err)
	              : read_file(path, sink, symbols, out, format, err);
	if (rc && out->sink_failed)
		snprintf(err->message, sizeof err->message, "%s: %s",
		         sink->what ? sink->what : "handing the items on", strerror(-rc));
	return rc;
}

int tl_import_read_file(const char *path, tl_import *out, tl_trace_format *format,
                        tl_read_error *err)
{
	return read_source(path, NULL, 0, NULL, NULL, out, format, err);
}

int tl_import_read_file_to(const char *path, const tl_import_sink *sink,
                           const tl_symbol_options *symbols, tl_import *out,
                           tl_trace_format *format, tl_read_error *err)
{
	return read_source(path, NULL, 0, sink, symbols, out, format, err);
}

int tl_import_read_bytes_to(char *data, size_t len, const tl_import_sink *sink,
                            const tl_symbol_options *symbols, tl_import *out,
                            tl_trace_format *format, tl_read_error *err)
{
	return read_source(NULL, data, len, sink, symbols, out, format, err);
}

/* ------------------------------------------------------------------------ */
/* To a trace model */

typedef struct model_builder {
	tl_model *model;
	const tl_import *imp;
	size_t *event_of_slice;
	int nomem;
	/*
	 * Keyed: each event's seq is set when it is made, to the place it
	 * would have in the order the events are made by tl_import_to_model
	 * (slices, counters, flows), which breaks ties in the sort; so the
	 * events can be made in another order with the same result. next_key
	 * is the key of the next event made.
	 */
	int keyed;
	uint64_t next_key;
} model_builder;

static uint32_t stored_pid(const tl_model *model, uint32_t pid)
{
	return pid == model->pid ? 0 : pid;
}

static tl_model_event *model_add(model_builder *b, char phase, int64_t ts, uint32_t pid,
                                 uint32_t tid, const char *name, const char *cat)
{
	tl_model_event *ev = tl_model_event_append(b->model);
	if (!ev) {
		b->nomem = 1;
		return NULL;
	}
	ev->phase = phase;
	ev->ts_ns = ts;
	ev->pid = stored_pid(b->model, pid);
	ev->tid = tid ? tid : pid;
	ev->name = name ? tl_model_intern(b->model, name, strlen(name)) : NULL;
	ev->cat = cat ? tl_model_intern(b->model, cat, strlen(cat)) : NULL;
	if ((name && !ev->name) || (cat && !ev->cat))
		b->nomem = 1;
	if (ev->end_ns < ts)
		ev->end_ns = ts; /* a counter's value replaces it (one union) */
	if (ts > b->model->snapshot_ns)
		b->model->snapshot_ns = ts;
	if (b->keyed)
		ev->seq = (uint32_t)b->next_key++;
	return ev;
}

static void model_add_slice(model_builder *b, size_t index)
{
	const tl_import *imp = b->imp;
	const tl_import_slice *s = &imp->slices[index];
	const tl_import_track *t = &imp->tracks[s->track];
	uint32_t pid = tl_import_slice_pid(imp, s);
	uint32_t tid = tl_import_slice_tid(imp, s);
	size_t first = b->model->nevents;
	tl_model_event *ev;

	switch (s->kind) {
	case TL_IMPORT_SLICE:
		ev = model_add(b, s->dur >= 0 ? TL_PHASE_COMPLETE : TL_PHASE_BEGIN, s->ts, pid, tid,
		               s->name, s->cat);
		if (ev && s->dur >= 0) {
			ev->end_ns = slice_end(s);
			if (ev->end_ns > b->model->snapshot_ns)
				b->model->snapshot_ns = ev->end_ns;
		}
		break;
	case TL_IMPORT_INSTANT:
		ev = model_add(b, TL_PHASE_INSTANT, s->ts, pid, tid, s->name,
		               t->name[0] ? t->name : s->cat);
		if (ev)
			ev->scope = t->scope == TL_IMPORT_SCOPE_GLOBAL    ? TL_EVENT_SCOPE_GLOBAL
			            : t->scope == TL_IMPORT_SCOPE_PROCESS ? TL_EVENT_SCOPE_PROCESS
			                                                  : TL_EVENT_SCOPE_THREAD;
		break;
	default: /* TL_IMPORT_ASYNC */
		if (!pid)
			pid = b->model->pid;
		ev = model_add(b, TL_PHASE_ASYNC_BEGIN, s->ts, pid, 0, s->name, s->cat);
		if (ev)
			ev->id = s->track + 1;
		if (ev && s->dur >= 0) {
			tl_model_event *end =
			    model_add(b, TL_PHASE_ASYNC_END, slice_end(s), pid, 0, s->name, s->cat);
			if (end)
				end->id = s->track + 1;
		}
		break;
	}
	b->event_of_slice[index] = ev ? first : TL_IMPORT_NONE;
}

/*
 * Gives each event that has args room for them (TL_MAX_ARGS at most) in
 * the model's arena, so that the others take none: nargs counts them
 * here, and is set back to 0 for model_add_arg to fill.
 */
static void model_reserve_args(model_builder *b)
{
	const tl_import *imp = b->imp;
	tl_model *model = b->model;
	for (size_t i = 0; i < imp->nargs; i++) {
		size_t index = b->event_of_slice[imp->args[i].slice];
		if (index != TL_IMPORT_NONE && model->events[index].nargs < TL_MAX_ARGS)
			model->events[index].nargs++;
	}
	for (size_t i = 0; i < model->nevents && !b->nomem; i++) {
		tl_model_event *ev = &model->events[i];
		unsigned n = ev->nargs;
		ev->nargs = 0;
		if (n && tl_model_event_args_alloc(model, ev, n))
			b->nomem = 1;
	}
}

static void model_add_arg(model_builder *b, const tl_import_arg *a)
{
	size_t index = b->event_of_slice[a->slice];
	if (index == TL_IMPORT_NONE)
		return;
	tl_model_event *ev = &b->model->events[index];
	if (ev->nargs >= TL_MAX_ARGS) {
		b->model->stats.args_dropped++;
		return;
	}
	const char *key = a->key;
	if (strncmp(key, "args.", 5) == 0)
		key += 5;
	tl_model_arg *arg = &ev->args[ev->nargs++];
	arg->key = tl_model_intern(b->model, key, strlen(key));
	switch (a->value.type) {
	case TL_JSON_DOUBLE:
		arg->type = TL_ARG_DOUBLE;
		arg->v.d = a->value.d;
		break;
	case TL_JSON_STRING:
		arg->type = TL_ARG_STRING;
		arg->v.s = tl_model_intern(b->model, a->value.s, strlen(a->value.s));
		if (!arg->v.s)
			b->nomem = 1;
		break;
	default:
		arg->type = TL_ARG_INT;
		arg->v.i = a->value.i;
		break;
	}
	if (!arg->key)
		b->nomem = 1;
}

/*
 * Both ends carry the out slice's name and cat: the JSON exporter writes flow
 * v1 events, which viewers join by cat, name and id.
 */
static void model_add_flow(model_builder *b, size_t index)
{
	const tl_import *imp = b->imp;
	const tl_import_flow *f = &imp->flows[index];
	const tl_import_slice *from = &imp->slices[f->out];
	const tl_import_slice *to = &imp->slices[f->in];
	tl_model_event *ev =
	    model_add(b, TL_PHASE_FLOW_BEGIN, from->ts, tl_import_slice_pid(imp, from),
	              tl_import_slice_tid(imp, from), from->name, from->cat);
	if (ev) {
		ev->id = index + 1;
		ev->scope = TL_EVENT_SCOPE_GLOBAL;
	}
	ev = model_add(b, TL_PHASE_FLOW_END, to->ts, tl_import_slice_pid(imp, to),
	               tl_import_slice_tid(imp, to), from->name, from->cat);
	if (ev) {
		ev->id = index + 1;
		ev->scope = TL_EVENT_SCOPE_GLOBAL;
	}
}

static int compare_model_event(const void *pa, const void *pb)
{
	const tl_model_event *a = pa, *b = pb;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->ts_ns != b->ts_ns)
		return a->ts_ns < b->ts_ns ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Orders events by (pid, tid, ts, creation) and numbers them; keyed: seq
 * already holds the creation order. */
static void sort_model_events(tl_model *model, int keyed)
{
	if (model->nevents == 0)
		return; /* events may be NULL: qsort must not see it */
	for (size_t i = 0; i < model->nevents && !keyed; i++)
		model->events[i].seq = (uint32_t)i;
	qsort(model->events, model->nevents, sizeof *model->events, compare_model_event);
	for (size_t i = 0; i < model->nevents; i++)
		model->events[i].seq = i;
}

/* The model's header: clock, processes and threads. 0 or -ENOMEM. */
static int model_begin(model_builder *b)
{
	const tl_import *imp = b->imp;
	tl_model *out = b->model;
	out->pid = imp->nprocesses ? imp->processes[0].pid
	           : imp->nthreads ? imp->threads[0].pid
	                           : 0;
	out->clock_id = imp->clock == TL_TRACE_CLOCK_BOOT   ? 7
	                : imp->clock == TL_TRACE_CLOCK_MONO ? 1
	                                                    : TL_MODEL_CLOCK_UNKNOWN;
	if (imp->clock_values.known) {
		out->boottime_ns = imp->clock_values.boottime_ns;
		out->monotonic_ns = imp->clock_values.monotonic_ns;
		out->realtime_ns = imp->clock_values.realtime_ns;
	}
	out->complete = 1;
	out->recorder = tl_model_intern(out, "import", 6);
	b->event_of_slice = malloc((imp->nslices + 1) * sizeof *b->event_of_slice);
	if (!out->recorder || !b->event_of_slice)
		return -ENOMEM;

	for (size_t i = 0; i < imp->nprocesses; i++) {
		const tl_import_process *p = &imp->processes[i];
		if (p->name && tl_model_process_set(out, p->pid, p->name, strlen(p->name)))
			return -ENOMEM;
	}
	if (imp->nprocesses && imp->processes[0].name)
		out->process_name = tl_model_process_name(out, out->pid);
	for (size_t i = 0; i < imp->nthreads; i++) {
		const tl_import_thread *t = &imp->threads[i];
		uint32_t tid = t->tid ? t->tid : t->pid;
		if (t->name && tl_model_thread_set_in(out, t->pid, tid, t->name, strlen(t->name)))
			return -ENOMEM;
	}
	return 0;
}

static void model_add_args(model_builder *b)
{
	if (!b->nomem)
		model_reserve_args(b);
	for (size_t i = 0; i < b->imp->nargs && !b->nomem; i++)
		model_add_arg(b, &b->imp->args[i]);
}

static void model_add_counters(model_builder *b)
{
	const tl_import *imp = b->imp;
	for (size_t i = 0; i < imp->ncounters && !b->nomem; i++) {
		const tl_import_counter *c = &imp->counters[i];
		const tl_import_track *t = &imp->tracks[c->track];
		uint32_t pid = t->pid ? t->pid : b->model->pid;
		tl_model_event *ev = model_add(b, TL_PHASE_COUNTER, c->ts, pid, pid, t->name, NULL);
		if (ev) {
			ev->counter_is_double = 1;
			ev->counter_d = c->value;
		}
	}
}

static int model_finish(model_builder *b)
{
	free(b->event_of_slice);
	b->event_of_slice = NULL;
	if (b->nomem) {
		tl_model_free(b->model);
		return -ENOMEM;
	}
	sort_model_events(b->model, b->keyed);
	b->model->stats.events_written = b->model->nevents;
	return 0;
}

int tl_import_to_model(const tl_import *imp, tl_model *out)
{
	memset(out, 0, sizeof *out);
	model_builder b = {.model = out, .imp = imp};
	if (model_begin(&b))
		b.nomem = 1;
	for (size_t i = 0; i < imp->nslices && !b.nomem; i++)
		model_add_slice(&b, i);
	model_add_args(&b);
	model_add_counters(&b);
	for (size_t i = 0; i < imp->nflows && !b.nomem; i++)
		model_add_flow(&b, i);
	return model_finish(&b);
}

/* Slices are given back in steps of at least this many bytes. */
#define SLICES_RELEASE_BYTES (4u << 20)

int tl_import_move_to_model(tl_import *imp, tl_model *out)
{
	memset(out, 0, sizeof *out);
	/* keys: two per slice (an async slice makes two events), then one
	 * per counter, two per flow */
	uint64_t keys = 2 * (uint64_t)imp->nslices + imp->ncounters + 2 * (uint64_t)imp->nflows;
	if (keys > UINT32_MAX) {
		int rc = tl_import_to_model(imp, out);
		tl_import_free(imp);
		return rc;
	}
	import_free_building(imp);
	model_builder b = {.model = out, .imp = imp, .keyed = 1};
	if (model_begin(&b))
		b.nomem = 1;
	/* the flows first, while their slices are there */
	b.next_key = 2 * (uint64_t)imp->nslices + imp->ncounters;
	for (size_t i = 0; i < imp->nflows && !b.nomem; i++)
		model_add_flow(&b, i);
	/* then the slices from the last, the array shrinking behind them */
	size_t held = imp->nslices;
	for (size_t i = imp->nslices; i-- > 0 && !b.nomem;) {
		b.next_key = 2 * (uint64_t)i;
		model_add_slice(&b, i);
		if ((held - i) * sizeof *imp->slices >= SLICES_RELEASE_BYTES) {
			tl_import_slice *kept = realloc(imp->slices, (i ? i : 1) * sizeof *kept);
			if (kept) {
				imp->slices = kept;
				held = i;
			}
		}
	}
	free(imp->slices);
	imp->slices = NULL;
	imp->nslices = 0;
	model_add_args(&b);
	b.next_key = keys - 2 * (uint64_t)imp->nflows - imp->ncounters;
	model_add_counters(&b);
	int rc = model_finish(&b);
	tl_import_free(imp);
	return rc;
}
