/*
 * Several traces on one timeline: what each trace says about its clock,
 * and the offset that puts its timestamps on a clock they all can reach
 * (`timeline merge`, docs/reading.md). Offline code; not signal-safe.
 *
 * The clocks are nodes: boot, mono and realtime; the unnamed clock of each
 * trace that names none (a kernel's trace file); and the trace clock of
 * each process that wrote a parent_ts marker or that an in-process trace
 * records. What a trace says links them, each link an offset and how far
 * off it may be:
 *
 *   - its clock: a trace on boot or mono is on that node;
 *   - its clock values (a snapshot's CLOCK chunk, the exporters' metadata):
 *     boot, mono and realtime read at one instant, within 1 us;
 *   - an in-process trace (a snapshot, or JSON written from one): its
 *     clock is the trace clock of every process it records;
 *   - a parent_ts clock sync marker: the trace's clock at the marker's
 *     timestamp against the trace clock of the process that wrote it,
 *     within 5 us (the write's latency, the text's microseconds); a value
 *     of 0 (Perfetto's export writes it to say the clocks are already one)
 *     links nothing. The writer is the process the trace gives it, else
 *     the one an in-process trace records a thread of that tid in, else
 *     the process whose id is that tid (the thread that starts a recorder
 *     is most often the main thread);
 *   - a realtime_ts marker: against realtime, within 1 ms.
 *
 * A trace is put on the timeline by the path of links with the smallest
 * sum of those bounds. The timeline is the first trace's clock when it
 * names one and every trace reaches it; else boot, else mono, else the
 * first trace's unnamed clock.
 */
#ifndef TIMELINE_CLOCK_ALIGN_H
#define TIMELINE_CLOCK_ALIGN_H

#include <stddef.h>
#include <stdint.h>

#include "recorder/export/trace_model.h"
#include "tools/readers/trace_import.h"

/* What one trace says about its clock. */
typedef struct tl_align_trace {
	const char *name; /* for messages: its file */
	tl_trace_clock clock;
	tl_clock_values values;
	/* A trace recorded in its processes (a snapshot, or JSON written from
	 * one): its clock is their trace clock. NULL for a capture. */
	const tl_model *model;
	const tl_import_clock_sync *syncs;
	size_t nsyncs;
} tl_align_trace;

typedef struct tl_align_result {
	int64_t offset_ns; /* timestamp + offset_ns = the timeline's clock */
	int64_t error_ns;  /* the sum of the bounds of the links used */
	char how[160];     /* "as is", or the links used, for the summary */
} tl_align_result;

enum { TL_ALIGN_BOOT, TL_ALIGN_MONO, TL_ALIGN_REALTIME, TL_ALIGN_CLOCKS };

typedef struct tl_align_timeline {
	tl_trace_clock clock; /* TL_TRACE_CLOCK_UNKNOWN: an unnamed clock */
	/* boot, mono and realtime where the timeline reaches them:
	 * that clock = timeline + to_clock_ns */
	int known[TL_ALIGN_CLOCKS];
	int64_t to_clock_ns[TL_ALIGN_CLOCKS];
} tl_align_timeline;

/*
 * Puts traces[0..n) on one timeline: out[i] for trace i, *timeline for the
 * clock chosen. Returns 0; -EDOM when two traces share no clock they can
 * be aligned through, with why (may be NULL) naming both and what each
 * lacks; -ENOMEM.
 */
int tl_clock_align(const tl_align_trace *traces, size_t n, tl_align_result *out,
                   tl_align_timeline *timeline, char *why, size_t whylen);

#endif /* TIMELINE_CLOCK_ALIGN_H */
