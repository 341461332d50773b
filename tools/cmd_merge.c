/*
 * `timeline merge IN... -o OUT [--format json|ftrace|perfetto]`: joins traces -
 * binary snapshots (a file recorder's rotation too), Chrome JSON, ftrace
 * text, `trace-cmd report` output, Perfetto traces - on one timeline and
 * writes them as one Chrome JSON, ftrace text or Perfetto file
 * (docs/reading.md, "merge").
 *
 *   1. Each input is read as `timeline convert` reads it: a snapshot into
 *      a model, the others through the importer (tools/readers/trace_import.h).
 *   2. What each says about its clock - its clock's name, the clocks read
 *      together, its clock sync markers - puts it on one timeline
 *      (tools/readers/clock_align.h), or the command refuses, naming the
 *      two inputs and what each lacks.
 *   3. An event of a capture that is also an event of an in-process trace
 *      (see below) is dropped: the in-process one says more.
 *   4. Every event goes into one model, moved by its input's offset, with
 *      its pid and tid as they were; the exporters write it.
 *
 * The same event in two inputs: an in-process input is a snapshot, or
 * Chrome JSON or a Perfetto trace that names its clock and gives the clock
 * values (written from a snapshot); every other input is a capture, whose events
 * come from trace_marker writes. An event of a capture is the same as an
 * event of an in-process input when both are of the same process, the
 * same kind - slice start (a begin or complete event), instant, counter
 * sample, async begin -, the same thread (slices, thread instants), the
 * same name once cleaned as a marker name is (a JSON counter's without the
 * " value" the importer names it with: event_name_len), and their timestamps on the
 * timeline are at most the window apart (100 us, the systrace recorder's
 * live window; --dedup-window). Matching goes in time order, each event
 * matched once; a capture's dropped async begin takes its end with it.
 */
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/output_format.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recorder/atomic_file.h"
#include "recorder/atrace_format.h"
#include "recorder/export/perfetto_proto.h"
#include "recorder/export/trace_model.h"
#include "recorder/snapshot_format.h"
#include "tools/readers/clock_align.h"
#include "tools/readers/trace_import.h"

#define MERGE_PREFIX "timeline merge"
#define DEFAULT_WINDOW_NS (100 * 1000)
/* An alignment this loose is said out loud. */
#define LOOSE_ALIGNMENT_NS (1000 * 1000)

static const char merge_usage[] =
    "usage: timeline merge IN IN... -o OUT [--format json|ftrace|perfetto] [options]\n"
    "\n"
    "Joins traces on one timeline and writes them as one: binary snapshots (the files\n"
    "of a file recorder's rotation as one argument, oldest first, joined with commas:\n"
    "PATH.2,PATH.1,PATH), Chrome JSON, ftrace text, trace-cmd report output and\n"
    "Perfetto traces, recognised by content. Traces on the same clock are taken as\n"
    "they are; traces on different clocks are aligned through what each says: its\n"
    "clock's name, the boot, mono and realtime clocks it read together, its\n"
    "trace_event_clock_sync markers.\n"
    "Two traces that cannot be tied to a common clock are refused. Process and thread\n"
    "ids are kept; an event a capture shares with an in-process trace is shown once.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT        the file to write; '-' for standard output\n"
    "  -f, --format FORMAT     json, ftrace or perfetto; without it, from OUT's\n"
    "                          extension: .txt, .ftrace, .systrace give ftrace,\n"
    "                          .perfetto-trace, .pftrace, .pb give perfetto, anything\n"
    "                          else json\n"
    "  --assume-clock CLOCK    boot or mono: the clock of the inputs that name none\n"
    "                          (a kernel's trace file, trace-cmd report output)\n"
    "  --dedup-window US       how far apart, in microseconds, a capture's event and an\n"
    "                          in-process event may be to be the same (default 100)\n"
    "  --keep-duplicates       keep both copies of an event found in two inputs\n"
    "  --mode MODE             OUT's permission bits, octal (default 0600: private)\n"
    "  -h, --help              print this help\n"
    "\n" TL_CLI_SYMBOL_USAGE;

#define usage_error(...) tl_cli_usage_error(MERGE_PREFIX, __VA_ARGS__)

struct merge_args {
	char **inputs;
	size_t ninputs;
	const char *output;
	const tl_output_format *format; /* NULL: from the output's extension */
	tl_trace_clock assume_clock;
	int64_t window_ns;
	int keep_duplicates;
	int help;
	tl_symbol_options symbols; /* which files name a snapshot's functions */
};

enum { OPT_ASSUME_CLOCK = 256, OPT_DEDUP_WINDOW, OPT_KEEP_DUPLICATES };

/* Returns 0, or the exit status of a usage error (already reported). */
static int parse_args(int argc, char **argv, struct merge_args *args)
{
	static const struct option options[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"format", required_argument, NULL, 'f'},
	    {"assume-clock", required_argument, NULL, OPT_ASSUME_CLOCK},
	    {"dedup-window", required_argument, NULL, OPT_DEDUP_WINDOW},
	    {"keep-duplicates", no_argument, NULL, OPT_KEEP_DUPLICATES},
	    TL_CLI_MODE_LONG_OPTION,
	    {"help", no_argument, NULL, 'h'},
	    TL_CLI_SYMBOL_LONG_OPTIONS,
	    {NULL, 0, NULL, 0},
	};
	optind = 1;
	opterr = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, ":o:f:h", options, NULL)) != -1) {
		switch (opt) {
		case 'o':
			args->output = optarg;
			break;
		case 'f':
			args->format = tl_output_format_by_name(optarg);
			if (!args->format)
				return usage_error("--format: expected json, ftrace or perfetto, got '%s'",
				                   optarg);
			break;
		case OPT_ASSUME_CLOCK:
			if (tl_cli_parse_assume_clock(MERGE_PREFIX, "--assume-clock", optarg,
			                              &args->assume_clock))
				return 2;
			break;
		case TL_CLI_OPT_MODE:
			if (tl_cli_parse_mode(MERGE_PREFIX, optarg))
				return 2;
			break;
		case OPT_DEDUP_WINDOW: {
			char *end;
			double us = strtod(optarg, &end);
			if (end == optarg || *end || !(us >= 0 && us <= 1e9))
				return usage_error("--dedup-window: expected microseconds (0 to "
				                   "1000000000), got '%s'",
				                   optarg);
			args->window_ns = (int64_t)(us * 1000 + 0.5);
			break;
		}
		case OPT_KEEP_DUPLICATES:
			args->keep_duplicates = 1;
			break;
		case 'h':
			args->help = 1;
			return 0;
		default:
			if (tl_cli_is_symbol_option(opt)) {
				if (tl_cli_symbol_option(MERGE_PREFIX, opt, optarg, &args->symbols))
					return 2;
				break;
			}
			return tl_cli_option_error(MERGE_PREFIX, opt, argv); /* ':' or '?' */
		}
	}
	args->inputs = argv + optind;
	args->ninputs = (size_t)(argc - optind);
	if (args->ninputs < 2)
		return usage_error("expected at least two inputs, got %zu ('timeline convert' "
		                   "reads one)",
		                   args->ninputs);
	if (!args->output)
		return usage_error("missing -o OUT");
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Inputs */

struct merge_input {
	const char *path;
	const char *kind; /* "binary snapshot", "Chrome JSON", "Perfetto", "ftrace text" */
	int in_process;   /* see the top of this file */
	int from_import;  /* its model was built by the importer: its ids are its own */
	int json;         /* Chrome JSON: its counters are named after their argument */
	int have_model, have_import;
	tl_model model;
	tl_import imp; /* text and JSON inputs */
	tl_align_trace clock;
	tl_align_result align;
	char *dropped; /* per model event: a duplicate, left out */
	size_t ndropped;
	int64_t farthest_ns; /* the largest distance of a duplicate */
	struct async_end *async_ends; /* while duplicates are dropped */
	size_t nasync_ends;
};

/* Whether path starts as a binary snapshot does (an unreadable file: no). */
static int is_binary_snapshot(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	char head[TL_SNAPSHOT_MAGIC_LEN];
	size_t n = fread(head, 1, sizeof head, f);
	fclose(f);
	return n == sizeof head && memcmp(head, TL_SNAPSHOT_MAGIC, sizeof head) == 0;
}

/* "PATH.2,PATH.1,PATH": a file recorder's rotation, read as one snapshot.
 * Returns 0, 1 (reported), or -errno / -EINVAL with err filled. */
static int read_rotation(struct merge_input *in, const tl_symbol_options *symbols, char *err,
                         size_t errlen)
{
	char *copy = strdup(in->path);
	const char **paths = calloc(strlen(in->path) + 1, sizeof *paths);
	int rc = copy && paths ? 0 : -ENOMEM;
	size_t n = 0;
	for (char *save = NULL, *p = rc ? NULL : strtok_r(copy, ",", &save); p;
	     p = strtok_r(NULL, ",", &save)) {
		if (tl_cli_reject_directory(MERGE_PREFIX, p)) {
			rc = 1;
			break;
		}
		if (!is_binary_snapshot(p)) {
			fprintf(stderr,
			        MERGE_PREFIX
			        ": %s: not a binary snapshot; files joined with commas "
			        "must be the files of one file recorder's rotation, oldest "
			        "first\n",
			        p);
			rc = 1;
			break;
		}
		paths[n++] = p;
	}
	if (rc == 0)
		rc = tl_model_read_binary_files(paths, n, symbols, &in->model, err, errlen);
	free(paths);
	free(copy);
	return rc;
}

/* ---- a Perfetto trace's clock -------------------------------------------- */

static int proto_varint(const unsigned char **p, const unsigned char *end, uint64_t *value)
{
	*value = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (*p >= end)
			return -1;
		unsigned char b = *(*p)++;
		*value |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

/* One field of a protobuf message at *p: its number, and a varint's value
 * or a length-delimited field's bytes (*value their length); fixed-size
 * fields are skipped. Returns 0, or -1 at the end or on bytes that are no
 * protobuf. */
static int proto_field(const unsigned char **p, const unsigned char *end, uint32_t *number,
                       uint64_t *value, const unsigned char **bytes)
{
	uint64_t key;
	if (proto_varint(p, end, &key))
		return -1;
	*number = (uint32_t)(key >> 3);
	*value = 0;
	*bytes = NULL;
	switch (key & 7) {
	case 0:
		return proto_varint(p, end, value);
	case 1:
	case 5: {
		size_t size = (key & 7) == 1 ? 8 : 4;
		if ((size_t)(end - *p) < size)
			return -1;
		*p += size;
		return 0;
	}
	case 2:
		if (proto_varint(p, end, value) || *value > (uint64_t)(end - *p))
			return -1;
		*bytes = *p;
		*p += *value;
		return 0;
	default:
		return -1;
	}
}

static tl_trace_clock perfetto_clock(uint64_t builtin)
{
	return builtin == TL_PF_BUILTIN_CLOCK_BOOTTIME    ? TL_TRACE_CLOCK_BOOT
	       : builtin == TL_PF_BUILTIN_CLOCK_MONOTONIC ? TL_TRACE_CLOCK_MONO
	                                                  : TL_TRACE_CLOCK_UNKNOWN;
}

/* A ClockSnapshot: the boot, mono and realtime clocks it gives, and its
 * primary trace clock (0: not given). */
static void read_clock_snapshot(const unsigned char *p, const unsigned char *end,
                                tl_clock_values *values, uint64_t *primary)
{
	int64_t boot = 0, mono = 0, real = 0;
	uint32_t number;
	uint64_t value;
	const unsigned char *bytes;
	while (proto_field(&p, end, &number, &value, &bytes) == 0) {
		if (number == TL_PF_CLOCK_SNAPSHOT_PRIMARY && !bytes) {
			*primary = value;
			continue;
		}
		if (number != TL_PF_CLOCK_SNAPSHOT_CLOCKS || !bytes)
			continue;
		const unsigned char *c = bytes, *c_end = bytes + value;
		uint64_t id = 0, ts = 0;
		uint32_t n;
		uint64_t v;
		const unsigned char *b;
		while (proto_field(&c, c_end, &n, &v, &b) == 0) {
			if (n == TL_PF_CLOCK_ID && !b)
				id = v;
			else if (n == TL_PF_CLOCK_TIMESTAMP && !b)
				ts = v;
		}
		int64_t *to = id == TL_PF_BUILTIN_CLOCK_BOOTTIME    ? &boot
		              : id == TL_PF_BUILTIN_CLOCK_MONOTONIC ? &mono
		              : id == TL_PF_BUILTIN_CLOCK_REALTIME  ? &real
		                                                    : NULL;
		if (to && ts <= INT64_MAX)
			*to = (int64_t)ts;
	}
	*values = (tl_clock_values){.known = boot > 0 && mono > 0 && real > 0,
	                            .boottime_ns = boot,
	                            .monotonic_ns = mono,
	                            .realtime_ns = real};
}

/*
 * The clock of a Perfetto trace's timestamps and the clocks it read
 * together, from its first ClockSnapshot packet (the importer keeps
 * neither): the packets' timestamp clock (TracePacketDefaults, when a
 * packet up to the snapshot's gives it), else the snapshot's primary trace
 * clock, else boot, Perfetto's default. A trace without a clock snapshot in
 * its first 4 MiB names no clock.
 */
static void read_perfetto_clock(const char *path, tl_trace_clock *clock, tl_clock_values *values)
{
	*clock = TL_TRACE_CLOCK_UNKNOWN;
	*values = (tl_clock_values){0};
	FILE *f = fopen(path, "rb");
	if (!f)
		return;
	/* the clock snapshot comes first (Perfetto's tracing service and the
	 * exporter write it so): the first MiBs are enough */
	enum { PERFETTO_CLOCK_READ_MAX = 4 << 20 };
	unsigned char *data = malloc(PERFETTO_CLOCK_READ_MAX);
	size_t len = data ? fread(data, 1, PERFETTO_CLOCK_READ_MAX, f) : 0;
	fclose(f);
	uint64_t timestamp_clock = 0, primary = 0;
	const unsigned char *p = data, *end = data ? data + len : NULL;
	uint32_t number;
	uint64_t value;
	const unsigned char *packet;
	int found = 0;
	while (!found && data && proto_field(&p, end, &number, &value, &packet) == 0) {
		if (number != TL_PF_TRACE_PACKET || !packet)
			continue;
		const unsigned char *q = packet, *q_end = packet + value, *bytes;
		uint32_t n;
		uint64_t v;
		while (proto_field(&q, q_end, &n, &v, &bytes) == 0) {
			if (n == TL_PF_PACKET_CLOCK_SNAPSHOT && bytes) {
				read_clock_snapshot(bytes, bytes + v, values, &primary);
				found = 1;
			} else if (n == TL_PF_PACKET_DEFAULTS && bytes) {
				const unsigned char *d = bytes, *d_end = bytes + v, *b;
				uint32_t dn;
				uint64_t dv;
				while (proto_field(&d, d_end, &dn, &dv, &b) == 0)
					if (dn == TL_PF_DEFAULTS_TIMESTAMP_CLOCK_ID && !b)
						timestamp_clock = dv;
			}
		}
	}
	free(data);
	if (found)
		*clock = perfetto_clock(timestamp_clock ? timestamp_clock
		                        : primary       ? primary
		                                        : TL_PF_BUILTIN_CLOCK_BOOTTIME);
}

/*
 * Reads one input into its model (and import). Returns 0, or 1 when the
 * problem was reported; a warning is printed for a snapshot read in part
 * and for text lines that could not be read.
 */
static int read_input(struct merge_input *in, const struct merge_args *args)
{
	char err[256] = "";
	int rc;
	if (access(in->path, F_OK) != 0 && strchr(in->path, ',')) {
		in->kind = "binary snapshot";
		in->in_process = 1;
		rc = read_rotation(in, &args->symbols, err, sizeof err);
	} else if (tl_cli_reject_directory(MERGE_PREFIX, in->path)) {
		return 1;
	} else if (is_binary_snapshot(in->path)) {
		in->kind = "binary snapshot";
		in->in_process = 1;
		rc = tl_model_read_binary_files(&in->path, 1, &args->symbols, &in->model, err,
		                                sizeof err);
	} else {
		tl_trace_format format;
		tl_read_error rerr = {0};
		rc = tl_import_read_file_to(in->path, NULL, &args->symbols, &in->imp, &format,
		                            &rerr);
		if (rc == 0) {
			in->have_import = 1;
			if (tl_cli_report_unread(MERGE_PREFIX, in->path, &in->imp))
				return 1;
			in->kind = format == TL_TRACE_FORMAT_JSON       ? "Chrome JSON"
			           : format == TL_TRACE_FORMAT_PERFETTO ? "Perfetto"
			                                                : "ftrace text";
			in->json = format == TL_TRACE_FORMAT_JSON;
			if (format == TL_TRACE_FORMAT_PERFETTO)
				read_perfetto_clock(in->path, &in->imp.clock,
				                    &in->imp.clock_values);
			in->in_process = (format == TL_TRACE_FORMAT_JSON ||
			                  format == TL_TRACE_FORMAT_PERFETTO) &&
			                 in->imp.clock && in->imp.clock_values.known;
			in->from_import = 1;
			rc = tl_import_to_model(&in->imp, &in->model);
		} else {
			return tl_cli_read_error(MERGE_PREFIX, in->path, rc, &rerr);
		}
	}
	if (rc > 0)
		return 1;
	if (rc < 0) {
		fprintf(stderr, MERGE_PREFIX ": %s: %s\n", in->path, err[0] ? err : strerror(-rc));
		return 1;
	}
	in->have_model = 1;
	if (err[0]) /* data lost in a snapshot: truncated, undecodable records */
		fprintf(stderr, MERGE_PREFIX ": warning: %s: %s; merging what was read\n", in->path,
		        err);

	tl_align_trace *c = &in->clock;
	c->name = in->path;
	if (in->from_import) {
		c->clock = in->imp.clock;
		c->values = in->imp.clock_values;
		c->syncs = in->imp.clock_syncs;
		c->nsyncs = in->imp.nclock_syncs;
	} else {
		const tl_model *m = &in->model;
		c->clock = m->clock_id == 7   ? TL_TRACE_CLOCK_BOOT
		           : m->clock_id == 1 ? TL_TRACE_CLOCK_MONO
		                              : TL_TRACE_CLOCK_UNKNOWN;
		c->values = (tl_clock_values){.known = m->boottime_ns > 0 && m->monotonic_ns > 0 &&
		                                       m->realtime_ns > 0,
		                              .boottime_ns = m->boottime_ns,
		                              .monotonic_ns = m->monotonic_ns,
		                              .realtime_ns = m->realtime_ns};
	}
	if (!c->clock)
		c->clock = args->assume_clock;
	c->model = in->in_process ? &in->model : NULL;
	in->dropped = calloc(in->model.nevents + 1, 1);
	if (!in->dropped) {
		fprintf(stderr, MERGE_PREFIX ": %s: out of memory\n", in->path);
		return 1;
	}
	return 0;
}

static void input_free(struct merge_input *in)
{
	free(in->dropped);
	if (in->have_import)
		tl_import_free(&in->imp);
	if (in->have_model)
		tl_model_free(&in->model);
}

static const char *clock_name(tl_trace_clock clock)
{
	return clock == TL_TRACE_CLOCK_BOOT ? "boot" : clock == TL_TRACE_CLOCK_MONO ? "mono" : NULL;
}

/* One line per input: its clock and how it was put on the timeline. */
static void print_alignment(const struct merge_input *in, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct merge_input *m = &in[i];
		const char *clock = clock_name(m->clock.clock);
		fprintf(stderr, MERGE_PREFIX ": %s: %s, %s%s%s: ", m->path, m->kind,
		        clock ? "on the " : "no clock named", clock ? clock : "",
		        clock ? " clock" : "");
		if (m->align.offset_ns)
			fprintf(stderr, "moved by %+" PRId64 " ns %s\n", m->align.offset_ns,
			        m->align.how);
		else
			fprintf(stderr, "%s\n", m->align.how);
		if (m->align.error_ns >= LOOSE_ALIGNMENT_NS)
			fprintf(stderr,
			        MERGE_PREFIX
			        ": warning: %s is aligned to within about %.0f ms only\n",
			        m->path, (double)m->align.error_ns / 1e6);
	}
}

/* A timestamp moved to the timeline, saturated: a hostile input's offset
 * cannot overflow it. */
static int64_t on_timeline(int64_t ts, const struct merge_input *in)
{
	int64_t moved;
	if (!__builtin_add_overflow(ts, in->align.offset_ns, &moved))
		return moved;
	return in->align.offset_ns > 0 ? INT64_MAX : INT64_MIN;
}

/* ------------------------------------------------------------------------ */
/* The same event in two inputs */

enum { FAMILY_SLICE = 1, FAMILY_INSTANT, FAMILY_COUNTER, FAMILY_ASYNC };

typedef struct dup_key {
	uint32_t pid, tid;
	int family;
	uint64_t name; /* hash of the name cleaned as a marker name */
	int64_t ts;    /* on the timeline */
	size_t input, event;
} dup_key;

/* The kind of event for matching, 0 for one that is never matched (ends,
 * flows). Sets the thread it is matched on (0: its process). */
static int event_family(const tl_model_event *e, uint32_t *tid)
{
	*tid = 0;
	switch (e->phase) {
	case TL_PHASE_BEGIN:
	case TL_PHASE_COMPLETE:
		*tid = e->tid;
		return FAMILY_SLICE;
	case TL_PHASE_INSTANT:
		if (e->scope == TL_EVENT_SCOPE_THREAD)
			*tid = e->tid;
		return FAMILY_INSTANT;
	case TL_PHASE_ASYNC_INSTANT:
		return FAMILY_INSTANT;
	case TL_PHASE_COUNTER:
		return FAMILY_COUNTER;
	case TL_PHASE_ASYNC_BEGIN:
		return FAMILY_ASYNC;
	default:
		return 0;
	}
}

/* FNV-1a of the name as the systrace recorder writes it (tl_atrace_clean):
 * a marker's name and the in-process name it came from hash alike. */
static uint64_t name_hash(const char *name, size_t name_len)
{
	char clean[TL_ATRACE_PAYLOAD_MAX];
	int cut = 0;
	size_t len = tl_atrace_clean(clean, sizeof clean, name, name ? name_len : 0, NULL, &cut);
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)clean[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* The length of an event's name, without the " value" the importer ends a
 * JSON counter's name with (Perfetto names a JSON counter's track after its
 * argument, and the exporter's one argument is "value"): the name a marker
 * of the same counter has. */
static size_t event_name_len(const struct merge_input *in, const tl_model_event *e)
{
	static const char suffix[] = " value";
	const size_t k = sizeof suffix - 1;
	size_t len = e->name ? strlen(e->name) : 0;
	if (in->json && e->phase == TL_PHASE_COUNTER && len > k &&
	    memcmp(e->name + len - k, suffix, k) == 0)
		return len - k;
	return len;
}

static int compare_dup_key(const void *pa, const void *pb)
{
	const dup_key *a = pa, *b = pb;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	if (a->name != b->name)
		return a->name < b->name ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->input < b->input ? -1 : a->input > b->input;
}

static int same_group(const dup_key *a, const dup_key *b)
{
	return a->pid == b->pid && a->tid == b->tid && a->family == b->family && a->name == b->name;
}

/* The matchable events of the inputs whose in_process is `in_process`,
 * sorted; NULL on ENOMEM (*n then SIZE_MAX). */
static dup_key *collect_keys(const struct merge_input *in, size_t ninputs, int in_process,
                             size_t *n)
{
	size_t total = 0;
	for (size_t i = 0; i < ninputs; i++)
		total += in[i].in_process == in_process ? in[i].model.nevents : 0;
	dup_key *keys = malloc((total + 1) * sizeof *keys);
	if (!keys) {
		*n = SIZE_MAX;
		return NULL;
	}
	*n = 0;
	for (size_t i = 0; i < ninputs; i++) {
		if (in[i].in_process != in_process)
			continue;
		const tl_model *m = &in[i].model;
		for (size_t k = 0; k < m->nevents; k++) {
			const tl_model_event *e = &m->events[k];
			uint32_t tid;
			int family = event_family(e, &tid);
			if (!family)
				continue;
			keys[(*n)++] =
			    (dup_key){.pid = tl_model_event_pid(m, e),
			              .tid = tid,
			              .family = family,
			              .name = name_hash(e->name, event_name_len(&in[i], e)),
			              .ts = on_timeline(e->ts_ns, &in[i]),
			              .input = i,
			              .event = k};
		}
	}
	qsort(keys, *n, sizeof *keys, compare_dup_key);
	return keys;
}

static int64_t distance(int64_t a, int64_t b)
{
	uint64_t d = a > b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
	return d > INT64_MAX ? INT64_MAX : (int64_t)d;
}

/* A capture's async ends, by (pid, id, ts), to drop the end of a dropped
 * begin. */
typedef struct async_end {
	uint32_t pid;
	uint64_t id;
	int64_t ts;
	size_t event;
} async_end;

static int compare_async_end(const void *pa, const void *pb)
{
	const async_end *a = pa, *b = pb;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->event < b->event ? -1 : a->event > b->event;
}

/* The async ends of an input, sorted; NULL on ENOMEM. */
static async_end *collect_async_ends(const tl_model *m, size_t *n)
{
	async_end *ends = malloc((m->nevents + 1) * sizeof *ends);
	if (!ends)
		return NULL;
	*n = 0;
	for (size_t k = 0; k < m->nevents; k++) {
		const tl_model_event *e = &m->events[k];
		if (e->phase == TL_PHASE_ASYNC_END)
			ends[(*n)++] = (async_end){tl_model_event_pid(m, e), e->id, e->ts_ns, k};
	}
	qsort(ends, *n, sizeof *ends, compare_async_end);
	return ends;
}

/* A capture's async begin was dropped: its end goes too, the first one of
 * the same process and id not before it and not dropped yet. */
static void drop_async_end(struct merge_input *in, const async_end *ends, size_t n,
                           const tl_model_event *begin)
{
	async_end key = {tl_model_event_pid(&in->model, begin), begin->id, begin->ts_ns, 0};
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (compare_async_end(&ends[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && ends[lo].pid == key.pid && ends[lo].id == key.id; lo++) {
		if (!in->dropped[ends[lo].event]) {
			in->dropped[ends[lo].event] = 1;
			return;
		}
	}
}

/*
 * Marks the events of captures that in-process inputs also have: in each
 * group of one process, thread, kind and name, the two time-ordered lists
 * are walked together and two events at most the window apart pair up.
 * Returns 0 or -ENOMEM.
 */
static int drop_duplicates(struct merge_input *in, size_t ninputs, int64_t window)
{
	size_t nrich, ncapture;
	dup_key *rich = collect_keys(in, ninputs, 1, &nrich);
	dup_key *capture = collect_keys(in, ninputs, 0, &ncapture);
	if (!rich || !capture) {
		free(rich);
		free(capture);
		return -ENOMEM;
	}
	char *used = calloc(nrich + 1, 1);
	if (!used) {
		free(rich);
		free(capture);
		return -ENOMEM;
	}
	size_t r = 0;
	int rc = 0;
	for (size_t c = 0; c < ncapture; c++) {
		const dup_key *k = &capture[c];
		while (r < nrich && compare_dup_key(&rich[r], k) < 0 && !same_group(&rich[r], k))
			r++;
		/* Within the group, the in-process events before r are matched or
		 * too early for every later capture event. */
		while (r < nrich && same_group(&rich[r], k) &&
		       (used[r] || rich[r].ts < k->ts - window))
			r++;
		if (r >= nrich || !same_group(&rich[r], k) || rich[r].ts > k->ts + window)
			continue;
		/* the nearest of the unmatched ones in the window */
		size_t j = r;
		while (j + 1 < nrich && same_group(&rich[j + 1], k) && !used[j + 1] &&
		       distance(rich[j + 1].ts, k->ts) < distance(rich[j].ts, k->ts))
			j++;
		used[j] = 1;
		struct merge_input *from = &in[k->input];
		from->dropped[k->event] = 1;
		from->ndropped++;
		int64_t d = distance(rich[j].ts, k->ts);
		if (d > from->farthest_ns)
			from->farthest_ns = d;
		const tl_model_event *e = &from->model.events[k->event];
		if (e->phase != TL_PHASE_ASYNC_BEGIN)
			continue;
		if (!from->async_ends &&
		    !(from->async_ends = collect_async_ends(&from->model, &from->nasync_ends))) {
			rc = -ENOMEM;
			break;
		}
		drop_async_end(from, from->async_ends, from->nasync_ends, e);
	}
	free(used);
	free(rich);
	free(capture);
	for (size_t i = 0; i < ninputs; i++) {
		free(in[i].async_ends);
		in[i].async_ends = NULL;
	}
	return rc;
}

/* ------------------------------------------------------------------------ */
/* One model */

typedef struct merged_event {
	tl_model_event event;
	uint32_t pid;
	size_t input;
	uint64_t seq;
} merged_event;

static int compare_merged(const void *pa, const void *pb)
{
	const merged_event *a = pa, *b = pb;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->event.tid != b->event.tid)
		return a->event.tid < b->event.tid ? -1 : 1;
	if (a->event.ts_ns != b->event.ts_ns)
		return a->event.ts_ns < b->event.ts_ns ? -1 : 1;
	if (a->input != b->input)
		return a->input < b->input ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int is_async_or_flow(char phase)
{
	return phase == TL_PHASE_ASYNC_BEGIN || phase == TL_PHASE_ASYNC_END ||
	       phase == TL_PHASE_ASYNC_INSTANT || phase == TL_PHASE_FLOW_BEGIN ||
	       phase == TL_PHASE_FLOW_STEP || phase == TL_PHASE_FLOW_END;
}

/* The event, its strings in out's arena, moved to the timeline. */
static merged_event copy_event(tl_model *out, const struct merge_input *in, size_t input,
                               const tl_model_event *e, int *nomem)
{
	merged_event m = {
	    .event = *e, .pid = tl_model_event_pid(&in->model, e), .input = input, .seq = e->seq};
	tl_model_event *c = &m.event;
	c->ts_ns = on_timeline(e->ts_ns, in);
	if (e->phase == TL_PHASE_COMPLETE) /* a counter's value shares end_ns */
		c->end_ns = on_timeline(e->end_ns, in);
	if (tl_model_event_adopt_strings(out, c))
		*nomem = 1;
	/* a JSON counter on the track a capture's marker of it goes on */
	size_t len = event_name_len(in, e);
	if (c->name && len != strlen(e->name) && !(c->name = tl_model_intern(out, e->name, len)))
		*nomem = 1;
	/* the importer numbers its ids from 1 in each trace: kept apart */
	if (in->from_import && is_async_or_flow(e->phase))
		c->id += (uint64_t)(input + 1) << 48;
	return m;
}

/* Names, in-process inputs first: their full names win over a capture's
 * 16-byte comm. */
static int merge_names(tl_model *out, const struct merge_input *in, size_t ninputs)
{
	for (int pass = 1; pass >= 0; pass--) {
		for (size_t i = 0; i < ninputs; i++) {
			if (in[i].in_process != pass)
				continue;
			const tl_model *m = &in[i].model;
			for (size_t k = 0; k <= m->nprocesses; k++) {
				uint32_t pid = k < m->nprocesses ? m->processes[k].pid : m->pid;
				const char *name =
				    k < m->nprocesses ? m->processes[k].name : m->process_name;
				const char *known = tl_model_process_name(out, pid);
				if (name && name[0] && !(known && known[0]) &&
				    tl_model_process_set(out, pid, name, strlen(name)))
					return -ENOMEM;
			}
			for (size_t k = 0; k < m->nthreads; k++) {
				const tl_model_thread *t = &m->threads[k];
				uint32_t pid = tl_model_thread_pid(m, t);
				const tl_model_thread *had = tl_model_thread_find(out, pid, t->tid);
				if (!(had && had->name[0]) && t->name[0] &&
				    tl_model_thread_set_in(out, pid, t->tid, t->name,
				                           strlen(t->name)))
					return -ENOMEM;
			}
		}
	}
	out->process_name = tl_model_process_name(out, out->pid);
	return 0;
}

static void add_stats(tl_stats *to, const tl_stats *from)
{
	to->events_overwritten += from->events_overwritten;
	to->events_dropped += from->events_dropped;
	to->strings_truncated += from->strings_truncated;
	to->args_dropped += from->args_dropped;
	to->unmatched_begin += from->unmatched_begin;
	to->unmatched_end += from->unmatched_end;
	to->blocks_torn += from->blocks_torn;
}

/* Every kept event of every input in one model on the timeline. Returns 0
 * or -ENOMEM. */
static int build_model(tl_model *out, const struct merge_input *in, size_t ninputs,
                       const tl_align_timeline *timeline)
{
	memset(out, 0, sizeof *out);
	size_t total = 0;
	for (size_t i = 0; i < ninputs; i++)
		total += in[i].model.nevents;
	merged_event *all = malloc((total + 1) * sizeof *all);
	out->recorder = tl_model_intern(out, "merge", 5);
	if (!all || !out->recorder) {
		free(all);
		tl_model_free(out);
		return -ENOMEM;
	}
	out->clock_id = timeline->clock == TL_TRACE_CLOCK_BOOT   ? 7
	                : timeline->clock == TL_TRACE_CLOCK_MONO ? 1
	                                                         : TL_MODEL_CLOCK_UNKNOWN;
	out->complete = 1;
	out->snapshot_ns = INT64_MIN;
	for (size_t i = 0; i < ninputs; i++) {
		const tl_model *m = &in[i].model;
		if (!out->pid)
			out->pid = m->pid;
		out->complete &= m->complete;
		add_stats(&out->stats, &m->stats);
		if (on_timeline(m->snapshot_ns, &in[i]) > out->snapshot_ns)
			out->snapshot_ns = on_timeline(m->snapshot_ns, &in[i]);
	}
	int nomem = merge_names(out, in, ninputs) != 0;

	size_t n = 0;
	for (size_t i = 0; i < ninputs && !nomem; i++) {
		for (size_t k = 0; k < in[i].model.nevents; k++) {
			if (!in[i].dropped[k])
				all[n++] =
				    copy_event(out, &in[i], i, &in[i].model.events[k], &nomem);
		}
	}
	qsort(all, n, sizeof *all, compare_merged);
	for (size_t i = 0; i < n && !nomem; i++) {
		tl_model_event *e = tl_model_event_append(out);
		if (!e) {
			nomem = 1;
			break;
		}
		*e = all[i].event;
		e->pid = all[i].pid == out->pid ? 0 : all[i].pid;
		e->seq = i;
		if (e->ts_ns > out->snapshot_ns)
			out->snapshot_ns = e->ts_ns;
	}
	free(all);
	if (nomem) {
		tl_model_free(out);
		return -ENOMEM;
	}
	/* The clocks at the end of the trace, where the timeline reaches them. */
	int64_t *values[TL_ALIGN_CLOCKS] = {&out->boottime_ns, &out->monotonic_ns,
	                                    &out->realtime_ns};
	for (size_t k = 0; k < TL_ALIGN_CLOCKS; k++) {
		if (timeline->known[k])
			*values[k] = out->snapshot_ns + timeline->to_clock_ns[k];
	}
	out->stats.events_written = out->nevents;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Output */

static size_t count_processes(const tl_model *model)
{
	size_t n = 0;
	uint32_t last = 0;
	for (size_t i = 0; i < model->nevents; i++) {
		uint32_t pid = tl_model_event_pid(model, &model->events[i]);
		if (i == 0 || pid != last)
			n++;
		last = pid;
	}
	return n;
}

/* Writes the model; returns the exit status, problems reported. A file is
 * written whole or not at all (recorder/atomic_file.h). */
static int write_output(const struct merge_args *args, const tl_output_format *format,
                        const tl_model *model)
{
	tl_export_counts counts = {0};
	int stdout_out = strcmp(args->output, "-") == 0;
	const char *where = stdout_out ? "standard output" : args->output;
	int rc;
	if (stdout_out) {
		rc = format->write(model, STDOUT_FILENO, &counts);
	} else {
		struct tl_atomic_file out;
		rc = tl_atomic_file_open(&out, args->output);
		if (rc < 0)
			return tl_cli_output_error(MERGE_PREFIX, args->output, rc);
		rc = format->write(model, out.fd, &counts);
		if (rc < 0)
			tl_atomic_file_abort(&out);
		else
			rc = tl_atomic_file_commit(&out);
	}
	if (rc < 0) {
		fprintf(stderr, MERGE_PREFIX ": %s: write failed: %s\n", where, strerror(-rc));
		return 1;
	}
	const char *clock = model->clock_id == 7 ? "boot" : model->clock_id == 1 ? "mono" : NULL;
	fprintf(stderr,
	        MERGE_PREFIX ": wrote %s (%s, %s clock): %zu events, %zu threads, %zu processes\n",
	        where, format->name, clock ? clock : "unnamed", model->nevents, model->nthreads,
	        count_processes(model));
	return 0;
}

int tl_cmd_merge(int argc, char **argv)
{
	struct merge_args args = {.window_ns = DEFAULT_WINDOW_NS};
	int status = parse_args(argc, argv, &args);
	if (status)
		return status;
	if (args.help) {
		fputs(merge_usage, stdout);
		return 0;
	}
	const tl_output_format *format =
	    args.format ? args.format : tl_output_format_from_path(args.output);

	size_t n = args.ninputs;
	struct merge_input *in = calloc(n, sizeof *in);
	tl_align_trace *clocks = calloc(n, sizeof *clocks);
	tl_align_result *aligned = calloc(n, sizeof *aligned);
	if (!in || !clocks || !aligned) {
		fprintf(stderr, MERGE_PREFIX ": out of memory\n");
		status = 1;
		goto out;
	}
	for (size_t i = 0; i < n && !status; i++) {
		in[i].path = args.inputs[i];
		status = read_input(&in[i], &args);
		clocks[i] = in[i].clock;
	}
	if (status)
		goto out;

	char why[1024] = "";
	tl_align_timeline timeline = {0};
	int rc = tl_clock_align(clocks, n, aligned, &timeline, why, sizeof why);
	if (rc == -EDOM) {
		int unnamed = 0;
		for (size_t i = 0; i < n; i++)
			unnamed |= !in[i].clock.clock;
		fprintf(stderr, MERGE_PREFIX ": %s%s\n", why,
		        unnamed ? " (--assume-clock names the clock of inputs that name none)"
		                : "");
		status = 1;
		goto out;
	}
	if (rc < 0) {
		fprintf(stderr, MERGE_PREFIX ": out of memory\n");
		status = 1;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		in[i].align = aligned[i];
	print_alignment(in, n);

	if (!args.keep_duplicates && drop_duplicates(in, n, args.window_ns)) {
		fprintf(stderr, MERGE_PREFIX ": out of memory\n");
		status = 1;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (in[i].ndropped)
			fprintf(stderr,
			        MERGE_PREFIX
			        ": %s: %zu event%s also recorded in process, shown once "
			        "(the in-process copy; the farthest %.3f us apart)\n",
			        in[i].path, in[i].ndropped, in[i].ndropped == 1 ? "" : "s",
			        (double)in[i].farthest_ns / 1000);
	}

	tl_model merged;
	if (build_model(&merged, in, n, &timeline)) {
		fprintf(stderr, MERGE_PREFIX ": out of memory\n");
		status = 1;
		goto out;
	}
	status = write_output(&args, format, &merged);
	tl_model_free(&merged);

out:
	for (size_t i = 0; in && i < n; i++)
		input_free(&in[i]);
	free(aligned);
	free(clocks);
	free(in);
	return status;
}
