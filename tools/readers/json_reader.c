/*
 * Chrome JSON reader (formats.md section 3). A hand-written tokenizer and
 * recursive-descent parser: each traceEvents element is read straight into
 * a tl_json_event, with no document tree. Parse functions return P_OK,
 * P_ERROR (the error is filled), P_EOF (the input ended inside a value:
 * a truncated bare array keeps what came before) or P_NOMEM.
 */
#include "tools/readers/json_reader.h"

#include <errno.h>
#include <float.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ARENA_CHUNK_BYTES (64 * 1024)
#define MAX_NESTING 512
#define NUMBER_MAX 350

enum { P_OK = 0, P_ERROR = -1, P_EOF = -2, P_NOMEM = -3 };

/* ------------------------------------------------------------------------ */
/* String arena */

struct tl_str_chunk {
	struct tl_str_chunk *next;
	size_t used, size;
	char bytes[];
};

/*
 * The short strings an arena copied lately, by hash, so that a name, a
 * category or a key repeated through a trace is stored once, not once per
 * event: a fixed table, where a newer string takes an older one's place.
 */
#define RECENT_SLOTS 4096
#define RECENT_MAX_LEN 64

struct tl_str_recent {
	const char *str[RECENT_SLOTS];
	uint8_t len[RECENT_SLOTS];
};

static char *arena_store(tl_str_arena *arena, const char *s, size_t len);

const char *tl_str_arena_copy(tl_str_arena *arena, const char *s, size_t len)
{
	if (len > RECENT_MAX_LEN)
		return arena_store(arena, s, len);
	if (!arena->recent && !(arena->recent = calloc(1, sizeof *arena->recent)))
		return NULL;
	uint32_t h = 2166136261u; /* FNV-1a */
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	size_t slot = (h ^ h >> 16) & (RECENT_SLOTS - 1);
	struct tl_str_recent *recent = arena->recent;
	const char *seen = recent->str[slot];
	if (seen && recent->len[slot] == len && memcmp(seen, s, len) == 0)
		return seen;
	char *copy = arena_store(arena, s, len);
	if (copy) {
		recent->str[slot] = copy;
		recent->len[slot] = (uint8_t)len;
	}
	return copy;
}

static char *arena_store(tl_str_arena *arena, const char *s, size_t len)
{
	if (len > SIZE_MAX / 2)
		return NULL;
	struct tl_str_chunk *c = arena->chunks;
	if (!c || c->size - c->used < len + 1) {
		size_t size = len + 1 > ARENA_CHUNK_BYTES / 4 ? len + 1 : ARENA_CHUNK_BYTES;
		c = malloc(sizeof *c + size);
		if (!c)
			return NULL;
		c->used = 0;
		c->size = size;
		if (size != ARENA_CHUNK_BYTES && arena->chunks) {
			/* A dedicated chunk goes behind the head, which keeps its room. */
			c->next = arena->chunks->next;
			arena->chunks->next = c;
		} else {
			c->next = arena->chunks;
			arena->chunks = c;
		}
	}
	char *dst = c->bytes + c->used;
	if (len)
		memcpy(dst, s, len);
	dst[len] = '\0';
	c->used += len + 1;
	return dst;
}

static void free_chunks(struct tl_str_chunk *c)
{
	while (c) {
		struct tl_str_chunk *next = c->next;
		free(c);
		c = next;
	}
}

void tl_str_arena_reset(tl_str_arena *arena)
{
	struct tl_str_chunk *head = arena->chunks;
	if (!head || head->size != ARENA_CHUNK_BYTES) {
		tl_str_arena_free(arena);
		return;
	}
	free_chunks(head->next);
	head->next = NULL;
	head->used = 0;
	if (arena->recent)
		memset(arena->recent, 0, sizeof *arena->recent);
}

void tl_str_arena_free(tl_str_arena *arena)
{
	free_chunks(arena->chunks);
	arena->chunks = NULL;
	free(arena->recent);
	arena->recent = NULL;
}

/* ------------------------------------------------------------------------ */
/* Trace arrays */

tl_json_event *tl_json_trace_add_event(tl_json_trace *t)
{
	if (t->nevents == t->events_cap) {
		size_t n = t->events_cap ? t->events_cap * 2 : 256;
		tl_json_event *grown = realloc(t->events, n * sizeof *grown);
		if (!grown)
			return NULL;
		t->events = grown;
		t->events_cap = n;
	}
	tl_json_event *ev = &t->events[t->nevents];
	memset(ev, 0, sizeof *ev);
	ev->order = t->nevents++;
	ev->first_arg = t->nargs;
	return ev;
}

tl_json_arg *tl_json_trace_add_arg(tl_json_trace *t)
{
	if (t->nargs == t->args_cap) {
		size_t n = t->args_cap ? t->args_cap * 2 : 256;
		tl_json_arg *grown = realloc(t->args, n * sizeof *grown);
		if (!grown)
			return NULL;
		t->args = grown;
		t->args_cap = n;
	}
	tl_json_arg *arg = &t->args[t->nargs++];
	memset(arg, 0, sizeof *arg);
	return arg;
}

void tl_json_trace_free(tl_json_trace *t)
{
	free(t->events);
	free(t->args);
	tl_ftrace_text_free(&t->system);
	tl_str_arena_free(&t->strings);
	memset(t, 0, sizeof *t);
}

/* ------------------------------------------------------------------------ */
/* Numbers */

int tl_json_parse_double(const char *s, double *out)
{
	char *end = NULL;
	if (!*s)
		return 0;
	errno = 0;
	double d = strtod(s, &end);
	if (end == s || *end)
		return 0;
	*out = d;
	return 1;
}

/* An optional '-' then digits only, fitting int64. */
static int parse_integer_text(const char *s, int64_t *out)
{
	const char *p = s;
	int negative = *p == '-';
	if (negative)
		p++;
	if (!*p)
		return 0;
	uint64_t v = 0;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return 0;
		unsigned d = (unsigned)(*p - '0');
		if (v > ((uint64_t)INT64_MAX + 1 - d) / 10)
			return 0;
		v = v * 10 + d;
	}
	if (!negative && v > (uint64_t)INT64_MAX)
		return 0;
	*out = negative ? (int64_t)(0 - v) : (int64_t)v;
	return 1;
}

/* Rounds half away from zero; |x| must be below 2^63. Without libm. */
static int64_t round_half_away(double x)
{
	return x >= 0 ? (int64_t)(x + 0.5) : -(int64_t)(-x + 0.5);
}

static int double_to_ns(double d, int64_t *ns)
{
	if (!(d > -9.2e15 && d < 9.2e15))
		return 0; /* also NaN; beyond int64 nanoseconds anyway */
	if (d == (double)(int64_t)d) {
		*ns = (int64_t)d * 1000;
		return 1;
	}
	*ns = round_half_away(d * 1000.0);
	return 1;
}

int tl_json_coerce_ts(const tl_json_value *v, int64_t *ns)
{
	int64_t i;
	double d;
	switch (v->type) {
	case TL_JSON_INT:
		if (v->i > INT64_MAX / 1000 || v->i < INT64_MIN / 1000)
			return 0;
		*ns = v->i * 1000;
		return 1;
	case TL_JSON_DOUBLE:
		return double_to_ns(v->d, ns);
	case TL_JSON_STRING:
		if (parse_integer_text(v->s, &i)) {
			tl_json_value as_int = {.type = TL_JSON_INT, .i = i};
			return tl_json_coerce_ts(&as_int, ns);
		}
		return tl_json_parse_double(v->s, &d) && double_to_ns(d, ns);
	default:
		return 0;
	}
}

/* ------------------------------------------------------------------------ */
/* Tokenizer */

typedef struct parser {
	const char *s;
	size_t len;
	size_t pos;
	tl_json_trace *t;
	tl_read_error *err;
	char *scratch; /* the last string read, unescaped, NUL-terminated */
	size_t scratch_len, scratch_cap;
	char *key; /* the flattened args key being built */
	size_t key_len, key_cap;
	int depth;
	size_t line_pos, line_no; /* line_no is the line of byte line_pos */
	int mapped;               /* s is a private file mapping (tl_json_read_mapped) */
	size_t released;          /* bytes of s given back so far (a page multiple) */
	size_t events_seen;       /* events appended so far: the next one's order */
	/* tl_json_scan: each event is handed to on_event, then forgotten */
	tl_json_event_fn on_event;
	void *ctx;
	int hook_rc;          /* on_event's refusal, returned by the scan */
	size_t since_release; /* events since the strings were last freed */
	int in_event;         /* an event is being read, from its '{' at event_start */
	size_t event_start;
	int whole_string; /* the next string read may be any length (systemTraceEvents) */
} parser;

/* A scan forgets the strings of the events it handed on every so many
 * events (what they point to is the hook's to copy). */
#define SCAN_STRINGS_EVENTS 1024

/* How much of a mapped input the parser passes before giving it back. */
#define RELEASE_STEP ((size_t)1 << 20)
/*
 * What stays mapped behind the parser: the page cache holds a file in
 * folios of up to 2 MiB (aligned in the file), and a fault maps the whole
 * folio, the part already given back included. So only whole folios
 * behind the one being read are given back.
 */
#define RELEASE_FOLIO ((size_t)2 << 20)

/* Gives back the pages of a mapped input (mapped at its offset 0) before
 * the folio that holds byte pos. */
static void release_before(parser *p, size_t pos)
{
	if (!p->mapped || pos - p->released < RELEASE_STEP + RELEASE_FOLIO)
		return;
	size_t end = pos / RELEASE_FOLIO * RELEASE_FOLIO;
	if (end > p->released &&
	    madvise((void *)(uintptr_t)(p->s + p->released), end - p->released, MADV_DONTNEED) == 0)
		p->released = end;
}

/*
 * The 1-based line of byte pos. The count resumes from the position asked
 * last, so the lines of the events in file order cost one pass over the
 * input in all; only an earlier position (an error) counts from the start.
 */
static size_t line_at(parser *p, size_t pos)
{
	if (pos > p->len)
		pos = p->len;
	if (pos < p->line_pos) {
		p->line_pos = 0;
		p->line_no = 1;
	}
	const char *s = p->s + p->line_pos, *end = p->s + pos;
	while (s < end && (s = memchr(s, '\n', (size_t)(end - s))) != NULL) {
		p->line_no++;
		s++;
	}
	p->line_pos = pos;
	return p->line_no;
}

static int fail(parser *p, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(parser *p, size_t pos, const char *fmt, ...)
{
	if (!p->err)
		return P_ERROR;
	if (pos > p->len)
		pos = p->len;
	const char *nl = memrchr(p->s, '\n', pos);
	p->err->line = line_at(p, pos);
	p->err->column = pos - (nl ? (size_t)(nl - p->s) + 1 : 0) + 1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err->message, sizeof p->err->message, fmt, ap);
	va_end(ap);
	return P_ERROR;
}

static void skip_ws(parser *p)
{
	while (p->pos < p->len) {
		char c = p->s[p->pos];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		p->pos++;
	}
}

static int peek(parser *p)
{
	skip_ws(p);
	return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static int grow(char **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 256;
	while (n < need)
		n *= 2;
	char *grown = realloc(*buf, n);
	if (!grown)
		return -1;
	*buf = grown;
	*cap = n;
	return 0;
}

static int scratch_put(parser *p, const char *bytes, size_t n)
{
	if (grow(&p->scratch, &p->scratch_cap, p->scratch_len + n + 1))
		return P_NOMEM;
	memcpy(p->scratch + p->scratch_len, bytes, n);
	p->scratch_len += n;
	p->scratch[p->scratch_len] = '\0';
	return P_OK;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Raw control characters inside strings abort the import, except tab, line
 * feed and carriage return: Perfetto's own tests read a trace whose string
 * values span lines.
 */
static int is_tolerated_control(char c)
{
	return c == '\t' || c == '\n' || c == '\r';
}

static int fail_event_too_large(parser *p)
{
	return fail(p, p->event_start, "event larger than %zu MiB (the limit for one event)",
	            TL_JSON_EVENT_MAX >> 20);
}

/* Whether the event being read has grown past TL_JSON_EVENT_MAX at p->pos. */
static int event_too_large(const parser *p)
{
	return p->in_event && p->pos - p->event_start > TL_JSON_EVENT_MAX;
}

/*
 * A string at p->pos (the opening quote), unescaped into p->scratch when
 * copy is set, else only checked. Copied or not, a string is read no
 * further than its event's limit (TL_JSON_EVENT_MAX, from the event's
 * '{'); a copied string outside an event no longer than that limit either,
 * unless p->whole_string says so. A string only checked costs no memory:
 * the pages of a mapped input are given back behind it as it is read.
 */
static int scan_string(parser *p, int copy)
{
	size_t start = p->pos;
	size_t end = p->len; /* how far the string may be read */
	if (p->in_event && end - p->event_start > TL_JSON_EVENT_MAX + 1)
		end = p->event_start + TL_JSON_EVENT_MAX + 1;
	else if (copy && !p->in_event && !p->whole_string && end - start > TL_JSON_EVENT_MAX + 2)
		end = start + TL_JSON_EVENT_MAX + 2;
	p->pos++;
	p->scratch_len = 0;
	if (copy && scratch_put(p, "", 0))
		return P_NOMEM;
	for (;;) {
		size_t run = p->pos;
		while (run < end && p->s[run] != '"' && p->s[run] != '\\' &&
		       ((unsigned char)p->s[run] >= 0x20 || is_tolerated_control(p->s[run]))) {
			run++;
			if (!copy && !(run & (RELEASE_STEP - 1)))
				release_before(p, run);
		}
		if (copy && scratch_put(p, p->s + p->pos, run - p->pos))
			return P_NOMEM;
		p->pos = run;
		if (p->pos >= p->len)
			return P_EOF;
		if (p->pos >= end)
			return p->in_event ? fail_event_too_large(p)
			                   : fail(p, start, "string longer than %zu MiB",
			                          TL_JSON_EVENT_MAX >> 20);
		char c = p->s[p->pos];
		if (c == '"') {
			p->pos++;
			return P_OK;
		}
		if (c != '\\')
			return fail(p, p->pos, "raw control character 0x%02x in a string",
			            (unsigned char)c);
		if (p->pos + 1 >= p->len)
			return P_EOF;
		char e = p->s[p->pos + 1];
		const char *out = NULL;
		switch (e) {
		case '"':
			out = "\"";
			break;
		case '\\':
			out = "\\";
			break;
		case '/':
			out = "/";
			break;
		case 'b':
			out = "\b";
			break;
		case 'f':
			out = "\f";
			break;
		case 'n':
			out = "\n";
			break;
		case 'r':
			out = "\r";
			break;
		case 't':
			out = "\t";
			break;
		case 'u':
			break;
		default:
			return fail(p, p->pos, "invalid escape '\\%c' in a string", e);
		}
		if (out) {
			if (copy && scratch_put(p, out, 1))
				return P_NOMEM;
			p->pos += 2;
			continue;
		}
		if (p->pos + 6 > p->len)
			return P_EOF;
		unsigned cp = 0;
		for (int k = 2; k < 6; k++) {
			int h = hex_value(p->s[p->pos + (size_t)k]);
			if (h < 0)
				return fail(p, p->pos, "invalid \\u escape in a string");
			cp = cp << 4 | (unsigned)h;
		}
		if (cp >= 0xd800 && cp <= 0xdfff)
			return fail(
			    p, p->pos,
			    "surrogate escape \\u%04x in a string (not accepted by Perfetto)", cp);
		char utf8[3];
		size_t n;
		if (cp < 0x80) {
			utf8[0] = (char)cp;
			n = 1;
		} else if (cp < 0x800) {
			utf8[0] = (char)(0xc0 | cp >> 6);
			utf8[1] = (char)(0x80 | (cp & 0x3f));
			n = 2;
		} else {
			utf8[0] = (char)(0xe0 | cp >> 12);
			utf8[1] = (char)(0x80 | (cp >> 6 & 0x3f));
			utf8[2] = (char)(0x80 | (cp & 0x3f));
			n = 3;
		}
		if (copy && scratch_put(p, utf8, n))
			return P_NOMEM;
		p->pos += 6;
	}
}

static int read_string(parser *p)
{
	return scan_string(p, 1);
}

static int skip_string(parser *p)
{
	return scan_string(p, 0);
}

static int is_number_char(char c)
{
	return (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.' || c == 'e' || c == 'E';
}

static int read_number(parser *p, tl_json_value *v)
{
	size_t start = p->pos, end = p->pos;
	while (end < p->len && is_number_char(p->s[end]))
		end++;
	if (end >= p->len)
		return P_EOF;
	char text[NUMBER_MAX + 1];
	if (end - start > NUMBER_MAX)
		return fail(p, start, "number too long");
	memcpy(text, p->s + start, end - start);
	text[end - start] = '\0';
	p->pos = end;
	if (parse_integer_text(text, &v->i)) {
		v->type = TL_JSON_INT;
		return P_OK;
	}
	if (text[0] == '+' || !tl_json_parse_double(text, &v->d))
		return fail(p, start, "invalid number '%s'", text);
	/* beyond a double, as Perfetto's parser refuses it too (a value too
	 * small for one is 0, as there) */
	if (v->d > DBL_MAX || v->d < -DBL_MAX)
		return fail(p, start, "number out of range '%s'", text);
	v->type = TL_JSON_DOUBLE;
	return P_OK;
}

static int read_literal(parser *p, tl_json_value *v)
{
	static const struct {
		const char *text;
		tl_json_type type;
		int value;
	} literals[] = {
	    {"true", TL_JSON_BOOL, 1}, {"false", TL_JSON_BOOL, 0}, {"null", TL_JSON_NULL, 0}};
	size_t avail = p->len - p->pos;
	for (size_t i = 0; i < 3; i++) {
		size_t n = strlen(literals[i].text);
		if (avail >= n && memcmp(p->s + p->pos, literals[i].text, n) == 0) {
			p->pos += n;
			v->type = literals[i].type;
			v->i = literals[i].value;
			return P_OK;
		}
		if (avail < n && memcmp(p->s + p->pos, literals[i].text, avail) == 0)
			return P_EOF;
	}
	return fail(p, p->pos, "unexpected character '%c'", p->s[p->pos]);
}

static int skip_value(parser *p);

/* Skips the members of an object or array (at its opening bracket). */
static int skip_container(parser *p)
{
	char close = p->s[p->pos] == '{' ? '}' : ']';
	if (++p->depth > MAX_NESTING)
		return fail(p, p->pos, "nesting deeper than %d", MAX_NESTING);
	p->pos++;
	for (;;) {
		int c = peek(p);
		if (c < 0)
			return P_EOF;
		if (event_too_large(p))
			return fail_event_too_large(p);
		if (c == close) {
			p->pos++;
			p->depth--;
			return P_OK;
		}
		int rc;
		if (close == '}') {
			if (c != '"')
				return fail(p, p->pos, "expected a key string");
			if ((rc = skip_string(p)))
				return rc;
			if ((c = peek(p)) < 0)
				return P_EOF;
			if (c != ':')
				return fail(p, p->pos, "expected ':' after a key");
			p->pos++;
		}
		if ((rc = skip_value(p)))
			return rc;
		if ((c = peek(p)) < 0)
			return P_EOF;
		if (c == ',')
			p->pos++;
		else if (c != close)
			return fail(p, p->pos, "expected ',' or '%c'", close);
	}
}

/*
 * A scalar into *v (strings copied to the arena when keep is set, else
 * left in p->scratch); an object or array is skipped and only its type
 * reported.
 */
static int read_value(parser *p, tl_json_value *v, int keep)
{
	memset(v, 0, sizeof *v);
	int c = peek(p);
	if (c < 0)
		return P_EOF;
	if (c == '"') {
		int rc = read_string(p);
		if (rc)
			return rc;
		v->type = TL_JSON_STRING;
		if (keep) {
			v->s = tl_str_arena_copy(&p->t->strings, p->scratch, p->scratch_len);
			if (!v->s)
				return P_NOMEM;
		}
		return P_OK;
	}
	if (c == '{' || c == '[') {
		v->type = c == '{' ? TL_JSON_OBJECT : TL_JSON_ARRAY;
		return skip_container(p);
	}
	if (c == '-' || (c >= '0' && c <= '9'))
		return read_number(p, v);
	return read_literal(p, v);
}

/* A value passed over: a string is checked, not copied (scan_string). */
static int skip_value(parser *p)
{
	if (peek(p) == '"')
		return skip_string(p);
	tl_json_value v;
	return read_value(p, &v, 0);
}

/* ------------------------------------------------------------------------ */
/* Events */

static int key_push(parser *p, const char *part, size_t n, char sep)
{
	size_t extra = (p->key_len && sep ? 1 : 0) + n;
	if (grow(&p->key, &p->key_cap, p->key_len + extra + 1))
		return P_NOMEM;
	if (p->key_len && sep)
		p->key[p->key_len++] = sep;
	memcpy(p->key + p->key_len, part, n);
	p->key_len += n;
	p->key[p->key_len] = '\0';
	return P_OK;
}

static int add_arg(parser *p, const tl_json_value *v, int top_level)
{
	tl_json_arg *arg = tl_json_trace_add_arg(p->t);
	if (!arg)
		return P_NOMEM;
	arg->key = tl_str_arena_copy(&p->t->strings, p->key, p->key_len);
	if (!arg->key)
		return P_NOMEM;
	arg->top_level = top_level;
	arg->value = *v;
	return P_OK;
}

static int read_args_value(parser *p, int top_level);

/* The members of an object or array at p->pos, flattened under p->key. */
static int read_args_container(parser *p, int top_level)
{
	char close = p->s[p->pos] == '{' ? '}' : ']';
	size_t base = p->key_len;
	size_t index = 0;
	if (++p->depth > MAX_NESTING)
		return fail(p, p->pos, "nesting deeper than %d", MAX_NESTING);
	p->pos++;
	for (;;) {
		int c = peek(p);
		if (c < 0)
			return P_EOF;
		if (event_too_large(p))
			return fail_event_too_large(p);
		if (c == close) {
			p->pos++;
			p->depth--;
			return P_OK;
		}
		int rc;
		if (close == '}') {
			if (c != '"')
				return fail(p, p->pos, "expected a key string");
			if ((rc = read_string(p)))
				return rc;
			if ((rc = key_push(p, p->scratch, p->scratch_len, '.')))
				return rc;
			if ((c = peek(p)) < 0)
				return P_EOF;
			if (c != ':')
				return fail(p, p->pos, "expected ':' after a key");
			p->pos++;
		} else {
			char part[32];
			int n = snprintf(part, sizeof part, "[%zu]", index++);
			if ((rc = key_push(p, part, (size_t)n, 0)))
				return rc;
		}
		rc = read_args_value(p, top_level);
		p->key_len = base;
		if (p->key)
			p->key[base] = '\0';
		if (rc)
			return rc;
		if ((c = peek(p)) < 0)
			return P_EOF;
		if (c == ',')
			p->pos++;
		else if (c != close)
			return fail(p, p->pos, "expected ',' or '%c'", close);
	}
}

/* One args value under p->key: a scalar, or a container flattened. */
static int read_args_value(parser *p, int top_level)
{
	int c = peek(p);
	if (c < 0)
		return P_EOF;
	if (c == '{' || c == '[') {
		if (top_level) {
			tl_json_value v = {.type = c == '{' ? TL_JSON_OBJECT : TL_JSON_ARRAY};
			int rc = add_arg(p, &v, 1);
			if (rc)
				return rc;
		}
		return read_args_container(p, 0);
	}
	tl_json_value v;
	int rc = read_value(p, &v, 1);
	if (rc)
		return rc;
	return add_arg(p, &v, top_level);
}

static int read_args(parser *p)
{
	if (peek(p) != '{')
		return skip_value(p);
	p->key_len = 0;
	return read_args_container(p, 1);
}

static int key_is(const parser *p, const char *name)
{
	return strcmp(p->scratch, name) == 0;
}

/* "id2": {"local": x} or {"global": x}. */
static int read_id2(parser *p, tl_json_event *ev)
{
	if (peek(p) != '{')
		return skip_value(p);
	if (++p->depth > MAX_NESTING)
		return fail(p, p->pos, "nesting deeper than %d", MAX_NESTING);
	p->pos++;
	for (;;) {
		int c = peek(p);
		if (c < 0)
			return P_EOF;
		if (c == '}') {
			p->pos++;
			p->depth--;
			return P_OK;
		}
		if (c != '"')
			return fail(p, p->pos, "expected a key string");
		int rc = read_string(p);
		if (rc)
			return rc;
		tl_json_id_scope scope = key_is(p, "local")    ? TL_JSON_ID_LOCAL
		                         : key_is(p, "global") ? TL_JSON_ID_GLOBAL
		                                               : TL_JSON_ID_NONE;
		if ((c = peek(p)) < 0)
			return P_EOF;
		if (c != ':')
			return fail(p, p->pos, "expected ':' after a key");
		p->pos++;
		tl_json_value v;
		if ((rc = read_value(p, &v, 1)))
			return rc;
		if (scope != TL_JSON_ID_NONE) {
			ev->id_scope = scope;
			ev->id = v;
		}
		if ((c = peek(p)) < 0)
			return P_EOF;
		if (c == ',')
			p->pos++;
		else if (c != '}')
			return fail(p, p->pos, "expected ',' or '}'");
	}
}

/*
 * A pid or tid: an integer in [0, 2^32) (an integral float too, as
 * Perfetto truncates one); 0 for a value that is no number (a string is
 * the caller's). A number that is not such an integer is an error at its
 * position `at`: Perfetto would make it 0, a process or thread the trace
 * does not have.
 */
static int coerce_u32(parser *p, const char *key, const tl_json_value *v, size_t at, uint32_t *out)
{
	*out = 0;
	if (v->type == TL_JSON_INT && v->i >= 0 && v->i <= (int64_t)UINT32_MAX)
		*out = (uint32_t)v->i;
	else if (v->type == TL_JSON_DOUBLE && v->d >= 0 && v->d <= (double)UINT32_MAX &&
	         v->d == (double)(uint32_t)v->d)
		*out = (uint32_t)v->d;
	else if (v->type == TL_JSON_INT || v->type == TL_JSON_DOUBLE)
		return fail(p, at, "%s %.*s is not an integer from 0 to 4294967295", key,
		            (int)(p->pos - at), p->s + at);
	return P_OK;
}

/*
 * A time (ts, dur, tts, tdur) into *ns: *valid says whether it is one. A
 * number whose nanoseconds do not fit in 64 bits is an error at `at`; a
 * string that is no time is only not valid (its event is then counted
 * where it lacks what it needs, as Perfetto skips it).
 */
static int coerce_time(parser *p, const char *key, const tl_json_value *v, size_t at, int64_t *ns,
                       int *valid)
{
	*valid = tl_json_coerce_ts(v, ns);
	if (!*valid && (v->type == TL_JSON_INT || v->type == TL_JSON_DOUBLE))
		return fail(p, at, "%s %.*s is out of range (beyond 2^63 nanoseconds)", key,
		            (int)(p->pos - at), p->s + at);
	return P_OK;
}

/* One member of an event object: the key is in p->scratch. */
static int read_event_member(parser *p, tl_json_event *ev)
{
	tl_json_value v;
	int rc;
	if (key_is(p, "args"))
		return read_args(p);
	if (key_is(p, "id2"))
		return read_id2(p, ev);

	enum {
		K_OTHER,
		K_PH,
		K_NAME,
		K_CAT,
		K_TS,
		K_DUR,
		K_TTS,
		K_TDUR,
		K_PID,
		K_TID,
		K_ID,
		K_S,
		K_BP,
		K_BIND_ID,
		K_FLOW_IN,
		K_FLOW_OUT
	} k = K_OTHER;
	static const char *const names[] = {"",    "ph",      "name",    "cat",     "ts", "dur",
	                                    "tts", "tdur",    "pid",     "tid",     "id", "s",
	                                    "bp",  "bind_id", "flow_in", "flow_out"};
	for (size_t i = 1; i < sizeof names / sizeof names[0]; i++) {
		if (key_is(p, names[i]))
			k = (int)i;
	}
	if (k == K_OTHER)
		return skip_value(p);
	if (peek(p) < 0)
		return P_EOF;
	size_t at = p->pos; /* the value's, for its errors */
	if ((rc = read_value(p, &v, 1)))
		return rc;
	int valid;
	switch (k) {
	case K_PH:
		if (v.type == TL_JSON_STRING && v.s[0])
			ev->ph = v.s[0];
		break;
	case K_NAME:
		if (v.type == TL_JSON_STRING)
			ev->name = v.s;
		break;
	case K_CAT:
		if (v.type == TL_JSON_STRING && v.s[0])
			ev->cat = v.s;
		break;
	case K_TS:
		if ((rc = coerce_time(p, "ts", &v, at, &ev->ts, &valid)))
			return rc;
		if (valid)
			ev->has = (ev->has | TL_JSON_HAS_TS) & ~(unsigned)TL_JSON_BAD_TS;
		else
			ev->has = (ev->has | TL_JSON_BAD_TS) & ~(unsigned)TL_JSON_HAS_TS;
		break;
	case K_DUR:
		if ((rc = coerce_time(p, "dur", &v, at, &ev->dur, &valid)))
			return rc;
		if (valid)
			ev->has |= TL_JSON_HAS_DUR;
		break;
	case K_TTS:
		if ((rc = coerce_time(p, "tts", &v, at, &ev->tts, &valid)))
			return rc;
		if (valid)
			ev->has |= TL_JSON_HAS_TTS;
		break;
	case K_TDUR:
		if ((rc = coerce_time(p, "tdur", &v, at, &ev->tdur, &valid)))
			return rc;
		if (valid)
			ev->has |= TL_JSON_HAS_TDUR;
		break;
	case K_PID:
		ev->has |= TL_JSON_HAS_PID;
		if ((rc = coerce_u32(p, "pid", &v, at, &ev->pid)))
			return rc;
		ev->pid_name = v.type == TL_JSON_STRING ? v.s : NULL;
		break;
	case K_TID:
		ev->has |= TL_JSON_HAS_TID;
		if ((rc = coerce_u32(p, "tid", &v, at, &ev->tid)))
			return rc;
		ev->tid_name = v.type == TL_JSON_STRING ? v.s : NULL;
		break;
	case K_ID:
		if (ev->id_scope == TL_JSON_ID_NONE || ev->id_scope == TL_JSON_ID_PLAIN) {
			ev->id_scope = TL_JSON_ID_PLAIN;
			ev->id = v;
		}
		break;
	case K_S:
		if (v.type == TL_JSON_STRING)
			ev->scope = v.s[0];
		break;
	case K_BP:
		ev->bp_enclosing = v.type == TL_JSON_STRING && strcmp(v.s, "e") == 0;
		break;
	case K_BIND_ID:
		ev->bind_id = v;
		break;
	case K_FLOW_IN:
		ev->flow_in = v.type == TL_JSON_BOOL && v.i;
		break;
	case K_FLOW_OUT:
		ev->flow_out = v.type == TL_JSON_BOOL && v.i;
		break;
	default:
		break;
	}
	return P_OK;
}

#define P_HOOK -4 /* on_event refused the event: p->hook_rc says why */

/* A scan's event, read whole from s[start..p->pos): handed to the hook,
 * then forgotten, and the strings of the last events with it now and then
 * (never those of a systemTraceEvents text the trace holds). */
static int hand_on(parser *p, const tl_json_event *ev, size_t start)
{
	int rc = p->on_event(p->ctx, p->t, ev, start, p->pos - start);
	p->t->nevents = 0;
	p->t->nargs = 0;
	if (rc) {
		p->hook_rc = rc;
		return P_HOOK;
	}
	if (++p->since_release >= SCAN_STRINGS_EVENTS && !p->t->has_system_text) {
		tl_str_arena_reset(&p->t->strings);
		p->since_release = 0;
	}
	return P_OK;
}

/* An event object at p->pos; appended when complete and not empty. */
static int read_event(parser *p)
{
	size_t start = p->pos;
	size_t args_before = p->t->nargs;
	tl_json_event ev = {0};
	int members = 0;
	p->in_event = 1;
	p->event_start = start;
	p->pos++;
	for (;;) {
		int c = peek(p);
		if (c < 0)
			return P_EOF;
		if (event_too_large(p))
			return fail_event_too_large(p);
		if (c == '}') {
			p->pos++;
			break;
		}
		if (c != '"')
			return fail(p, p->pos, "expected a key string in an event");
		int rc = read_string(p);
		if (rc)
			return rc;
		if ((c = peek(p)) < 0)
			return P_EOF;
		if (c != ':')
			return fail(p, p->pos, "expected ':' after a key");
		p->pos++;
		if ((rc = read_event_member(p, &ev)))
			return rc;
		members++;
		if ((c = peek(p)) < 0)
			return P_EOF;
		if (c == ',')
			p->pos++;
		else if (c != '}')
			return fail(p, p->pos, "expected ',' or '}' in an event");
	}
	p->in_event = 0;
	if (!members) {
		p->t->empty_events++;
		return P_OK;
	}
	tl_json_event *slot = tl_json_trace_add_event(p->t);
	if (!slot)
		return P_NOMEM;
	*slot = ev;
	slot->order = p->events_seen++;
	slot->line = line_at(p, start);
	slot->first_arg = args_before;
	slot->nargs = p->t->nargs - args_before;
	return p->on_event ? hand_on(p, slot, start) : P_OK;
}

/* The traceEvents array (or the bare array) at p->pos. */
static int read_event_array(parser *p)
{
	p->pos++;
	for (;;) {
		int c = peek(p);
		if (c < 0)
			return P_EOF;
		if (c == ']') {
			p->pos++;
			return P_OK;
		}
		size_t args_before = p->t->nargs;
		int rc = c == '{' ? read_event(p) : fail(p, p->pos, "expected an event object");
		if (rc) {
			p->t->nargs = args_before; /* a partial event leaves nothing */
			return rc;
		}
		release_before(p, p->pos);
		if ((c = peek(p)) < 0)
			return P_EOF;
		if (c == ',')
			p->pos++;
		else if (c != ']')
			return fail(p, p->pos, "expected ',' or ']' after an event");
	}
}

static int read_system_text(parser *p)
{
	size_t start = p->pos;
	tl_json_value v;
	p->whole_string = 1; /* the text of a whole trace: read whole (docs/reading.md) */
	int rc = read_value(p, &v, 0);
	p->whole_string = 0;
	if (rc || v.type != TL_JSON_STRING)
		return rc;
	const char *text = tl_str_arena_copy(&p->t->strings, p->scratch, p->scratch_len);
	if (!text)
		return P_NOMEM;
	tl_read_error sub = {0};
	tl_ftrace_text_free(&p->t->system);
	rc = tl_ftrace_text_read(text, p->scratch_len, TL_FTRACE_STRICT | TL_FTRACE_LINES_ONLY,
	                         &p->t->system, &sub);
	if (rc == -ENOMEM)
		return P_NOMEM;
	if (rc)
		return fail(p, start, "systemTraceEvents, line %zu of the string: %s", sub.line,
		            sub.message);
	/* an unterminated last line is counted, but its number is the string's,
	 * not the file's (tl_import's unterminated_line is the file's) */
	p->t->system.unterminated_line = 0;
	p->t->has_system_text = 1;
	return P_OK;
}

/* Where the metadata key just read goes among the clock values, or NULL. */
static int64_t *clock_value_of_key(parser *p)
{
	tl_clock_values *values = &p->t->clock_values;
	if (key_is(p, "boottime_ns"))
		return &values->boottime_ns;
	if (key_is(p, "monotonic_ns"))
		return &values->monotonic_ns;
	if (key_is(p, "realtime_ns"))
		return &values->realtime_ns;
	return NULL;
}

/* "metadata": {..., "clock": "boot", ..., "boottime_ns": B, "monotonic_ns":
 * M, "realtime_ns": R, ...} as the JSON exporter writes it; any other value
 * is skipped. */
static int read_metadata(parser *p)
{
	if (peek(p) != '{')
		return skip_value(p);
	if (++p->depth > MAX_NESTING)
		return fail(p, p->pos, "nesting deeper than %d", MAX_NESTING);
	p->pos++;
	for (;;) {
		int c = peek(p);
		if (c < 0)
			return P_EOF;
		if (c == '}') {
			p->pos++;
			p->depth--;
			tl_clock_values *values = &p->t->clock_values;
			values->known = values->boottime_ns > 0 && values->monotonic_ns > 0 &&
			                values->realtime_ns > 0;
			return P_OK;
		}
		if (c != '"')
			return fail(p, p->pos, "expected a key string");
		int rc = read_string(p);
		if (rc)
			return rc;
		int is_clock = key_is(p, "clock");
		int64_t *clock_value = clock_value_of_key(p);
		if ((c = peek(p)) < 0)
			return P_EOF;
		if (c != ':')
			return fail(p, p->pos, "expected ':' after a key");
		p->pos++;
		if (!is_clock && !clock_value) {
			if ((rc = skip_value(p)))
				return rc;
		} else {
			if (peek(p) < 0)
				return P_EOF;
			size_t at = p->pos;
			tl_json_value v;
			if ((rc = read_value(p, &v, 0)))
				return rc;
			if (is_clock && v.type == TL_JSON_STRING)
				p->t->clock = key_is(p, "boot")   ? TL_TRACE_CLOCK_BOOT
				              : key_is(p, "mono") ? TL_TRACE_CLOCK_MONO
				                                  : TL_TRACE_CLOCK_UNKNOWN;
			if (clock_value && v.type == TL_JSON_INT)
				*clock_value = v.i;
			else if (clock_value && v.type == TL_JSON_DOUBLE)
				return fail(p, at,
				            "metadata %s %.*s is not an integer of nanoseconds",
				            p->scratch, (int)(p->pos - at), p->s + at);
		}
		if ((c = peek(p)) < 0)
			return P_EOF;
		if (c == ',')
			p->pos++;
		else if (c != '}')
			return fail(p, p->pos, "expected ',' or '}'");
	}
}

static int read_top_object(parser *p)
{
	p->pos++;
	for (;;) {
		int c = peek(p);
		if (c < 0)
			return P_EOF;
		if (c == '}') {
			p->pos++;
			return P_OK;
		}
		if (c != '"')
			return fail(p, p->pos, "expected a key string");
		int rc = read_string(p);
		if (rc)
			return rc;
		int which = key_is(p, "traceEvents")         ? 1
		            : key_is(p, "systemTraceEvents") ? 2
		            : key_is(p, "displayTimeUnit")   ? 3
		            : key_is(p, "metadata")          ? 4
		                                             : 0;
		if ((c = peek(p)) < 0)
			return P_EOF;
		if (c != ':')
			return fail(p, p->pos, "expected ':' after a key");
		p->pos++;
		if (which == 1 && peek(p) == '[')
			rc = read_event_array(p);
		else if (which == 2)
			rc = read_system_text(p);
		else if (which == 4)
			rc = read_metadata(p);
		else
			rc = skip_value(p);
		if (rc)
			return rc;
		if (which == 3)
			p->t->display_time_unit = 1;
		if ((c = peek(p)) < 0)
			return P_EOF;
		if (c == ',')
			p->pos++;
		else if (c != '}')
			return fail(p, p->pos, "expected ',' or '}'");
	}
}

static int is_json_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int tl_json_sniff(const char *data, size_t len)
{
	size_t i = 0;
	while (i < len && is_json_space(data[i]))
		i++;
	if (i < len && data[i] == '[') {
		i++;
		while (i < len && is_json_space(data[i]))
			i++;
	}
	if (i >= len || data[i] != '{')
		return 0;
	i++;
	while (i < len && is_json_space(data[i]))
		i++;
	return i < len && data[i] == '"';
}

static int json_read(parser *p)
{
	const char *data = p->s;
	size_t len = p->len;
	tl_json_trace *out = p->t;
	tl_read_error *err = p->err;
	memset(out, 0, sizeof *out);
	if (len >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0)
		p->pos = 3;

	int rc;
	int c = peek(p);
	if (c == '[') {
		out->bare_array = 1;
		rc = read_event_array(p);
		if (rc == P_EOF) {
			out->truncated = 1;
			rc = P_OK;
		}
	} else if (c == '{') {
		rc = read_top_object(p);
		if (rc == P_EOF)
			rc = fail(p, len,
			          "JSON trace file is incomplete (ends inside the top object)");
	} else {
		rc = fail(p, p->pos, "not a JSON trace: expected '{' or '['");
	}
	free(p->scratch);
	free(p->key);
	if (rc == P_OK)
		return 0;
	tl_json_trace_free(out);
	if (rc == P_NOMEM) {
		if (err)
			snprintf(err->message, sizeof err->message, "out of memory");
		return -ENOMEM;
	}
	return rc == P_HOOK ? p->hook_rc : -EINVAL;
}

int tl_json_read(const char *data, size_t len, tl_json_trace *out, tl_read_error *err)
{
	parser p = {.s = data, .len = len, .t = out, .err = err, .line_no = 1};
	return json_read(&p);
}

int tl_json_read_mapped(const char *data, size_t len, tl_json_trace *out, tl_read_error *err)
{
	parser p = {.s = data, .len = len, .t = out, .err = err, .line_no = 1, .mapped = 1};
	return json_read(&p);
}

int tl_json_scan(const char *data, size_t len, int mapped, tl_json_event_fn on_event, void *ctx,
                 tl_json_trace *out, tl_read_error *err)
{
	parser p = {.s = data,
	            .len = len,
	            .t = out,
	            .err = err,
	            .line_no = 1,
	            .mapped = mapped,
	            .on_event = on_event,
	            .ctx = ctx};
	return json_read(&p);
}

int tl_json_read_next_event(const char *data, size_t len, size_t *used, int *appended,
                            tl_json_trace *out)
{
	parser p = {.s = data, .len = len, .t = out, .line_no = 1, .events_seen = out->nevents};
	size_t events = out->nevents, args = out->nargs;
	int c = peek(&p);
	if (c == ',') {
		p.pos++;
		c = peek(&p);
	}
	int rc = c < 0 ? P_EOF : c == '{' ? read_event(&p) : P_ERROR;
	free(p.scratch);
	free(p.key);
	if (rc == P_OK) {
		*used = p.pos;
		*appended = out->nevents > events;
		return 0;
	}
	out->nevents = events;
	out->nargs = args;
	return rc == P_NOMEM ? -ENOMEM : rc == P_EOF ? -EAGAIN : -EINVAL;
}

int tl_json_read_event(const char *data, size_t len, tl_json_trace *out)
{
	parser p = {.s = data, .len = len, .t = out, .line_no = 1, .events_seen = out->nevents};
	size_t events = out->nevents, args = out->nargs;
	uint64_t empty = out->empty_events;
	int rc = peek(&p) == '{' ? read_event(&p) : P_ERROR;
	if (rc == P_OK && peek(&p) >= 0)
		rc = P_ERROR; /* bytes after the event */
	free(p.scratch);
	free(p.key);
	if (rc == P_OK && out->nevents == events + 1)
		return 0;
	out->nevents = events;
	out->nargs = args;
	out->empty_events = empty;
	return rc == P_NOMEM ? -ENOMEM : -EINVAL;
}
