/*
 * The protocol buffers encoder (proto_write.h). A nested message's length
 * is not known when it opens: one byte is kept for it, and tl_proto_end
 * moves the message's bytes when the length needs more. The nesting the
 * exporter writes is at most four deep and its inner messages are short,
 * so the moves are rare and small.
 */
#include "recorder/export/proto_write.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/export/slice_match.h"
#include "recorder/utf8.h"

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LENGTH = 2 };

void tl_proto_init(tl_proto *p)
{
	memset(p, 0, sizeof *p);
}

void tl_proto_free(tl_proto *p)
{
	free(p->buf);
	memset(p, 0, sizeof *p);
}

void tl_proto_reset(tl_proto *p)
{
	p->len = 0;
	p->err = 0;
}

/* The buffer grown for need more bytes; 0 or -ENOMEM (sticky). */
static int grow(tl_proto *p, size_t need)
{
	if (p->err)
		return p->err;
	size_t cap = p->cap ? p->cap : 256;
	while (cap - p->len < need) {
		if (cap > SIZE_MAX / 2) {
			p->err = -ENOMEM;
			return p->err;
		}
		cap *= 2;
	}
	unsigned char *grown = realloc(p->buf, cap);
	if (!grown) {
		p->err = -ENOMEM;
		return p->err;
	}
	p->buf = grown;
	p->cap = cap;
	return 0;
}

/* Room for need more bytes; 0 or -ENOMEM (sticky). Inline: every field
 * asks, and the buffer nearly always has room. */
static inline int reserve(tl_proto *p, size_t need)
{
	if (!p->err && need <= p->cap - p->len)
		return 0;
	return grow(p, need);
}

size_t tl_proto_varint_size(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

size_t tl_proto_put_varint(unsigned char *out, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		out[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (unsigned char)v;
	return n;
}

static void put_tag(tl_proto *p, uint32_t field, unsigned wire)
{
	p->len += tl_proto_put_varint(p->buf + p->len, (uint64_t)field << 3 | wire);
}

void tl_proto_varint_slow(tl_proto *p, uint32_t field, uint64_t v)
{
	if (reserve(p, 20))
		return;
	put_tag(p, field, WIRE_VARINT);
	p->len += tl_proto_put_varint(p->buf + p->len, v);
}

void tl_proto_fixed64(tl_proto *p, uint32_t field, uint64_t v)
{
	if (reserve(p, 18))
		return;
	put_tag(p, field, WIRE_FIXED64);
	for (int i = 0; i < 8; i++)
		p->buf[p->len++] = (unsigned char)(v >> (8 * i));
}

void tl_proto_double(tl_proto *p, uint32_t field, double v)
{
	uint64_t bits;
	memcpy(&bits, &v, sizeof bits);
	tl_proto_fixed64(p, field, bits);
}

void tl_proto_bytes(tl_proto *p, uint32_t field, const void *data, size_t len)
{
	if (len > SIZE_MAX - 20 || reserve(p, 20 + len))
		return;
	put_tag(p, field, WIRE_LENGTH);
	p->len += tl_proto_put_varint(p->buf + p->len, len);
	if (len)
		memcpy(p->buf + p->len, data, len);
	p->len += len;
}

void tl_proto_string(tl_proto *p, uint32_t field, const char *s)
{
	const unsigned char *u = (const unsigned char *)(s ? s : "");
	size_t avail = strlen((const char *)u);
	size_t clean = 0;
	for (size_t i = 0; i < avail;) {
		size_t n = tl_utf8_char_len(u + i, avail - i);
		clean += n ? n : sizeof TL_UTF8_REPLACEMENT - 1;
		i += n ? n : 1;
	}
	if (clean == avail) {
		tl_proto_bytes(p, field, u, avail);
		return;
	}
	if (clean > SIZE_MAX - 20 || reserve(p, 20 + clean))
		return;
	put_tag(p, field, WIRE_LENGTH);
	p->len += tl_proto_put_varint(p->buf + p->len, clean);
	for (size_t i = 0; i < avail;) {
		size_t n = tl_utf8_char_len(u + i, avail - i);
		if (n) {
			memcpy(p->buf + p->len, u + i, n);
			p->len += n;
			i += n;
		} else {
			memcpy(p->buf + p->len, TL_UTF8_REPLACEMENT,
			       sizeof TL_UTF8_REPLACEMENT - 1);
			p->len += sizeof TL_UTF8_REPLACEMENT - 1;
			i++;
		}
	}
}

size_t tl_proto_begin(tl_proto *p, uint32_t field)
{
	if (reserve(p, 11))
		return 0;
	put_tag(p, field, WIRE_LENGTH);
	size_t mark = p->len;
	p->buf[p->len++] = 0; /* the length, one byte until tl_proto_end knows better */
	return mark;
}

void tl_proto_end(tl_proto *p, size_t mark)
{
	if (p->err)
		return;
	size_t body = p->len - mark - 1;
	size_t need = tl_proto_varint_size(body);
	if (need > 1) {
		if (reserve(p, need - 1))
			return;
		memmove(p->buf + mark + need, p->buf + mark + 1, body);
		p->len += need - 1;
	}
	tl_proto_put_varint(p->buf + mark, body);
}
