/*
 * The Perfetto trace reader (perfetto_reader.h). The input is untrusted:
 * every varint and length is checked against the bytes of the message that
 * holds it before it is used, and nothing is read past a message's end.
 *
 * A packet is read in two passes: the first takes its sequence, flags and
 * interned strings (which may follow the TrackEvent that uses them, as
 * timeline writes them), the second its TrackEvent or TrackDescriptor.
 */
#include "tools/readers/perfetto_reader.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/export/perfetto_proto.h"
#include "recorder/hash_map.h"

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LENGTH = 2, WIRE_FIXED32 = 5 };

/* One field of a message. */
typedef struct pb_field {
	uint32_t number;
	unsigned wire;
	uint64_t value;           /* VARINT, FIXED64, FIXED32 */
	const unsigned char *ptr; /* LENGTH */
	size_t len;
} pb_field;

typedef struct pb_cursor {
	const unsigned char *p, *end;
} pb_cursor;

static int read_varint(pb_cursor *c, uint64_t *out)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (c->p == c->end)
			return -1;
		unsigned char b = *c->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -1; /* more than ten bytes */
}

static uint64_t read_le(const unsigned char *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* The next field: 1, 0 at the end, -1 when malformed. */
static int next_field(pb_cursor *c, pb_field *f)
{
	if (c->p == c->end)
		return 0;
	uint64_t tag;
	if (read_varint(c, &tag) || tag >> 3 == 0 || tag >> 3 > UINT32_MAX)
		return -1;
	f->number = (uint32_t)(tag >> 3);
	f->wire = (unsigned)(tag & 7);
	size_t left;
	switch (f->wire) {
	case WIRE_VARINT:
		return read_varint(c, &f->value) ? -1 : 1;
	case WIRE_FIXED64:
	case WIRE_FIXED32: {
		int n = f->wire == WIRE_FIXED64 ? 8 : 4;
		if ((size_t)(c->end - c->p) < (size_t)n)
			return -1;
		f->value = read_le(c->p, n);
		c->p += n;
		return 1;
	}
	case WIRE_LENGTH:
		if (read_varint(c, &f->value))
			return -1;
		left = (size_t)(c->end - c->p);
		if (f->value > left)
			return -1;
		f->ptr = c->p;
		f->len = (size_t)f->value;
		c->p += f->len;
		return 1;
	default:
		return -1; /* groups (3, 4) and the unused 6 and 7 */
	}
}

static pb_cursor cursor(const unsigned char *p, size_t len)
{
	return (pb_cursor){p, p + len};
}

/* ------------------------------------------------------------------------ */
/* State: interned strings, tracks by uuid */

typedef struct interned_slot {
	int used;
	uint32_t sequence;
	uint32_t generation;
	int kind;
	uint64_t iid;
	const char *s;
} interned_slot;

struct tl_perfetto_state {
	interned_slot *interned;
	size_t interned_cap, interned_used;
	tl_id_map track_by_uuid;
	tl_id_map generation_by_sequence; /* of its incremental state; none: 0 */
	size_t events_cap, tracks_cap, args_cap, flows_cap;
};

typedef struct reader {
	tl_perfetto_trace *t;
	struct tl_perfetto_state *st;
	const unsigned char *base; /* the file, for offsets in errors */
	tl_read_error *err;
	int nomem;
	char *scratch; /* joined categories */
	size_t scratch_cap;
} reader;

static void *grow(reader *r, void *array, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return array;
	size_t n = *cap ? *cap * 2 : 64;
	while (n < need)
		n *= 2;
	void *grown = n <= SIZE_MAX / elem ? realloc(array, n * elem) : NULL;
	if (!grown) {
		r->nomem = 1;
		return NULL;
	}
	*cap = n;
	return grown;
}

static uint32_t generation_of(reader *r, uint32_t sequence)
{
	const uint64_t *g = tl_id_map_get(&r->st->generation_by_sequence, sequence);
	return g ? (uint32_t)*g : 0;
}

static void clear_sequence(reader *r, uint32_t sequence)
{
	uint64_t *g = tl_id_map_add(&r->st->generation_by_sequence, sequence, 0, NULL);
	if (!g) {
		r->nomem = 1;
		return;
	}
	*g = (uint32_t)(*g + 1);
}

static size_t interned_hash(uint32_t sequence, uint32_t generation, int kind, uint64_t iid)
{
	return (size_t)tl_mix64(iid * 31 + ((uint64_t)sequence << 32 | generation) * 7 +
	                        (uint64_t)kind);
}

static interned_slot *interned_find(const struct tl_perfetto_state *st, uint32_t sequence,
                                    uint32_t generation, int kind, uint64_t iid)
{
	if (!st->interned_cap)
		return NULL;
	size_t mask = st->interned_cap - 1;
	for (size_t i = interned_hash(sequence, generation, kind, iid) & mask; st->interned[i].used;
	     i = (i + 1) & mask) {
		interned_slot *s = &st->interned[i];
		if (s->sequence == sequence && s->generation == generation && s->kind == kind &&
		    s->iid == iid)
			return s;
	}
	return NULL;
}

static void intern_set(reader *r, uint32_t sequence, int kind, uint64_t iid, const char *s)
{
	struct tl_perfetto_state *st = r->st;
	uint32_t generation = generation_of(r, sequence);
	interned_slot *found = interned_find(st, sequence, generation, kind, iid);
	if (found) {
		found->s = s;
		return;
	}
	if ((st->interned_used + 1) * 2 > st->interned_cap) {
		size_t cap = st->interned_cap ? st->interned_cap * 2 : 256;
		interned_slot *slots = calloc(cap, sizeof *slots);
		if (!slots) {
			r->nomem = 1;
			return;
		}
		for (size_t i = 0; i < st->interned_cap; i++) {
			interned_slot *o = &st->interned[i];
			if (!o->used)
				continue;
			size_t j =
			    interned_hash(o->sequence, o->generation, o->kind, o->iid) & (cap - 1);
			while (slots[j].used)
				j = (j + 1) & (cap - 1);
			slots[j] = *o;
		}
		free(st->interned);
		st->interned = slots;
		st->interned_cap = cap;
	}
	size_t mask = st->interned_cap - 1;
	size_t i = interned_hash(sequence, generation, kind, iid) & mask;
	while (st->interned[i].used)
		i = (i + 1) & mask;
	st->interned[i] = (interned_slot){1, sequence, generation, kind, iid, s};
	st->interned_used++;
}

static const char *intern_get(reader *r, uint32_t sequence, int kind, uint64_t iid)
{
	interned_slot *s = interned_find(r->st, sequence, generation_of(r, sequence), kind, iid);
	return s ? s->s : NULL;
}

/* The track of uuid, created when new; NULL when out of memory. */
static tl_perfetto_track *track_for(reader *r, uint64_t uuid)
{
	struct tl_perfetto_state *st = r->st;
	tl_perfetto_trace *t = r->t;
	const uint64_t *found = tl_id_map_get(&st->track_by_uuid, uuid);
	if (found)
		return &t->tracks[*found];
	tl_perfetto_track *tracks =
	    grow(r, t->tracks, &st->tracks_cap, t->ntracks + 1, sizeof *t->tracks);
	if (!tracks)
		return NULL;
	t->tracks = tracks;
	if (tl_id_map_put(&st->track_by_uuid, uuid, t->ntracks)) {
		r->nomem = 1;
		return NULL;
	}
	tl_perfetto_track *track = &t->tracks[t->ntracks++];
	*track = (tl_perfetto_track){.uuid = uuid, .kind = TL_PERFETTO_TRACK_ROOT};
	return track;
}

const tl_perfetto_track *tl_perfetto_track_find(const tl_perfetto_trace *trace, uint64_t uuid)
{
	const uint64_t *i = trace->state ? tl_id_map_get(&trace->state->track_by_uuid, uuid) : NULL;
	return i ? &trace->tracks[*i] : NULL;
}

/* ------------------------------------------------------------------------ */
/* Decoding */

#define MALFORMED (-1)

static int fail(reader *r, const unsigned char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(reader *r, const unsigned char *at, const char *fmt, ...)
{
	if (r->err && !r->err->message[0]) {
		int n = snprintf(r->err->message, sizeof r->err->message,
		                 "byte %zu: ", (size_t)(at - r->base));
		va_list ap;
		va_start(ap, fmt);
		if (n > 0 && (size_t)n < sizeof r->err->message)
			vsnprintf(r->err->message + n, sizeof r->err->message - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return MALFORMED;
}

static const char *copy(reader *r, const unsigned char *p, size_t len)
{
	const char *s = tl_str_arena_copy(&r->t->strings, (const char *)p, len);
	if (!s)
		r->nomem = 1;
	return s;
}

/* Walks the fields of a message; on a malformed one reports where. */
#define FOR_FIELDS(r, c, f, rc)                                                                    \
	for (int rc; (rc = next_field(&(c), &(f))) != 0;)                                          \
		if (rc < 0)                                                                        \
			return fail((r), (c).p, "malformed protobuf field");                       \
		else

/* InternedData: the entries of the kinds timeline writes. */
static int read_interned(reader *r, uint32_t sequence, const pb_field *data)
{
	pb_cursor c = cursor(data->ptr, data->len);
	pb_field f;
	FOR_FIELDS(r, c, f, rc)
	{
		if (f.wire != WIRE_LENGTH || (f.number != TL_PF_INTERNED_EVENT_CATEGORIES &&
		                              f.number != TL_PF_INTERNED_EVENT_NAMES &&
		                              f.number != TL_PF_INTERNED_ANNOTATION_NAMES))
			continue;
		pb_cursor e = cursor(f.ptr, f.len);
		pb_field g;
		uint64_t iid = 0;
		const char *name = NULL;
		FOR_FIELDS(r, e, g, rc2)
		{
			if (g.number == TL_PF_INTERNED_IID && g.wire == WIRE_VARINT)
				iid = g.value;
			else if (g.number == TL_PF_INTERNED_NAME && g.wire == WIRE_LENGTH)
				name = copy(r, g.ptr, g.len);
		}
		if (iid && name)
			intern_set(r, sequence, (int)f.number, iid, name);
	}
	return 0;
}

static int read_descriptor_part(reader *r, const pb_field *part, tl_perfetto_track *track)
{
	pb_cursor c = cursor(part->ptr, part->len);
	pb_field f;
	int thread = part->number == TL_PF_TRACK_THREAD;
	FOR_FIELDS(r, c, f, rc)
	{
		if (f.number == TL_PF_PROCESS_PID && f.wire == WIRE_VARINT)
			track->pid = (uint32_t)f.value;
		else if (thread && f.number == TL_PF_THREAD_TID && f.wire == WIRE_VARINT)
			track->tid = (uint32_t)f.value;
		else if (f.wire == WIRE_LENGTH &&
		         f.number == (thread ? TL_PF_THREAD_NAME : TL_PF_PROCESS_NAME))
			track->name = copy(r, f.ptr, f.len);
	}
	track->kind = thread ? TL_PERFETTO_TRACK_THREAD : TL_PERFETTO_TRACK_PROCESS;
	return 0;
}

static int read_descriptor(reader *r, const pb_field *desc)
{
	pb_cursor c = cursor(desc->ptr, desc->len);
	pb_field f;
	uint64_t uuid = 0;
	FOR_FIELDS(r, c, f, rc)
	{
		if (f.number == TL_PF_TRACK_UUID && f.wire == WIRE_VARINT)
			uuid = f.value;
	}
	tl_perfetto_track *track = track_for(r, uuid);
	if (!track)
		return 0;
	const char *name = NULL;
	c = cursor(desc->ptr, desc->len);
	FOR_FIELDS(r, c, f, rc)
	{
		if (f.wire == WIRE_LENGTH &&
		    (f.number == TL_PF_TRACK_PROCESS || f.number == TL_PF_TRACK_THREAD)) {
			int part = read_descriptor_part(r, &f, track);
			if (part)
				return part;
		} else if (f.wire == WIRE_LENGTH &&
		           (f.number == TL_PF_TRACK_NAME || f.number == 10 /* static_name */ ||
		            f.number == 13 /* atrace_name */)) {
			name = copy(r, f.ptr, f.len);
		} else if (f.number == TL_PF_TRACK_PARENT_UUID && f.wire == WIRE_VARINT) {
			track->parent_uuid = f.value;
			if (track->kind == TL_PERFETTO_TRACK_ROOT)
				track->kind = TL_PERFETTO_TRACK_CHILD;
		} else if (f.number == TL_PF_TRACK_COUNTER && f.wire == WIRE_LENGTH) {
			track->counter = 1;
		}
	}
	if (name)
		track->name = name;
	return 0;
}

static void add_category(reader *r, size_t *len, const char *cat)
{
	size_t n = strlen(cat), need = *len + n + 2;
	if (need > r->scratch_cap) {
		size_t cap = need * 2;
		char *grown = realloc(r->scratch, cap);
		if (!grown) {
			r->nomem = 1;
			return;
		}
		r->scratch = grown;
		r->scratch_cap = cap;
	}
	if (*len)
		r->scratch[(*len)++] = ',';
	memcpy(r->scratch + *len, cat, n);
	*len += n;
	r->scratch[*len] = '\0';
}

/* A DebugAnnotation as an arg; values other than the six scalars are left out. */
static int read_annotation(reader *r, uint32_t sequence, const pb_field *ann)
{
	pb_cursor c = cursor(ann->ptr, ann->len);
	pb_field f;
	const char *key = NULL;
	tl_json_value v = {.type = TL_JSON_NONE};
	char hex[24];
	FOR_FIELDS(r, c, f, rc)
	{
		switch (f.number) {
		case TL_PF_ANNOTATION_NAME_IID:
			if (f.wire == WIRE_VARINT)
				key = intern_get(r, sequence, TL_PF_INTERNED_ANNOTATION_NAMES,
				                 f.value);
			break;
		case TL_PF_ANNOTATION_NAME:
			if (f.wire == WIRE_LENGTH)
				key = copy(r, f.ptr, f.len);
			break;
		case TL_PF_ANNOTATION_BOOL:
			if (f.wire == WIRE_VARINT)
				v = (tl_json_value){.type = TL_JSON_BOOL, .i = f.value != 0};
			break;
		case TL_PF_ANNOTATION_UINT:
			if (f.wire != WIRE_VARINT)
				break;
			if (f.value <= (uint64_t)INT64_MAX)
				v = (tl_json_value){.type = TL_JSON_INT, .i = (int64_t)f.value};
			else
				v = (tl_json_value){.type = TL_JSON_DOUBLE, .d = (double)f.value};
			break;
		case TL_PF_ANNOTATION_INT:
			if (f.wire == WIRE_VARINT)
				v = (tl_json_value){.type = TL_JSON_INT, .i = (int64_t)f.value};
			break;
		case TL_PF_ANNOTATION_DOUBLE:
			if (f.wire == WIRE_FIXED64) {
				v = (tl_json_value){.type = TL_JSON_DOUBLE};
				memcpy(&v.d, &f.value, sizeof v.d);
			}
			break;
		case TL_PF_ANNOTATION_STRING:
			if (f.wire == WIRE_LENGTH)
				v = (tl_json_value){.type = TL_JSON_STRING,
				                    .s = copy(r, f.ptr, f.len)};
			break;
		case TL_PF_ANNOTATION_POINTER:
			if (f.wire != WIRE_VARINT)
				break;
			snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)f.value);
			v = (tl_json_value){.type = TL_JSON_STRING,
			                    .s = copy(r, (const void *)hex, strlen(hex))};
			break;
		default:
			break;
		}
	}
	if (!key || v.type == TL_JSON_NONE || (v.type == TL_JSON_STRING && !v.s))
		return 0;
	tl_perfetto_trace *t = r->t;
	tl_json_arg *args = grow(r, t->args, &r->st->args_cap, t->nargs + 1, sizeof *t->args);
	if (!args)
		return 0;
	t->args = args;
	t->args[t->nargs++] = (tl_json_arg){.key = key, .top_level = 1, .value = v};
	return 0;
}

static void add_flow(reader *r, uint64_t id, int terminating)
{
	tl_perfetto_trace *t = r->t;
	tl_perfetto_flow *flows =
	    grow(r, t->flows, &r->st->flows_cap, t->nflows + 1, sizeof *t->flows);
	if (!flows)
		return;
	t->flows = flows;
	t->flows[t->nflows++] = (tl_perfetto_flow){id, terminating};
}

/* Flow ids, one per field or packed in one. */
static int read_flow_ids(reader *r, const pb_field *f, int terminating, int fixed)
{
	if (fixed && f->wire == WIRE_FIXED64) {
		add_flow(r, f->value, terminating);
	} else if (!fixed && f->wire == WIRE_VARINT) {
		add_flow(r, f->value, terminating);
	} else if (f->wire == WIRE_LENGTH) {
		pb_cursor c = cursor(f->ptr, f->len);
		while (c.p < c.end) {
			uint64_t id;
			if (fixed) {
				if (c.end - c.p < 8)
					return fail(r, c.p, "packed flow ids cut short");
				id = read_le(c.p, 8);
				c.p += 8;
			} else if (read_varint(&c, &id)) {
				return fail(r, c.p, "malformed packed flow id");
			}
			add_flow(r, id, terminating);
		}
	}
	return 0;
}

static int read_track_event(reader *r, uint32_t sequence, int64_t ts, const pb_field *te)
{
	tl_perfetto_trace *t = r->t;
	tl_perfetto_event *events =
	    grow(r, t->events, &r->st->events_cap, t->nevents + 1, sizeof *t->events);
	if (!events)
		return 0;
	t->events = events;
	tl_perfetto_event *e = &t->events[t->nevents];
	*e = (tl_perfetto_event){
	    .order = t->nevents, .ts = ts, .first_arg = t->nargs, .first_flow = t->nflows};
	size_t cat_len = 0;
	pb_cursor c = cursor(te->ptr, te->len);
	pb_field f;
	FOR_FIELDS(r, c, f, rc)
	{
		const char *cat = NULL;
		int failed = 0;
		switch (f.number) {
		case TL_PF_EVENT_TYPE:
			if (f.wire == WIRE_VARINT)
				e->type = (int)f.value;
			break;
		case TL_PF_EVENT_TRACK_UUID:
			if (f.wire == WIRE_VARINT)
				e->track = f.value;
			break;
		case TL_PF_EVENT_NAME_IID:
			if (f.wire == WIRE_VARINT)
				e->name =
				    intern_get(r, sequence, TL_PF_INTERNED_EVENT_NAMES, f.value);
			break;
		case TL_PF_EVENT_NAME:
			if (f.wire == WIRE_LENGTH)
				e->name = copy(r, f.ptr, f.len);
			break;
		case TL_PF_EVENT_CATEGORY_IIDS:
			if (f.wire == WIRE_VARINT) {
				cat = intern_get(r, sequence, TL_PF_INTERNED_EVENT_CATEGORIES,
				                 f.value);
			} else if (f.wire == WIRE_LENGTH) {
				pb_cursor p = cursor(f.ptr, f.len);
				uint64_t iid;
				while (p.p < p.end && !read_varint(&p, &iid)) {
					const char *one = intern_get(
					    r, sequence, TL_PF_INTERNED_EVENT_CATEGORIES, iid);
					if (one)
						add_category(r, &cat_len, one);
				}
				if (p.p < p.end)
					return fail(r, p.p, "malformed packed category iids");
			}
			break;
		case TL_PF_EVENT_CATEGORIES:
			if (f.wire == WIRE_LENGTH)
				cat = copy(r, f.ptr, f.len);
			break;
		case TL_PF_EVENT_DEBUG_ANNOTATIONS:
			if (f.wire == WIRE_LENGTH)
				failed = read_annotation(r, sequence, &f);
			break;
		case TL_PF_EVENT_COUNTER_VALUE:
			if (f.wire == WIRE_VARINT) {
				e->counter_is_double = 0;
				e->counter_i = (int64_t)f.value;
			}
			break;
		case TL_PF_EVENT_DOUBLE_COUNTER_VALUE:
			if (f.wire == WIRE_FIXED64) {
				e->counter_is_double = 1;
				memcpy(&e->counter_d, &f.value, sizeof e->counter_d);
			}
			break;
		case TL_PF_EVENT_FLOW_IDS:
		case TL_PF_EVENT_TERMINATING_FLOW_IDS:
			failed =
			    read_flow_ids(r, &f, f.number == TL_PF_EVENT_TERMINATING_FLOW_IDS, 1);
			break;
		case 36: /* flow_ids_old */
		case 42: /* terminating_flow_ids_old */
			failed = read_flow_ids(r, &f, f.number == 42, 0);
			break;
		default:
			break;
		}
		if (failed)
			return failed;
		if (cat)
			add_category(r, &cat_len, cat);
	}
	if (cat_len)
		e->cat = copy(r, (const unsigned char *)r->scratch, cat_len);
	e = &t->events[t->nevents];
	e->nargs = t->nargs - e->first_arg;
	e->nflows = t->nflows - e->first_flow;
	t->nevents++;
	return 0;
}

static int read_packet(reader *r, const pb_field *packet)
{
	uint32_t sequence = 0;
	uint64_t flags = 0;
	int64_t ts = 0;
	pb_cursor c = cursor(packet->ptr, packet->len);
	pb_field f;
	FOR_FIELDS(r, c, f, rc)
	{
		if (f.number == TL_PF_PACKET_SEQUENCE_ID && f.wire == WIRE_VARINT)
			sequence = (uint32_t)f.value;
		else if (f.number == TL_PF_PACKET_SEQUENCE_FLAGS && f.wire == WIRE_VARINT)
			flags = f.value;
		else if (f.number == TL_PF_PACKET_TIMESTAMP && f.wire == WIRE_VARINT)
			ts = (int64_t)f.value;
	}
	if (flags & TL_PF_SEQ_INCREMENTAL_STATE_CLEARED)
		clear_sequence(r, sequence);
	c = cursor(packet->ptr, packet->len);
	FOR_FIELDS(r, c, f, rc)
	{
		if (f.number == TL_PF_PACKET_INTERNED_DATA && f.wire == WIRE_LENGTH) {
			int failed = read_interned(r, sequence, &f);
			if (failed)
				return failed;
		}
	}
	c = cursor(packet->ptr, packet->len);
	FOR_FIELDS(r, c, f, rc)
	{
		int failed = 0;
		if (f.wire != WIRE_LENGTH)
			continue;
		if (f.number == TL_PF_PACKET_TRACK_EVENT)
			failed = read_track_event(r, sequence, ts, &f);
		else if (f.number == TL_PF_PACKET_TRACK_DESCRIPTOR)
			failed = read_descriptor(r, &f);
		if (failed)
			return failed;
	}
	return 0;
}

int tl_perfetto_sniff(const char *data, size_t len)
{
	pb_cursor c = cursor((const unsigned char *)data, len);
	uint64_t tag, size;
	if (read_varint(&c, &tag) || tag != (TL_PF_TRACE_PACKET << 3 | WIRE_LENGTH) ||
	    read_varint(&c, &size) || size == 0)
		return 0;
	size_t avail = (size_t)(c.end - c.p);
	int whole = size <= avail;
	pb_cursor p = cursor(c.p, whole ? (size_t)size : avail);
	pb_field f;
	int rc, fields = 0;
	while ((rc = next_field(&p, &f)) == 1)
		fields++;
	/* Cut by len, the last field may be incomplete; within it, none may. */
	return fields > 0 && (rc == 0 || !whole);
}

int tl_perfetto_read(const char *data, size_t len, tl_perfetto_trace *out, tl_read_error *err)
{
	memset(out, 0, sizeof *out);
	if (err)
		memset(err, 0, sizeof *err);
	reader r = {.t = out, .base = (const unsigned char *)data, .err = err};
	out->state = calloc(1, sizeof *out->state);
	if (!out->state)
		return -ENOMEM;
	r.st = out->state;
	int rc = 0;
	pb_cursor c = cursor((const unsigned char *)data, len);
	pb_field f;
	while (rc == 0 && !r.nomem) {
		const unsigned char *at = c.p;
		int got = next_field(&c, &f);
		if (got == 0)
			break;
		if (got < 0) {
			rc = fail(&r, at, "malformed or cut short packet");
			break;
		}
		if (f.number != TL_PF_TRACE_PACKET || f.wire != WIRE_LENGTH)
			continue;
		out->packets++;
		rc = read_packet(&r, &f);
	}
	free(r.scratch);
	if (rc == 0 && r.nomem)
		rc = -ENOMEM;
	else if (rc == MALFORMED)
		rc = -EINVAL;
	if (rc)
		tl_perfetto_trace_free(out);
	return rc;
}

void tl_perfetto_trace_free(tl_perfetto_trace *trace)
{
	if (trace->state) {
		free(trace->state->interned);
		tl_id_map_free(&trace->state->track_by_uuid);
		tl_id_map_free(&trace->state->generation_by_sequence);
		free(trace->state);
	}
	free(trace->events);
	free(trace->tracks);
	free(trace->args);
	free(trace->flows);
	tl_str_arena_free(&trace->strings);
	memset(trace, 0, sizeof *trace);
}
