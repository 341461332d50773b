/*
 * The looper tracer's shared internals: the loop structure, the string
 * builder the reports use, the call tree of a slow dispatch. Not installed.
 */
#ifndef TIMELINE_LOOPER_INTERNAL_H
#define TIMELINE_LOOPER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <timeline/looper.h>
#include <timeline/timeline.h>

#include "recorder/tracer.h"

#pragma GCC visibility push(hidden)

/* Branch hints, spelled as the core spells them. */
#define TL_LIKELY(x) __builtin_expect(!!(x), 1)
#define TL_UNLIKELY(x) __builtin_expect(!!(x), 0)

#define LOOPER_NAME_MAX 256 /* copied dispatch names, terminator included */
#define LOOPER_PATH_MAX 4096

/* One past dispatch. Written by the loop's thread, read by the watchdog
 * (the loop's history_written tells which slots are stable). Small, so that
 * the slots a loop cycles through stay in the cache; a copied name is in
 * the loop's history_copy, at the slot's index. */
struct looper_history_slot {
	_Atomic(const char *) name; /* kept name, or NULL: the slot's copy */
	_Atomic uint64_t begin_ts;  /* raw timestamps */
	_Atomic uint64_t end_ts;
};

struct tl_looper {
	/* ---- shared with the watchdog: atomics only ---- */
	_Atomic uint64_t seq;             /* 2 * dispatches begun, +1 inside one */
	_Atomic uint64_t begin_ts;        /* raw start of the current dispatch */
	_Atomic(const char *) what;       /* its name: kept, or name_copy */
	_Atomic uint32_t name_seq;        /* odd while name_copy is written */
	_Atomic uint32_t tid;             /* the loop's thread, 0 before it ran */
	_Atomic uint64_t history_written; /* slots written so far */
	_Atomic uint64_t stat_frames, stat_malformed, stat_unbalanced,
	    stat_slow;                                      /* written by the loop's thread */
	_Atomic uint64_t stat_lag, stat_anr, stat_doubtful; /* written by the watchdog */
	char name_copy[LOOPER_NAME_MAX];                    /* __atomic builtins */

	/* ---- the loop's thread only ---- */
	unsigned depth;
	bool idle;
	bool frame;
	bool begin_recorded;
	bool hooks; /* observers or measure_cpu_time: the dispatch's slow part */
	struct tl_thread_mark mark; /* at the dispatch's begin record */
	int64_t cpu_begin_ns;
	int64_t observed_begin_ns; /* as given to observers, -1 when not (reset by end_rare) */
	pthread_t owner;
	tl_looper_observer observers[TL_LOOPER_MAX_OBSERVERS];
	unsigned nobservers;
	struct looper_history_slot *history;
	char *history_copy; /* LOOPER_NAME_MAX per slot; __atomic builtins */
	struct looper_history_slot *history_cur;  /* the slot the next dispatch writes */
	struct looper_history_slot *history_last; /* the ring's last slot */
	uint64_t history_count; /* slots written so far: history_written's value */

	/* ---- set at creation ---- */
	const tl_category *cat;
	char *name;
	char *dump_directory;
	int64_t anr_ns, lag_ns, slow_ns, doubtful_ns, tree_min_node_ns;
	uint64_t slow_ticks; /* a raw span below it is not slow (any clock) */
	uint64_t rare_ticks; /* slow_ticks, 0 with hooks: a span from it ends rarely */
	size_t tree_max_nodes;
	size_t history_size;
	tl_looper_dump_format dump_format;
	bool measure_cpu_time;
	tl_looper_report_fn on_report;
	void *user;

	/* ---- the watchdog only (under its lock) ---- */
	struct tl_looper *next;
	bool orphaned;        /* fork child: the loop's thread is gone */
	uint64_t watched_seq; /* the dispatch it last saw */
	bool lag_done, anr_done;
	int64_t watched_offset_ns; /* boot - monotonic before the dispatch began */
	int64_t watched_cpu_ns;    /* thread CPU when first seen, -1 unknown */
};

/* ---- strings (looper_report.c) ---- */
struct looper_buf {
	char *data;
	size_t len, cap;
	bool failed; /* out of memory: data stays terminated */
};
void looper_buf_add(struct looper_buf *b, const char *s, size_t n);
void looper_buf_str(struct looper_buf *b, const char *s);
void looper_buf_printf(struct looper_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A JSON string literal, quotes included. */
void looper_buf_json_string(struct looper_buf *b, const char *s);
void looper_buf_free(struct looper_buf *b);

/* Fills r->json from the other fields. */
void looper_report_json(tl_looper_report *r, struct looper_buf *out);

/* The loop's history, oldest first, names copied into *names (owned by the
 * caller, freed with free()). Any thread. */
size_t looper_history_read(const struct tl_looper *l, tl_looper_history_entry **entries,
                           char **names);

/* ---- the slow-dispatch tree (looper_tree.c) ---- */
struct looper_tree_result {
	struct looper_buf text, json, key;
	size_t events;
};
/* Builds, trims and formats the tree of the records in copy, under a root
 * named `root` lasting [begin_ns, end_ns]. skip_first / skip_last drop the
 * dispatch's own begin and end records. */
void looper_tree_build(const struct tl_looper *l, const uint64_t *words, size_t nwords,
                       bool skip_first, bool skip_last, const char *root, int64_t begin_ns,
                       int64_t end_ns, struct looper_tree_result *out);

#pragma GCC visibility pop

#endif /* TIMELINE_LOOPER_INTERNAL_H */
