/*
 * Records decoded: what a reader of the in-memory record format (record.h)
 * gets, one record at a time. Part of the tracer interface (tracer.h): a
 * tracer that copied its thread's records decodes them with this, and
 * never reads the raw words itself. Internal.
 */
#ifndef TIMELINE_RECORD_VIEW_H
#define TIMELINE_RECORD_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include <timeline/timeline.h>

/* A record's flags, as its header holds them and a decoded record
 * (tl_record_view.flags) gives them. */
/* The name is an inline string; in an event a recorder that writes
 * through receives, a copied name (the caller's bytes, name_len cut at
 * TL_COPY_MAX): the pointer is not to be kept. */
#define TL_REC_F_NAME_INLINE (1u << 0)
#define TL_REC_F_SCOPE_SHIFT 1            /* 2 bits: TL_EVENT_SCOPE_* >> 1 */
#define TL_REC_F_COUNTER_DOUBLE (1u << 3) /* counter value is a double */
#define TL_REC_F_STRINGS_INLINE (1u << 4) /* every string inline (binary snapshot) */
#define TL_REC_F_TS_NS (1u << 5)          /* timestamps already in ns (binary snapshot) */
/* The name is the kept string, a space and the decimal number in the word
 * after it ("frame 42" from "frame" and 42). In memory only: the binary
 * snapshot writes such a name out as an inline string. */
#define TL_REC_F_NAME_NUMBER (1u << 6)
/* A function record (record.h): a BEGIN named by a function id. Decoded,
 * its name is NULL, its value the id, its category 0; tl_record_name
 * names it after the id's address in this process ("0x..."). Given to a
 * recorder that writes through, its name is that address already. */
#define TL_REC_F_FUNCTION (1u << 7)

/* A name_len not measured yet (strlen of name): only in the events a
 * recorder that writes through receives. */
#define TL_RECORD_LEN_UNMEASURED ((size_t)-1)

/* One record decoded. Strings point into the record or at kept pointers. */
typedef struct tl_record_view {
	uint64_t ts;
	char phase;
	unsigned flags; /* TL_REC_F_*, above */
	unsigned category;
	const char *name; /* NULL for END */
	size_t name_len;
	uint64_t name_number; /* with TL_REC_F_NAME_NUMBER: the name is "name name_number" */
	uint64_t value; /* see tl_record_has_value; a function record's id */
	unsigned nargs;
	struct {
		const char *key;
		size_t key_len;
		tl_arg_type type;
		uint64_t bits;   /* numbers, bool, pointer */
		const char *str; /* strings */
		size_t str_len;
	} args[TL_MAX_ARGS];
} tl_record_view;

/*
 * Decodes the record at words[0..avail). Returns its length in words, or 0
 * when it is malformed or runs past avail. Kept pointers are dereferenced
 * (strlen) unless TL_REC_F_STRINGS_INLINE is set. Async-signal-safe.
 */
size_t tl_record_decode(const uint64_t *words, size_t avail, tl_record_view *out);

/* The size a buffer needs for tl_record_name (a kept name is read up to
 * 1024 bytes). */
#define TL_RECORD_NAME_MAX (1024 + 1 + 20)

/*
 * The decoded record's name as one string: v->name itself, or with
 * TL_REC_F_NAME_NUMBER the name, a space and the number written into buf
 * (TL_RECORD_NAME_MAX bytes, not NUL-terminated); for a function record,
 * "0x" and the address of its id in this process's function table, in
 * hexadecimal, written into buf. Sets *len. Async-signal-safe.
 */
const char *tl_record_name(const tl_record_view *v, char *buf, size_t *len);

#endif /* TIMELINE_RECORD_VIEW_H */
