/*
 * Decoding of one in-memory event record (layout in record.h).
 *
 * Used by the signal-safe snapshot writer, so everything here is
 * async-signal-safe: no allocation, no stdio, no locale, no locks. The only
 * library call is strlen(3) on kept pointers.
 */
#include "recorder/record.h"

#include <string.h>

#include "recorder/format_int.h"
#include "recorder/function_table.h"

/* The flag bits that exist (record_view.h); any other marks a corrupt header. */
#define TL_REC_F_KNOWN                                                                             \
	(TL_REC_F_NAME_INLINE | (3u << TL_REC_F_SCOPE_SHIFT) | TL_REC_F_COUNTER_DOUBLE |           \
	 TL_REC_F_STRINGS_INLINE | TL_REC_F_TS_NS | TL_REC_F_NAME_NUMBER | TL_REC_F_FUNCTION)

/*
 * Counts the arguments of a header: the non-zero type nibbles, which must
 * come first and be valid tl_arg_type values. Returns -1 when they are not.
 */
static int count_args(uint64_t header)
{
	int nargs = 0;
	for (int i = 0; i < TL_MAX_ARGS; i++) {
		tl_arg_type type = TL_REC_ARGTYPE(header, i);
		if (type == TL_ARG_NONE)
			continue;
		if (type > TL_ARG_STRING_COPY || nargs != i)
			return -1;
		nargs++;
	}
	return nargs;
}

/* A cursor over the words of one record: [pos, end). */
struct record_cursor {
	const uint64_t *words;
	size_t pos;
	size_t end;
};

static int read_word(struct record_cursor *c, uint64_t *out)
{
	if (c->pos >= c->end)
		return 0;
	*out = c->words[c->pos++];
	return 1;
}

/* An inline string: a byte-length word, then the bytes in whole words. */
static int read_inline_string(struct record_cursor *c, const char **str, size_t *len)
{
	uint64_t bytes;
	if (!read_word(c, &bytes))
		return 0;
	size_t room = c->end - c->pos;
	if (bytes > (uint64_t)room * 8)
		return 0;
	*str = bytes ? (const char *)&c->words[c->pos] : "";
	*len = (size_t)bytes;
	c->pos += (size_t)((bytes + 7) / 8);
	return 1;
}

/* A kept pointer to a NUL-terminated string; NULL reads as "". */
static int read_kept_string(struct record_cursor *c, const char **str, size_t *len)
{
	uint64_t bits;
	if (!read_word(c, &bits))
		return 0;
	const char *s = (const char *)(uintptr_t)bits;
	if (!s)
		s = "";
	*str = s;
	*len = strlen(s);
	return 1;
}

static int read_string(struct record_cursor *c, int inline_string, const char **str, size_t *len)
{
	return inline_string ? read_inline_string(c, str, len) : read_kept_string(c, str, len);
}

size_t tl_record_decode(const uint64_t *words, size_t avail, tl_record_view *out)
{
	if (avail < 2)
		return 0;
	uint64_t header = words[1];
	size_t length = TL_REC_WORDS(header);
	char phase = TL_REC_PHASE(header);
	unsigned flags = TL_REC_FLAGS(header);
	if (length < 2 || length > avail || !tl_record_phase_known(phase) || (flags & ~TL_REC_F_KNOWN))
		return 0;
	if (flags & TL_REC_F_FUNCTION) {
		/* a BEGIN of two words named by the id in its header */
		if (phase != TL_PHASE_BEGIN || length != 2 ||
		    (flags & (TL_REC_F_NAME_INLINE | TL_REC_F_NAME_NUMBER)))
			return 0;
		out->ts = words[0];
		out->phase = phase;
		out->flags = flags;
		out->category = 0;
		out->name = NULL;
		out->name_len = 0;
		out->name_number = 0;
		out->value = TL_REC_FUNCTION_ID(header);
		out->nargs = 0;
		return 2;
	}
	int nargs = count_args(header);
	if (nargs < 0)
		return 0;

	int all_inline = (flags & TL_REC_F_STRINGS_INLINE) != 0;
	struct record_cursor c = {words, 2, length};

	out->ts = words[0];
	out->phase = phase;
	out->flags = flags;
	out->category = TL_REC_CATEGORY(header);
	out->name = NULL;
	out->name_len = 0;
	out->value = 0;
	out->nargs = (unsigned)nargs;

	out->name_number = 0;
	if (tl_record_has_name(phase)) {
		int name_inline = all_inline || (flags & TL_REC_F_NAME_INLINE);
		if (!read_string(&c, name_inline, &out->name, &out->name_len))
			return 0;
		if ((flags & TL_REC_F_NAME_NUMBER) && !read_word(&c, &out->name_number))
			return 0;
	} else if (flags & TL_REC_F_NAME_NUMBER) {
		return 0;
	}
	if (tl_record_has_value(phase) && !read_word(&c, &out->value))
		return 0;

	for (int i = 0; i < nargs; i++) {
		tl_arg_type type = TL_REC_ARGTYPE(header, i);
		out->args[i].type = type;
		out->args[i].bits = 0;
		out->args[i].str = NULL;
		out->args[i].str_len = 0;
		if (!read_string(&c, all_inline, &out->args[i].key, &out->args[i].key_len))
			return 0;
		int ok;
		switch (type) {
		case TL_ARG_STRING_COPY:
			ok = read_inline_string(&c, &out->args[i].str, &out->args[i].str_len);
			break;
		case TL_ARG_STRING:
			ok = read_string(&c, all_inline, &out->args[i].str, &out->args[i].str_len);
			break;
		default:
			ok = read_word(&c, &out->args[i].bits);
			break;
		}
		if (!ok)
			return 0;
	}

	/* The header's length must be exactly what the contents take. */
	if (c.pos != length)
		return 0;
	return length;
}

const char *tl_record_name(const tl_record_view *v, char *buf, size_t *len)
{
	if (v->flags & TL_REC_F_FUNCTION) {
		*len = tl_format_hex(buf, tl_function_address((uint32_t)v->value));
		return buf;
	}
	if (!(v->flags & TL_REC_F_NAME_NUMBER) || !v->name) {
		*len = v->name_len;
		return v->name;
	}
	size_t n = v->name_len < 1024 ? v->name_len : 1024;
	memcpy(buf, v->name, n);
	buf[n++] = ' ';
	n += tl_format_u64(buf + n, v->name_number);
	*len = n;
	return buf;
}
