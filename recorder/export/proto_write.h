/*
 * A protocol buffers encoder for the Perfetto exporter: one message built
 * in a growable buffer, field by field, in the wire format (varint,
 * 64-bit and length-delimited fields). A nested message is opened with
 * tl_proto_begin and closed with tl_proto_end, which writes its length in
 * front of it in the fewest bytes. Only what the exporter writes is here;
 * docs/formats.md ("Perfetto") says why it is not a generated encoder.
 *
 * Internal; allocates (not signal-safe).
 */
#ifndef TIMELINE_PROTO_WRITE_H
#define TIMELINE_PROTO_WRITE_H

#include <stddef.h>
#include <stdint.h>

typedef struct tl_proto {
	unsigned char *buf;
	size_t len;
	size_t cap;
	int err; /* -ENOMEM once an append failed; later appends do nothing */
} tl_proto;

/* An empty message. Free with tl_proto_free. */
void tl_proto_init(tl_proto *p);
void tl_proto_free(tl_proto *p);
/* Empties the message, keeping its memory. */
void tl_proto_reset(tl_proto *p);

/* Field of wire type 0: uint32, uint64, bool and enums as they are; int32
 * and int64 cast to uint64 (a negative value takes ten bytes). Inline: an
 * event takes several; the slow path grows the buffer. */
void tl_proto_varint_slow(tl_proto *p, uint32_t field, uint64_t v);
static inline void tl_proto_varint(tl_proto *p, uint32_t field, uint64_t v)
{
	if (p->err || p->cap - p->len < 20) {
		tl_proto_varint_slow(p, field, v);
		return;
	}
	unsigned char *out = p->buf + p->len;
	size_t n = 0;
	uint64_t tag = (uint64_t)field << 3; /* wire type 0 */
	while (tag >= 0x80) {
		out[n++] = (unsigned char)(tag | 0x80);
		tag >>= 7;
	}
	out[n++] = (unsigned char)tag;
	while (v >= 0x80) {
		out[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (unsigned char)v;
	p->len += n;
}
/* Field of wire type 1: fixed64 and double. */
void tl_proto_fixed64(tl_proto *p, uint32_t field, uint64_t v);
void tl_proto_double(tl_proto *p, uint32_t field, double v);
/* Length-delimited bytes. */
void tl_proto_bytes(tl_proto *p, uint32_t field, const void *data, size_t len);
/* A string field: s as UTF-8, each byte that does not start a well-formed
 * character replaced by U+FFFD. NULL is "". */
void tl_proto_string(tl_proto *p, uint32_t field, const char *s);

/* Opens a nested message (or the payload of a bytes field written in
 * pieces); returns the mark to pass to tl_proto_end. Marks nest. */
size_t tl_proto_begin(tl_proto *p, uint32_t field);
void tl_proto_end(tl_proto *p, size_t mark);

/* Bytes a varint of v takes (1 to 10). */
size_t tl_proto_varint_size(uint64_t v);
/* Writes v as a varint at out (room for 10 bytes); returns its length. */
size_t tl_proto_put_varint(unsigned char *out, uint64_t v);

#endif /* TIMELINE_PROTO_WRITE_H */
