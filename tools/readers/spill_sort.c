#include "tools/readers/spill_sort.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recorder/atomic_file.h"

/*
 * A record in the file: this header, then len bytes. Native byte order and
 * no version: the file is the process's own and dies with it.
 */
struct file_header {
	uint64_t key;
	uint64_t len;
};

#define HEADER_BYTES sizeof(struct file_header)
#define IO_BUFFER_BYTES (64 * 1024) /* per run read back, and for writing */
#define FIRST_BLOCK_BYTES 4096
#define NO_READER SIZE_MAX

/* A record of the run in memory: its bytes are at block + offset. */
struct entry {
	uint64_t key;
	size_t seq; /* the order of adding within the run: the sort's last tie-break */
	size_t offset;
	size_t len;
};

/* A sorted run: bytes [start, end) of the file. */
struct run {
	uint64_t start;
	uint64_t end;
};

/* One run read back, with its current record. */
struct run_reader {
	uint64_t pos; /* the part of the run not yet read: [pos, end) */
	uint64_t end;
	unsigned char *buf;
	size_t cap;
	size_t head; /* buf[head, tail): read, not yet taken */
	size_t tail;
	uint64_t key;
	const unsigned char *rec; /* in buf, until the reader moves on */
	size_t len;
};

/* A k-way merge: the readers that still have a record, in a binary heap
 * ordered by (key, tie, reader), so that of records the tie function calls
 * equal the earlier run's comes first. The reader whose record was last
 * handed out stays on top until the next pop: its record lives in its
 * buffer until then. */
struct merge {
	struct run_reader *readers;
	size_t nreaders;
	size_t *heap;
	size_t nheap;
	size_t taken; /* NO_READER before the first pop */
	tl_spill_sort_tie_fn tie;
	void *tie_ctx;
};

struct tl_spill_sort {
	size_t budget;
	char *dir;
	int fd;    /* -1 until the first spill */
	int error; /* the first failure of the file, as -errno: returned from then on */
	bool finished;
	tl_spill_sort_tie_fn tie; /* NULL: equal keys in the order of adding */
	void *tie_ctx;

	/*
	 * The run being added, in one block of at most budget bytes: the
	 * records' bytes from the front, their entries from the back (in the
	 * reverse order of adding), so that the two together stay within the
	 * budget however the records' sizes are mixed.
	 */
	unsigned char *block;
	size_t block_cap;
	size_t memory_len; /* the records' bytes at the front */
	size_t nentries;
	size_t next_entry; /* read back from memory: the next entry */

	struct run *runs; /* in the order of adding: the merge's tie-break */
	size_t nruns;
	size_t runs_cap;
	size_t spilled_runs;
	uint64_t file_bytes; /* written to the file: its size */
	unsigned char *out;  /* IO_BUFFER_BYTES, for writing */
	size_t out_len;

	struct merge merge; /* read back from the file */
};

static int fail(tl_spill_sort *s, int rc)
{
	s->error = rc;
	return rc;
}

/* ---- the file ------------------------------------------------------------- */

static int open_file(tl_spill_sort *s)
{
	if (s->fd >= 0)
		return 0;
	if (!s->out) {
		s->out = malloc(IO_BUFFER_BYTES);
		if (!s->out)
			return -ENOMEM;
	}
	/* Without a name from the start; where the file system or the kernel
	 * lacks that, a named file removed at once (any other error of the
	 * first, the second meets again and reports). */
#ifdef O_TMPFILE
	s->fd = open(s->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (s->fd >= 0)
		return 0;
#endif
	size_t size = strlen(s->dir) + sizeof "/timeline-spill-XXXXXX";
	char *path = malloc(size);
	if (!path)
		return -ENOMEM;
	snprintf(path, size, "%s/timeline-spill-XXXXXX", s->dir);
	int rc = 0;
	s->fd = mkostemp(path, O_CLOEXEC);
	if (s->fd < 0)
		rc = -errno;
	else
		unlink(path);
	free(path);
	return rc;
}

static int flush_out(tl_spill_sort *s)
{
	int rc = tl_write_full(s->fd, s->out, s->out_len);
	if (rc)
		return rc;
	s->file_bytes += s->out_len;
	s->out_len = 0;
	return 0;
}

/* Appends to the file, through the buffer unless it is larger. */
static int put(tl_spill_sort *s, const void *data, size_t len)
{
	if (s->out_len + len > IO_BUFFER_BYTES) {
		int rc = flush_out(s);
		if (rc)
			return rc;
	}
	if (len >= IO_BUFFER_BYTES) {
		int rc = tl_write_full(s->fd, data, len);
		if (rc)
			return rc;
		s->file_bytes += len;
		return 0;
	}
	if (len)
		memcpy(s->out + s->out_len, data, len);
	s->out_len += len;
	return 0;
}

static int put_record(tl_spill_sort *s, uint64_t key, const void *rec, size_t len)
{
	struct file_header h = {.key = key, .len = len};
	int rc = put(s, &h, HEADER_BYTES);
	return rc ? rc : put(s, rec, len);
}

/* Ends the run that began at start: what was buffered goes to the file. */
static int end_run(tl_spill_sort *s, uint64_t start, struct run *run)
{
	int rc = flush_out(s);
	if (rc)
		return rc;
	run->start = start;
	run->end = s->file_bytes;
	return 0;
}

static int append_run(tl_spill_sort *s, struct run run)
{
	if (s->nruns == s->runs_cap) {
		size_t cap = s->runs_cap ? 2 * s->runs_cap : 64;
		struct run *runs = realloc(s->runs, cap * sizeof *runs);
		if (!runs)
			return -ENOMEM;
		s->runs = runs;
		s->runs_cap = cap;
	}
	s->runs[s->nruns++] = run;
	s->spilled_runs++;
	return 0;
}

/* ---- the run in memory ---------------------------------------------------- */

static struct entry *entries(const tl_spill_sort *s)
{
	return (struct entry *)(s->block + s->block_cap) - s->nentries;
}

static int compare_entries(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* With a tie function: its order between the keys and the order of adding. */
static int compare_entries_tied(const void *a, const void *b, void *sorter)
{
	const struct entry *x = a, *y = b;
	const tl_spill_sort *s = sorter;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	int c = s->tie(s->block + x->offset, x->len, s->block + y->offset, y->len, s->tie_ctx);
	if (c)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void sort_memory(tl_spill_sort *s)
{
	if (s->nentries == 0)
		return;
	if (s->tie)
		qsort_r(entries(s), s->nentries, sizeof(struct entry), compare_entries_tied, s);
	else
		qsort(entries(s), s->nentries, sizeof(struct entry), compare_entries);
}

/* Room for one more record of len bytes; the caller has checked that the
 * run with it stays within the budget. */
static int reserve(tl_spill_sort *s, size_t len)
{
	size_t entries_bytes = s->nentries * sizeof(struct entry);
	size_t need = s->memory_len + len + entries_bytes + sizeof(struct entry);
	if (need <= s->block_cap)
		return 0;
	size_t cap = s->block_cap ? s->block_cap : FIRST_BLOCK_BYTES;
	while (cap < need)
		cap = cap > s->budget / 2 ? s->budget : 2 * cap;
	unsigned char *block = realloc(s->block, cap);
	if (!block)
		return -ENOMEM;
	if (entries_bytes)
		memmove(block + cap - entries_bytes, block + s->block_cap - entries_bytes,
		        entries_bytes);
	s->block = block;
	s->block_cap = cap;
	return 0;
}

/* Sorts the run in memory and writes it to the file; the memory is then
 * empty. */
static int spill_memory(tl_spill_sort *s)
{
	if (s->nentries == 0)
		return 0;
	int rc = open_file(s);
	if (rc)
		return rc;
	sort_memory(s);
	uint64_t start = s->file_bytes;
	const struct entry *e = entries(s);
	for (size_t i = 0; i < s->nentries; i++) {
		rc = put_record(s, e[i].key, s->block + e[i].offset, e[i].len);
		if (rc)
			return rc;
	}
	struct run run;
	rc = end_run(s, start, &run);
	if (rc)
		return rc;
	s->nentries = 0;
	s->memory_len = 0;
	return append_run(s, run);
}

/* A record larger than the budget: a run of its own, from the caller's
 * memory, after the records added before it. */
static int spill_alone(tl_spill_sort *s, uint64_t key, const void *rec, size_t len)
{
	int rc = spill_memory(s);
	if (!rc)
		rc = open_file(s);
	if (rc)
		return rc;
	uint64_t start = s->file_bytes;
	struct run run;
	rc = put_record(s, key, rec, len);
	if (!rc)
		rc = end_run(s, start, &run);
	return rc ? rc : append_run(s, run);
}

/* ---- reading runs back ---------------------------------------------------- */

/* At least want bytes in the reader's buffer, reading as much as fits. */
static int reader_fill(int fd, struct run_reader *r, size_t want)
{
	size_t have = r->tail - r->head;
	if (have >= want)
		return 0;
	if (want > r->cap) {
		size_t cap = (want + IO_BUFFER_BYTES - 1) / IO_BUFFER_BYTES * IO_BUFFER_BYTES;
		unsigned char *buf = realloc(r->buf, cap);
		if (!buf)
			return -ENOMEM;
		r->buf = buf;
		r->cap = cap;
	}
	memmove(r->buf, r->buf + r->head, have);
	r->head = 0;
	r->tail = have;
	while (r->tail < want) {
		uint64_t left = r->end - r->pos;
		size_t room = r->cap - r->tail;
		size_t n = left < room ? (size_t)left : room;
		if (n == 0)
			return -EIO; /* a record past the run's end */
		ssize_t got = pread(fd, r->buf + r->tail, n, (off_t)r->pos);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			return -EIO; /* the file is shorter than what was written */
		r->tail += (size_t)got;
		r->pos += (uint64_t)got;
	}
	return 0;
}

/* The reader's next record: 1, 0 at the run's end, or -errno. */
static int reader_advance(int fd, struct run_reader *r)
{
	if (r->head == r->tail && r->pos == r->end)
		return 0;
	int rc = reader_fill(fd, r, HEADER_BYTES);
	if (rc)
		return rc;
	struct file_header h;
	memcpy(&h, r->buf + r->head, HEADER_BYTES);
	uint64_t left = (r->tail - r->head - HEADER_BYTES) + (r->end - r->pos);
	if (h.len > left)
		return -EIO; /* before asking for a buffer that large */
	rc = reader_fill(fd, r, HEADER_BYTES + (size_t)h.len);
	if (rc)
		return rc;
	r->key = h.key;
	r->len = (size_t)h.len;
	r->rec = r->buf + r->head + HEADER_BYTES;
	r->head += HEADER_BYTES + r->len;
	return 1;
}

static bool reader_before(const struct merge *m, size_t a, size_t b)
{
	const struct run_reader *x = &m->readers[a], *y = &m->readers[b];
	if (x->key != y->key)
		return x->key < y->key;
	if (m->tie) {
		int c = m->tie(x->rec, x->len, y->rec, y->len, m->tie_ctx);
		if (c)
			return c < 0;
	}
	return a < b;
}

static void sift_down(struct merge *m, size_t i)
{
	for (;;) {
		size_t least = i, left = 2 * i + 1, right = left + 1;
		if (left < m->nheap && reader_before(m, m->heap[left], m->heap[least]))
			least = left;
		if (right < m->nheap && reader_before(m, m->heap[right], m->heap[least]))
			least = right;
		if (least == i)
			return;
		size_t t = m->heap[i];
		m->heap[i] = m->heap[least];
		m->heap[least] = t;
		i = least;
	}
}

static void merge_end(struct merge *m)
{
	for (size_t i = 0; i < m->nreaders; i++)
		free(m->readers[i].buf);
	free(m->readers);
	free(m->heap);
	*m = (struct merge){.taken = NO_READER};
}

static int merge_start(const tl_spill_sort *s, struct merge *m, const struct run *runs,
                       size_t nruns)
{
	*m = (struct merge){.taken = NO_READER, .tie = s->tie, .tie_ctx = s->tie_ctx};
	m->readers = calloc(nruns, sizeof *m->readers);
	m->heap = malloc(nruns * sizeof *m->heap);
	if (!m->readers || !m->heap) {
		merge_end(m);
		return -ENOMEM;
	}
	m->nreaders = nruns;
	for (size_t i = 0; i < nruns; i++) {
		struct run_reader *r = &m->readers[i];
		r->pos = runs[i].start;
		r->end = runs[i].end;
		r->buf = malloc(IO_BUFFER_BYTES);
		if (!r->buf) {
			merge_end(m);
			return -ENOMEM;
		}
		r->cap = IO_BUFFER_BYTES;
		int rc = reader_advance(s->fd, r);
		if (rc < 0) {
			merge_end(m);
			return rc;
		}
		if (rc)
			m->heap[m->nheap++] = i;
	}
	for (size_t i = m->nheap / 2; i-- > 0;)
		sift_down(m, i);
	return 0;
}

/* The reader with the next record in *reader: 1, 0 when all are done, or
 * -errno. */
static int merge_pop(int fd, struct merge *m, size_t *reader)
{
	if (m->taken != NO_READER) {
		int rc = reader_advance(fd, &m->readers[m->taken]);
		if (rc < 0)
			return rc;
		if (rc == 0)
			m->heap[0] = m->heap[--m->nheap];
		sift_down(m, 0);
		m->taken = NO_READER;
	}
	if (m->nheap == 0)
		return 0;
	m->taken = m->heap[0];
	*reader = m->taken;
	return 1;
}

/* Merges nruns consecutive runs into one appended to the file. */
static int merge_into_run(tl_spill_sort *s, const struct run *runs, size_t nruns, struct run *out)
{
	struct merge m;
	int rc = merge_start(s, &m, runs, nruns);
	if (rc)
		return rc;
	uint64_t start = s->file_bytes;
	size_t i;
	while ((rc = merge_pop(s->fd, &m, &i)) == 1) {
		const struct run_reader *r = &m.readers[i];
		rc = put_record(s, r->key, r->rec, r->len);
		if (rc)
			break;
	}
	merge_end(&m);
	return rc ? rc : end_run(s, start, out);
}

/*
 * Until at most TL_SPILL_SORT_FAN_IN runs are left: merges groups of
 * consecutive runs (so the order of adding holds between the results),
 * as few and as small as bring the count down, the rest left as they are.
 */
static int merge_passes(tl_spill_sort *s)
{
	while (s->nruns > TL_SPILL_SORT_FAN_IN) {
		size_t out = 0, i = 0;
		while (i < s->nruns) {
			size_t left = s->nruns - i;
			/* merging a group of n takes n - 1 runs off the count */
			size_t group = 1;
			if (out + left > TL_SPILL_SORT_FAN_IN)
				group = out + left - TL_SPILL_SORT_FAN_IN + 1;
			if (group > TL_SPILL_SORT_FAN_IN)
				group = TL_SPILL_SORT_FAN_IN;
			if (group > left)
				group = left;
			if (group == 1) {
				s->runs[out++] = s->runs[i++];
				continue;
			}
			struct run merged;
			int rc = merge_into_run(s, &s->runs[i], group, &merged);
			if (rc)
				return rc;
			s->runs[out++] = merged;
			i += group;
		}
		s->nruns = out;
	}
	return 0;
}

/* ---- the interface -------------------------------------------------------- */

tl_spill_sort *tl_spill_sort_new(size_t budget, const char *dir)
{
	if (!dir) {
		/* /var/tmp before /tmp: it is for large files, on a disk, where
		 * /tmp is memory on many systems (a tmpfs) */
		dir = secure_getenv("TMPDIR");
		if (!dir || !*dir)
			dir = access("/var/tmp", W_OK | X_OK) == 0 ? "/var/tmp" : "/tmp";
	}
	tl_spill_sort *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->dir = strdup(dir);
	if (!s->dir) {
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->fd = -1;
	s->merge.taken = NO_READER;
	if (budget < TL_SPILL_SORT_MIN_BUDGET)
		budget = TL_SPILL_SORT_MIN_BUDGET;
	/* so that a record and the run beside it add up without overflowing */
	if (budget > SIZE_MAX / 4)
		budget = SIZE_MAX / 4;
	/* entries sit at the block's end: aligned when its size is */
	s->budget = budget - budget % _Alignof(struct entry);
	return s;
}

int tl_spill_sort_set_tie(tl_spill_sort *s, tl_spill_sort_tie_fn tie, void *ctx)
{
	if (s->error)
		return s->error;
	/* runs may already be sorted in the order set before */
	if (s->nentries || s->spilled_runs || s->finished)
		return -EINVAL;
	s->tie = tie;
	s->tie_ctx = ctx;
	return 0;
}

int tl_spill_sort_add(tl_spill_sort *s, uint64_t key, const void *rec, size_t len)
{
	if (s->error)
		return s->error;
	if (s->finished)
		return -EINVAL;
	int rc;
	if (len > s->budget - sizeof(struct entry)) {
		rc = spill_alone(s, key, rec, len);
		return rc ? fail(s, rc) : 0;
	}
	size_t used = s->memory_len + s->nentries * sizeof(struct entry);
	if (used + len + sizeof(struct entry) > s->budget) {
		rc = spill_memory(s);
		if (rc)
			return fail(s, rc);
	}
	rc = reserve(s, len);
	if (rc)
		return rc; /* nothing lost: the caller may free memory and retry */
	struct entry *e = entries(s) - 1;
	*e = (struct entry){.key = key, .seq = s->nentries, .offset = s->memory_len, .len = len};
	if (len)
		memcpy(s->block + s->memory_len, rec, len);
	s->memory_len += len;
	s->nentries++;
	return 0;
}

int tl_spill_sort_finish(tl_spill_sort *s)
{
	if (s->error)
		return s->error;
	if (s->finished)
		return -EINVAL;
	s->finished = true;
	if (s->spilled_runs == 0) {
		sort_memory(s);
		return 0;
	}
	int rc = spill_memory(s);
	if (rc)
		return fail(s, rc);
	/* from here on, memory is the readers' */
	free(s->block);
	s->block = NULL;
	s->block_cap = 0;
	rc = merge_passes(s);
	if (rc)
		return fail(s, rc);
	free(s->out);
	s->out = NULL;
	rc = merge_start(s, &s->merge, s->runs, s->nruns);
	return rc ? fail(s, rc) : 0;
}

int tl_spill_sort_next(tl_spill_sort *s, uint64_t *key, const void **rec, size_t *len)
{
	if (s->error)
		return s->error;
	if (!s->finished)
		return -EINVAL;
	if (s->spilled_runs == 0) {
		if (s->next_entry == s->nentries)
			return 0;
		const struct entry *e = &entries(s)[s->next_entry++];
		*key = e->key;
		*rec = s->block + e->offset;
		*len = e->len;
		return 1;
	}
	size_t i;
	int rc = merge_pop(s->fd, &s->merge, &i);
	if (rc < 0)
		return fail(s, rc);
	if (rc == 0)
		return 0;
	const struct run_reader *r = &s->merge.readers[i];
	*key = r->key;
	*rec = r->rec;
	*len = r->len;
	return 1;
}

size_t tl_spill_sort_runs(const tl_spill_sort *s)
{
	return s->spilled_runs;
}

uint64_t tl_spill_sort_spilled_bytes(const tl_spill_sort *s)
{
	return s->file_bytes;
}

void tl_spill_sort_free(tl_spill_sort *s)
{
	if (!s)
		return;
	merge_end(&s->merge);
	if (s->fd >= 0)
		close(s->fd);
	free(s->out);
	free(s->runs);
	free(s->block);
	free(s->dir);
	free(s);
}
