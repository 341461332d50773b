/*
 * The binary snapshot writer (snapshot_binary.c), shared by the
 * signal-safe path (fd sink, static buffers) and the in-memory path used by
 * the JSON and ftrace snapshots. Internal.
 */
#ifndef TIMELINE_SNAPSHOT_WRITER_H
#define TIMELINE_SNAPSHOT_WRITER_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

#define TL_SINK_NAME_WORDS 8

struct tl_snapshot_sink {
	int fd;              /* >= 0: write(2) to it */
	unsigned char *mem;  /* fd < 0: malloc'd growing buffer */
	size_t mem_len, mem_cap;
	unsigned char *buf;  /* staging buffer */
	size_t buf_len, buf_cap;
	uint64_t *scratch;   /* one block's words */
	size_t scratch_words;
	int error;           /* first -errno */
	uint64_t written;    /* bytes written to fd */
	const char *last_name; /* the last kept name written, and its length */
	size_t last_name_len;
	/* and its words as written when they fit (0: they do not) */
	size_t last_name_nwords;
	uint64_t last_name_words[TL_SINK_NAME_WORDS];
	/* fd >= 0 and set: called instead of write(2) whenever the staging
	 * buffer is flushed. It writes what it chooses of buf, leaves the rest
	 * (less than half of buf_cap) at the start of buf (it may swap buf for
	 * a buffer of its own of the same size and alignment), sets buf_len,
	 * and keeps `written` the bytes given to it in all. 0 or -errno. */
	int (*write_out)(struct tl_snapshot_sink *sink);
	/* set (a file recorder's stream): runs of plain begins and ends are
	 * written packed (snapshot_format.h, TL_REC_PHASE_PACKED) */
	struct tl_pack *pack;
};
int tl_snapshot_write(struct tl_snapshot_sink *sink);
/* The child of a fork: forget a snapshot another thread had in progress. */
void tl_snapshot_after_fork_child(void);
/* The binary snapshot in a malloc'd buffer (caller frees). 0, -ENODEV, -ENOMEM. */
int tl_snapshot_to_memory(unsigned char **data, size_t *len);

#pragma GCC visibility pop

#endif /* TIMELINE_SNAPSHOT_WRITER_H */
