/*
 * file: streams a trace of any length to a file. Threads write into blocks
 * of a fixed pool exactly as with the ring; a drain thread writes each
 * block to the file once it is full (or its thread exited) and gives it
 * back, so memory stays bounded by the pool whatever the run's length.
 * Writers never wait for the disk: when the drain falls behind and no
 * block is free, their events are dropped and counted per thread, and the
 * counts are in the file.
 *
 * The file is the binary snapshot format written as a stream
 * (snapshot_stream.h): metadata first, blocks as they fill, the stats and
 * END at shutdown. Cut anywhere (kill -9, a full disk), it reads up to its
 * last whole chunk. With a size limit it is rotated: PATH.1 is the
 * previous file, PATH.2 the one before, up to `keep` files in all.
 *
 * A regular file is written with O_DIRECT where its file system allows
 * it: the drain encodes blocks into a staging buffer of STAGING_BYTES and
 * writes whole sectors of it to the disk, without a copy into the page
 * cache (on the 2-core machine of docs/bench.md that copy cost eight
 * times the system time of the write itself). Half a buffer is written
 * asynchronously (Linux AIO) while the drain encodes into a second one;
 * the file is made longer ahead, as ext4 waits for a write that extends
 * it. What is staged reaches the file within SYNC_NS of the drain finding
 * nothing more to write, at tl_flush, and at the end: the last partial
 * sector is then written ended by a PADDING chunk, which later writes
 * cover; the end cuts the file to its size. Elsewhere (tmpfs, a pipe)
 * each block is written with write(2) as it is encoded.
 *
 * A forked child records in memory only: the drain thread is the parent's.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/aio_abi.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "recorder/atomic_file.h"
#include "recorder/recorder.h"

/* The drain wakes at least this often (new names, drop counts). */
#define DRAIN_PERIOD_NS (100 * 1000 * 1000)
/* Writers wake the drain once an eighth of the pool's blocks wait (at
 * least one), not at each block: one system call and one switch to the
 * drain per batch. A block waits at most this long when fewer do. */
#define BATCH_SHARE 8
#define BATCH_NS (10 * 1000 * 1000)
/* ... and at most this many bytes of blocks: the pool's blocks are backed
 * as the drain's backlog first reaches them, so a batch is memory. */
#define BATCH_MAX_BYTES (4u * 1024 * 1024)
/* Once 1/YIELD_SHARE of the pool's blocks wait for the drain, a writer
 * that hands one over cedes its CPU (sched_yield): on a machine whose CPUs
 * the writers keep busy, the drain, woken and runnable, then runs before
 * the pool runs out instead of at the end of a writer's time slice. A
 * writer never waits for the disk: a drain blocked in a write is not
 * runnable, and the yield returns at once. */
#define YIELD_SHARE 2
/* A drain that never catches up (the queue never empties) still writes
 * what changed of the metadata (names, per-thread drops) after this many
 * blocks or this long, whichever comes first: a scan of the thread table,
 * a few microseconds, against the encoding of that many blocks. */
#define METADATA_EVERY_BLOCKS 64
#define METADATA_EVERY_NS (10 * 1000 * 1000)
#define DEFAULT_KEEP 2
/* The pool's first blocks are backed at tl_init (the others as the drain's
 * backlog first reaches them, by the writer handed each): the backlog of a
 * drain that keeps up stays within them, and no writer pays for backing. */
#define BACKED_AT_START (16u * 1024 * 1024)
/* Direct writes: the staging buffer, written once half full. */
#define STAGING_BYTES (2u * 1024 * 1024)
/* Direct: writes in flight at most. */
#define IN_FLIGHT 4
/* Direct: the file is made longer ahead by this much. */
#define EXTEND_BYTES (16u * 1024 * 1024)
/* Blocks whose end in the file is remembered until the file holds it. */
#define MARKS 1024
/* What is staged reaches the file this long after the drain goes idle. */
#define SYNC_NS (10 * 1000 * 1000)

/* What was written of a block: its hand-out seq and records written
 * (written by the drain, read by stats). */
struct written {
	_Atomic uint64_t seq;
	_Atomic uint32_t records;
};

struct file_recorder {
	char path[PATH_MAX];
	uint64_t max_bytes;
	unsigned keep;
	int fd; /* -1: not writing (a write failed, or a forked child) */
	int given_fd; /* tl_options.file_fd, or -1: the file is `path` */
	struct tl_stream stream;
	/* A regular file is written by write_out at `base`, the file offset
	 * of the staging buffer's first byte; `direct`: with O_DIRECT, whole
	 * sectors (base stays a multiple of TL_STREAM_ALIGN). */
	bool direct;
	uint64_t base;
	uint64_t synced;     /* the stream's bytes up to here are in the file */
	int64_t synced_at;   /* CLOCK_MONOTONIC ns of the last sync */
	uint64_t extended;   /* direct: the file's size, ahead of what is written */
	bool sync;           /* write_out writes all that is staged */
	bool final;          /* ... and ends the file there (END was staged) */
	int64_t metadata_at; /* CLOCK_MONOTONIC ns of the last metadata written */
	unsigned char *tail; /* direct: the last partial sector, padded */
	/* Direct: staging buffers besides the stream's, swapped with it at
	 * each write so that the drain encodes into one while the disk takes
	 * the others (asynchronous writes, Linux AIO; aio 0: none, each
	 * written in place); flight[i], when busy, writes spare[i]. */
	unsigned char *spare[IN_FLIGHT];
	aio_context_t aio;
	struct flight {
		struct iocb cb;
		bool busy;
	} flight[IN_FLIGHT];
	/*
	 * Where the blocks streamed lately end in the file, with the records
	 * streamed up to each (f->records then), until the file holds them;
	 * `durable` is f->records at the last one it holds. A write that fails
	 * at `failed_at` loses the records of every block ending after it:
	 * they are taken back from the records written and counted as dropped,
	 * so that a full disk loses nothing uncounted. Drain side.
	 */
	struct mark {
		uint64_t end;
		uint64_t records;
	} marks[MARKS];
	unsigned marks_first, marks_count;
	uint64_t durable;
	uint64_t failed_at; /* UINT64_MAX: no write failed */
	struct tl_pool *pool;
	struct written *written; /* per pool block */
	_Atomic uint64_t records; /* streamed, all files */
	_Atomic uint64_t progress; /* odd while `written` and `records` change */
	_Atomic uint64_t lost;    /* records not written (write error) */
	int error;               /* the first write error, logged once */
	pthread_t drain;
	bool drain_running;
	sem_t wake;
	uint32_t batch;       /* blocks waiting that wake the drain */
	_Atomic uint64_t yields; /* writers that ceded their CPU to the drain */
	_Atomic int sleeping; /* the drain waits on `wake` (or is about to) */
	_Atomic int stopping;
	pthread_mutex_t write_lock; /* the drain and tl_flush */
};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Writes iov in full at file offset `at`. A direct write the file system
 * refuses (EINVAL: an alignment it does not take) is done again through
 * the page cache, and so are all later ones. 0 or -errno. */
static int write_fully(struct file_recorder *f, struct iovec *iov, int n, uint64_t at)
{
	while (n > 0) {
		ssize_t w = pwritev(f->fd, iov, n, (off_t)at);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EINVAL && f->direct) {
				int flags = fcntl(f->fd, F_GETFL);
				if (flags >= 0 && fcntl(f->fd, F_SETFL, flags & ~O_DIRECT) == 0) {
					f->direct = false;
					continue;
				}
			}
			int rc = -errno;
			if (at < f->failed_at)
				f->failed_at = at;
			return rc;
		}
		if (w == 0) {
			if (at < f->failed_at)
				f->failed_at = at;
			return -EIO;
		}
		at += (uint64_t)w;
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (unsigned char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* Waits for at least one of the writes in flight (none: returns at
 * once); a short or refused one is done again in place. 0 or -errno. */
static int wait_some(struct file_recorder *f)
{
	int busy = 0;
	for (int i = 0; i < IN_FLIGHT; i++)
		busy += f->flight[i].busy;
	if (!busy)
		return 0;
	struct io_event ev[IN_FLIGHT];
	long got;
	do
		got = syscall(SYS_io_getevents, f->aio, 1, IN_FLIGHT, ev, NULL);
	while (got < 0 && errno == EINTR);
	if (got < 1)
		return -errno;
	int rc = 0;
	for (long e = 0; e < got; e++) {
		struct flight *w = (struct flight *)(uintptr_t)ev[e].obj;
		uint64_t done = ev[e].res >= 0 ? (uint64_t)ev[e].res : 0;
		w->busy = false;
		if (done == w->cb.aio_nbytes || rc)
			continue;
		struct iovec rest = {(unsigned char *)(uintptr_t)w->cb.aio_buf + done,
		                     w->cb.aio_nbytes - done};
		rc = write_fully(f, &rest, 1, (uint64_t)w->cb.aio_offset + done);
	}
	return rc;
}

/* Waits for every write in flight. 0 or -errno. */
static int wait_all(struct file_recorder *f)
{
	int rc = 0;
	for (int i = 0; i < IN_FLIGHT; i++)
		while (f->flight[i].busy) {
			int r = wait_some(f);
			if (r && !rc)
				rc = r;
		}
	return rc;
}

/* Writes the stream's buf[0, len) at `at` without waiting, and gives the
 * stream a free buffer of the same size in its place, where the `keep`
 * bytes after len are copied. A write that extends the file is done
 * synchronously (ext4), so the file is made longer ahead, by EXTEND_BYTES
 * at a time. 0 or -errno. */
static int write_async(struct file_recorder *f, struct tl_snapshot_sink *s, size_t len,
                       size_t keep, uint64_t at)
{
	int i = 0, rc;
	while (f->flight[i].busy)
		if (++i == IN_FLIGHT) {
			if ((rc = wait_some(f)) != 0)
				return rc;
			i = 0;
		}
	if (at + len > f->extended) {
		/* not far beyond a size limit: the file is ended there; whole
		 * sectors, which readers take as not written while all zero */
		uint64_t ahead = EXTEND_BYTES;
		if (f->max_bytes && ahead > f->max_bytes)
			ahead = (f->max_bytes + TL_STREAM_ALIGN - 1) / TL_STREAM_ALIGN * TL_STREAM_ALIGN;
		f->extended = at + len + ahead;
		if (ftruncate(f->fd, (off_t)f->extended) != 0) {
			rc = -errno;
			if (at < f->failed_at)
				f->failed_at = at;
			return rc;
		}
	}
	unsigned char *buf = s->buf;
	memcpy(f->spare[i], buf + len, keep);
	s->buf = f->spare[i];
	f->spare[i] = buf;
	struct flight *w = &f->flight[i];
	w->cb = (struct iocb){.aio_data = (uint64_t)(uintptr_t)w,
	                      .aio_fildes = (uint32_t)f->fd,
	                      .aio_lio_opcode = IOCB_CMD_PWRITE,
	                      .aio_buf = (uint64_t)(uintptr_t)buf,
	                      .aio_nbytes = len,
	                      .aio_offset = (int64_t)at};
	struct iocb *list[1] = {&w->cb};
	if (syscall(SYS_io_submit, f->aio, 1, list) == 1) {
		w->busy = true;
		return 0;
	}
	struct iovec iov = {buf, len};
	return write_fully(f, &iov, 1, at);
}

/*
 * The stream's output to a regular file (snapshot_writer.h). Through the
 * page cache: all that is staged, at every call. Direct: the whole sectors
 * staged once the buffer is half full; on a sync, all of it, the last
 * partial sector ended by a PADDING chunk (one write: a process killed
 * meanwhile leaves the file's chunks whole), that sector staying staged
 * for the next write to cover; at the end, the file cut to its exact size.
 */
static int write_out(struct tl_snapshot_sink *s)
{
	struct file_recorder *f =
	    (struct file_recorder *)(void *)((unsigned char *)s -
	                                     offsetof(struct file_recorder, stream.sink));
	bool direct = f->direct, all = f->sync || f->final || !direct;
	size_t len = s->buf_len;
	if (!all && len < s->buf_cap / 2) {
		s->written = f->base + len;
		return 0;
	}
	size_t whole = direct ? len - len % TL_STREAM_ALIGN : len;
	if (!all && f->aio) {
		/* the whole sectors go to the disk while the stream goes on in
		 * another buffer */
		int rc = write_async(f, s, whole, len - whole, f->base);
		if (rc)
			return rc;
		f->base += whole;
		s->buf_len = len - whole;
		s->written = f->base + s->buf_len;
		return 0;
	}
	int rc = wait_all(f);
	if (rc)
		return rc;
	struct iovec iov[2] = {{s->buf, whole}, {f->tail, 0}};
	if (direct && all) {
		/* the partial sector, then a PADDING chunk to the sector's end */
		size_t part = len - whole;
		size_t padded = (part + TL_STREAM_PADDING_MIN + TL_STREAM_ALIGN - 1) /
		                TL_STREAM_ALIGN * TL_STREAM_ALIGN;
		memcpy(f->tail, s->buf + whole, part);
		tl_stream_padding(f->tail + part, padded - part);
		iov[1].iov_len = padded;
	}
	rc = write_fully(f, iov, 2, f->base);
	if (rc)
		return rc;
	memmove(s->buf, s->buf + whole, len - whole);
	f->base += whole;
	s->buf_len = len - whole;
	s->written = f->base + s->buf_len;
	if (all)
		f->synced = s->written;
	/* the padding and the room made ahead go, whatever wrote them */
	if (f->final && ftruncate(f->fd, (off_t)s->written) != 0)
		return -errno;
	return 0;
}

/* The buffers of direct writes, and the AIO context when the kernel gives
 * one. 0 or -ENOMEM. */
static int output_init(struct file_recorder *f)
{
	f->tail = aligned_alloc(TL_STREAM_ALIGN, 2 * TL_STREAM_ALIGN);
	if (!f->tail)
		return -ENOMEM;
	for (int i = 0; i < IN_FLIGHT; i++)
		if (!(f->spare[i] = aligned_alloc(TL_STREAM_ALIGN, STAGING_BYTES)))
			return 0; /* written in place */
	if (syscall(SYS_io_setup, IN_FLIGHT, &f->aio) != 0)
		f->aio = 0;
	return 0;
}

static void output_free(struct file_recorder *f)
{
	if (f->aio)
		syscall(SYS_io_destroy, f->aio);
	for (int i = 0; i < IN_FLIGHT; i++)
		free(f->spare[i]);
	free(f->tail);
}

/* The file to write: the caller's descriptor (a duplicate of it), or a new
 * file put under the path at once, never through a link or into a FIFO or
 * device planted at the name (recorder/atomic_file.h). */
static int open_file(struct file_recorder *f)
{
	if (f->given_fd >= 0)
		f->fd = fcntl(f->given_fd, F_DUPFD_CLOEXEC, 3);
	else
		f->fd = tl_fresh_file_open(f->path);
	if (f->fd < 0)
		return f->given_fd >= 0 ? -errno : f->fd;
	struct stat sb;
	bool regular = fstat(f->fd, &sb) == 0 && S_ISREG(sb.st_mode);
	int flags = regular ? fcntl(f->fd, F_GETFL) : -1;
	f->direct = flags >= 0 && fcntl(f->fd, F_SETFL, flags | O_DIRECT) == 0;
	f->base = f->synced = f->extended = 0;
	f->sync = f->final = false;
	f->marks_first = f->marks_count = 0;
	f->durable = atomic_load(&f->records);
	f->failed_at = UINT64_MAX;
	f->synced_at = now_ns();
	int rc = tl_stream_open(&f->stream, f->fd, regular ? write_out : NULL,
	                        regular ? STAGING_BYTES : 0);
	if (rc) {
		tl_stream_close(&f->stream, 0, 0, 0);
		close(f->fd);
		f->fd = -1;
	}
	return rc;
}

/* Stops writing after a failed write: what is on disk stays readable. */
/* The end of what the file holds for sure: below every write still to
 * complete. */
static uint64_t durable_end(const struct file_recorder *f)
{
	const struct tl_snapshot_sink *s = &f->stream.sink;
	if (!s->write_out)
		return s->written; /* write(2) at each block: written is written */
	uint64_t end = f->base;
	for (int i = 0; i < IN_FLIGHT; i++)
		if (f->flight[i].busy && (uint64_t)f->flight[i].cb.aio_offset < end)
			end = (uint64_t)f->flight[i].cb.aio_offset;
	return end;
}

/* Forgets the marks of blocks the file holds. */
static void marks_settle(struct file_recorder *f, uint64_t held)
{
	while (f->marks_count && f->marks[f->marks_first].end <= held) {
		f->durable = f->marks[f->marks_first].records;
		f->marks_first = (f->marks_first + 1) % MARKS;
		f->marks_count--;
	}
}

/* Notes that the records streamed so far end at `end` in the file. With
 * every mark taken (many small blocks: a flush writes the partly filled
 * ones), the last one is moved to `end`: the blocks it covered then count
 * as lost with this one should a write fail before `end`, never the
 * other way round. */
static void mark_block(struct file_recorder *f, uint64_t end)
{
	marks_settle(f, durable_end(f));
	struct mark m = {end, atomic_load(&f->records)};
	if (f->marks_count == MARKS)
		f->marks[(f->marks_first + MARKS - 1) % MARKS] = m;
	else
		f->marks[(f->marks_first + f->marks_count++) % MARKS] = m;
}

/* After a failed write: the records of the blocks that end beyond what the
 * file holds are lost, and counted so. */
static void count_lost(struct file_recorder *f)
{
	uint64_t held = f->failed_at;
	if (!f->stream.sink.write_out || held == UINT64_MAX)
		held = durable_end(f);
	/* a sync wrote all that was staged, its partial sector included,
	 * which the next write starts by writing again */
	if (held < f->synced)
		held = f->synced;
	marks_settle(f, held);
	uint64_t records = atomic_load(&f->records);
	uint64_t lost = records > f->durable ? records - f->durable : 0;
	if (!lost)
		return;
	atomic_fetch_add(&f->progress, 1);
	atomic_fetch_sub(&f->records, lost);
	atomic_fetch_add(&f->lost, lost);
	atomic_fetch_add_explicit(&f->pool->dropped, lost, memory_order_relaxed);
	atomic_fetch_add(&f->progress, 1);
	f->marks_count = 0;
}

static void write_failed(struct file_recorder *f, int rc)
{
	if (f->error)
		return;
	f->error = rc;
	tl_log(TL_LOG_ERROR,
	       "file recorder: writing %s: %s; the file ends here, later events are counted as "
	       "dropped",
	       f->path, strerror(-rc));
	wait_all(f);
	count_lost(f);
	tl_stream_close(&f->stream, 0, 0, 0);
	close(f->fd);
	f->fd = -1;
}

/* PATH -> PATH.1 -> PATH.2 ...; the oldest beyond `keep` files is removed. */
static int rotate(struct file_recorder *f)
{
	f->final = true;
	int rc = tl_stream_close(&f->stream, 1, f->records, f->lost);
	if (close(f->fd) != 0 && rc == 0)
		rc = -errno;
	f->fd = -1;
	if (rc)
		return rc;
	char from[PATH_MAX + 16], to[PATH_MAX + 16];
	for (unsigned i = f->keep - 1; i >= 1; i--) {
		if (i == 1)
			snprintf(from, sizeof from, "%s", f->path);
		else
			snprintf(from, sizeof from, "%s.%u", f->path, i - 1);
		snprintf(to, sizeof to, "%s.%u", f->path, i);
		if (rename(from, to) != 0 && errno != ENOENT)
			return -errno;
	}
	if (f->keep == 1)
		unlink(f->path);
	return open_file(f);
}

/* Notes that block `seq` has `records` written, `more` of them just now:
 * one short update that stats sees whole (the progress count is odd while
 * it changes). */
static void note_written(struct file_recorder *f, struct written *w, uint64_t seq,
                         uint32_t records, uint32_t more)
{
	atomic_fetch_add(&f->progress, 1);
	atomic_store(&w->seq, seq);
	atomic_store(&w->records, records);
	atomic_fetch_add(&f->records, more);
	atomic_fetch_add(&f->progress, 1);
}

/* Writes block b, the pool's block `index`, from where the last write of
 * it stopped; `settled`: a retired block the drain holds. The index is the
 * caller's: a block being handed out has its own written without a lock
 * (claim_fresh), which a flush walking the owned blocks must not read. */
static void write_block(struct file_recorder *f, struct tl_pool *pool, struct tl_block *b,
                        uint32_t index, int settled)
{
	struct written *w = &f->written[index];
	uint64_t seq = atomic_load_explicit(&b->seq, memory_order_relaxed);
	uint32_t done = atomic_load(&w->seq) == seq ? atomic_load(&w->records) : 0;
	if (f->fd < 0) {
		uint64_t records = tl_block_records(b);
		if (records > done) {
			atomic_fetch_add(&f->lost, records - done);
			atomic_fetch_add_explicit(&pool->dropped, records - done,
						  memory_order_relaxed);
			note_written(f, w, seq, (uint32_t)records, 0);
		}
		return;
	}
	uint32_t upto = done;
	int rc = tl_stream_block(&f->stream, b, &upto, settled);
	if (rc == -EAGAIN)
		return; /* changed hands meanwhile: a torn read, counted by nobody */
	note_written(f, w, seq, upto, upto - done);
	/* the stream's end: what it gave the file's writes and what it still
	 * stages (a block whose write failed ends beyond any write) */
	mark_block(f, rc                        ? UINT64_MAX
	              : f->stream.sink.write_out ? f->stream.sink.written
	                                         : f->stream.sink.written + f->stream.sink.buf_len);
	if (rc) {
		write_failed(f, rc);
		return;
	}
	if (f->max_bytes && f->stream.bytes >= f->max_bytes && (rc = rotate(f)) != 0)
		write_failed(f, rc);
}

/* Writes what changed of the metadata. Under write_lock. */
static void write_metadata(struct file_recorder *f)
{
	int rc;
	f->metadata_at = now_ns();
	if (f->fd >= 0 && (rc = tl_stream_metadata(&f->stream)) != 0)
		write_failed(f, rc);
}

/* Writes new metadata, then every block waiting, giving each back; while
 * blocks keep coming, the metadata again every METADATA_EVERY_BLOCKS
 * blocks or METADATA_EVERY_NS (a block's own thread is named before it
 * whatever the cadence: tl_stream_block). */
static void drain_once(struct file_recorder *f, struct tl_pool *pool)
{
	pthread_mutex_lock(&f->write_lock);
	write_metadata(f);
	struct tl_block *b;
	unsigned blocks = 0;
	while ((b = tl_pool_drain_next(pool)) != NULL) {
		if (++blocks == METADATA_EVERY_BLOCKS ||
		    now_ns() - f->metadata_at >= METADATA_EVERY_NS) {
			write_metadata(f);
			blocks = 0;
		}
		write_block(f, pool, b, b->index, 1);
		tl_pool_drain_done(pool, b);
	}
	pthread_mutex_unlock(&f->write_lock);
}

/* Writes all that is staged to the file. Under write_lock. */
static void sync_staged(struct file_recorder *f)
{
	if (f->fd < 0 || !f->stream.sink.write_out || f->stream.sink.written <= f->synced)
		return;
	f->sync = true;
	int rc = write_out(&f->stream.sink);
	f->sync = false;
	f->synced_at = now_ns();
	if (rc) {
		f->stream.sink.error = rc;
		write_failed(f, rc);
	}
}

/* The records of blocks still owned (partly filled), as far as published. */
static void write_owned(struct file_recorder *f, struct tl_pool *pool)
{
	pthread_mutex_lock(&f->write_lock);
	write_metadata(f);
	uint32_t handed = atomic_load_explicit(&pool->handed, memory_order_acquire);
	for (uint32_t i = 0; i < handed; i++) {
		struct tl_block *b = tl_pool_block(pool, i);
		if (atomic_load_explicit(&b->state, memory_order_acquire) == TL_BLOCK_OWNED)
			write_block(f, pool, b, i, 0);
	}
	pthread_mutex_unlock(&f->write_lock);
}

/* Once nothing waits: what is staged goes to the file once it has waited
 * SYNC_NS; returns how long the drain may sleep. */
static long drain_idle(struct file_recorder *f)
{
	pthread_mutex_lock(&f->write_lock);
	long sleep_ns = DRAIN_PERIOD_NS;
	if (f->fd >= 0 && f->stream.sink.written > f->synced) {
		int64_t due = f->synced_at + SYNC_NS - now_ns();
		if (due <= 0)
			sync_staged(f);
		else
			sleep_ns = (long)due;
	}
	pthread_mutex_unlock(&f->write_lock);
	return sleep_ns;
}

/* The semaphore waited on with a deadline on CLOCK_MONOTONIC, so that a
 * jump of the wall clock neither delays the drain nor wakes it early
 * (sem_clockwait, glibc 2.30); a C library without it waits on
 * CLOCK_REALTIME, the only clock sem_timedwait takes. */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 30))
#define WAIT_CLOCK CLOCK_MONOTONIC
#define wait_until(sem, until) sem_clockwait((sem), CLOCK_MONOTONIC, (until))
#else
#define WAIT_CLOCK CLOCK_REALTIME
#define wait_until(sem, until) sem_timedwait((sem), (until))
#endif

static void sleep_at_most(sem_t *wake, long ns)
{
	struct timespec until;
	clock_gettime(WAIT_CLOCK, &until);
	until.tv_nsec += ns;
	while (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	while (wait_until(wake, &until) != 0 && errno == EINTR)
		;
}

static void *drain_main(void *arg)
{
	struct tl_recorder *rec = arg;
	struct file_recorder *f = rec->backend;
	/* the header and metadata staged at the start reach the file within
	 * SYNC_NS, whether or not a block comes */
	long sleep_ns = drain_idle(f);
	while (!atomic_load(&f->stopping)) {
		/* asleep, then a last look: a batch completed before the flag
		 * was seen set woke nobody, and is taken now; fewer blocks
		 * waiting are taken within BATCH_NS */
		atomic_store(&f->sleeping, 1);
		uint32_t waiting = atomic_load_explicit(&rec->pool.waiting, memory_order_seq_cst);
		if (waiting < f->batch)
			sleep_at_most(&f->wake,
			              waiting && sleep_ns > BATCH_NS ? BATCH_NS : sleep_ns);
		atomic_store(&f->sleeping, 0);
		drain_once(f, &rec->pool);
		sleep_ns = atomic_load(&rec->pool.waiting) ? 0 : drain_idle(f);
	}
	return NULL;
}

/* Wakes the drain if it sleeps and a batch of blocks waits (sem_post is
 * async-signal-safe): a writer pays no system call while the drain is
 * awake, and one per batch while it sleeps. */
static void wake_drain(struct file_recorder *f, struct tl_pool *pool)
{
	if (f->drain_running && atomic_load_explicit(&f->sleeping, memory_order_seq_cst) &&
	    atomic_load_explicit(&pool->waiting, memory_order_relaxed) >= f->batch)
		sem_post(&f->wake);
}

/* The path with "%p" replaced by the process id and "%%" by "%": one file
 * per process when several processes share the environment (a command
 * and the programs it starts). 0, or -ENAMETOOLONG. */
static int expand_path(const char *pattern, char *out, size_t size)
{
	size_t n = 0;
	for (const char *p = pattern; *p; p++) {
		char pid[24];
		const char *piece = p;
		size_t len = 1;
		if (p[0] == '%' && p[1] == 'p') {
			len = (size_t)snprintf(pid, sizeof pid, "%d", (int)getpid());
			piece = pid;
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			p++;
		}
		if (n + len >= size)
			return -ENAMETOOLONG;
		memcpy(out + n, piece, len);
		n += len;
	}
	out[n] = '\0';
	return 0;
}

static void shut_down_at_exit(void);

static void register_at_exit(void)
{
	atexit(shut_down_at_exit);
}

/* A program that exits without tl_shutdown() still ends its file whole:
 * the blocks waiting and the partly filled ones, the stats and END. */
static void shut_down_at_exit(void)
{
	const char *name = tl_recorder_name();
	if (name && strcmp(name, "file") == 0)
		tl_shutdown();
}

static int file_start(struct tl_recorder *rec, const tl_options *opts)
{
	static pthread_once_t at_exit_once = PTHREAD_ONCE_INIT;
	pthread_once(&at_exit_once, register_at_exit);
	bool by_fd = opts->file_fd > 0;
	bool by_path = opts->file_path && *opts->file_path;
	if (by_fd == by_path) {
		tl_log(TL_LOG_ERROR, by_fd ? "file recorder: both a file and a descriptor given "
		                             "(tl_options.file_path or TIMELINE_FILE, and file_fd)"
		                           : "file recorder: no file given (tl_options.file_path, "
		                             "TIMELINE_FILE or tl_options.file_fd)");
		return -EINVAL;
	}
	if (by_fd && opts->file_max_bytes) {
		tl_log(TL_LOG_ERROR, "file recorder: a descriptor cannot be rotated "
		                     "(tl_options.file_max_bytes with file_fd)");
		return -EINVAL;
	}
	if (by_path && strlen(opts->file_path) >= PATH_MAX) {
		tl_log(TL_LOG_ERROR, "file recorder: the file's path is longer than %d bytes",
		       PATH_MAX - 1);
		return -ENAMETOOLONG;
	}
	struct file_recorder *f = calloc(1, sizeof *f);
	if (!f)
		return -ENOMEM;
	f->given_fd = by_fd ? opts->file_fd : -1;
	if (by_fd) {
		snprintf(f->path, sizeof f->path, "descriptor %d", opts->file_fd);
	} else if (expand_path(opts->file_path, f->path, sizeof f->path) != 0) {
		tl_log(TL_LOG_ERROR, "file recorder: the file's path is longer than %d bytes once "
				     "expanded",
		       PATH_MAX - 1);
		free(f);
		return -ENAMETOOLONG;
	}
	f->max_bytes = opts->file_max_bytes;
	f->keep = opts->file_keep ? opts->file_keep : DEFAULT_KEEP;
	f->fd = -1;
	int rc = tl_pool_init(&rec->pool, rec->buffer_bytes, opts->block_bytes,
	                      TL_POOL_DRAINED | TL_POOL_CHECK_ROOM);
	if (rc == 0 && (rc = tl_pool_back(&rec->pool, BACKED_AT_START)) != 0)
		tl_pool_destroy(&rec->pool);
	if (rc) {
		free(f);
		return rc;
	}
	f->batch = rec->pool.nblocks / BATCH_SHARE;
	if (f->batch > BATCH_MAX_BYTES / rec->pool.block_bytes)
		f->batch = (uint32_t)(BATCH_MAX_BYTES / rec->pool.block_bytes);
	if (f->batch == 0)
		f->batch = 1;
	f->pool = &rec->pool;
	f->written = calloc(rec->pool.nblocks, sizeof f->written[0]);
	if (!f->written || (rc = output_init(f)) != 0) {
		rc = -ENOMEM;
		goto fail_written;
	}
	for (uint32_t i = 0; i < rec->pool.nblocks; i++)
		atomic_store(&f->written[i].seq, UINT64_MAX);
	if ((rc = open_file(f)) != 0) {
		tl_log(TL_LOG_ERROR, "file recorder: cannot write %s: %s", f->path,
		       tl_atomic_file_strerror(rc));
		goto fail_written;
	}
	sem_init(&f->wake, 0, 0);
	pthread_mutex_init(&f->write_lock, NULL);
	rec->backend = f;
	if ((rc = -pthread_create(&f->drain, NULL, drain_main, rec)) != 0) {
		tl_log(TL_LOG_ERROR, "file recorder: cannot start the drain thread: %s",
		       strerror(-rc));
		tl_stream_close(&f->stream, 0, 0, 0);
		close(f->fd);
		sem_destroy(&f->wake);
		pthread_mutex_destroy(&f->write_lock);
		rec->backend = NULL;
		goto fail_written;
	}
	f->drain_running = true;
	return 0;
fail_written:
	output_free(f);
	free(f->written);
	tl_pool_destroy(&rec->pool);
	free(f);
	return rc;
}

/* After the session (every thread idle): the blocks waiting, the partly
 * filled ones, the stats and END. */
static void file_stop(struct tl_recorder *rec)
{
	struct file_recorder *f = rec->backend;
	if (f->drain_running) {
		atomic_store(&f->stopping, 1);
		sem_post(&f->wake);
		pthread_join(f->drain, NULL);
		drain_once(f, &rec->pool);
		write_owned(f, &rec->pool);
		if (f->fd >= 0) {
			f->final = true;
			int rc = tl_stream_close(&f->stream, 1, f->records, f->lost);
			if (close(f->fd) != 0 && rc == 0)
				rc = -errno;
			if (rc)
				tl_log(TL_LOG_ERROR, "file recorder: ending %s: %s", f->path,
				       strerror(-rc));
		}
	}
	sem_destroy(&f->wake);
	pthread_mutex_destroy(&f->write_lock);
	output_free(f);
	free(f->written);
	free(f);
	rec->backend = NULL;
	tl_pool_destroy(&rec->pool);
}

/* A writer that hands a block over while half the pool waits cedes its
 * CPU to the drain (YIELD_SHARE). sched_yield is a system call that takes
 * no lock: safe in a signal handler, as sem_post is. */
static void cede_to_drain(struct file_recorder *f, const struct tl_pool *pool)
{
	uint32_t waiting = atomic_load_explicit(&pool->waiting, memory_order_relaxed);
	if (!f->drain_running || (uint64_t)waiting * YIELD_SHARE < pool->nblocks)
		return;
	atomic_fetch_add_explicit(&f->yields, 1, memory_order_relaxed);
	sched_yield();
}

/* A full block goes to the drain: wake it (sem_post is async-signal-safe),
 * and cede the CPU to it when it is behind. */
static struct tl_block *file_next_block(struct tl_recorder *rec, struct tl_slot *slot)
{
	bool had = slot->block != &tl_block_none;
	struct tl_block *b = tl_pool_recorder_next_block(rec, slot);
	if (had) {
		wake_drain(rec->backend, &rec->pool);
		cede_to_drain(rec->backend, &rec->pool);
	}
	return b;
}

static void file_retire(struct tl_recorder *rec, struct tl_block *block)
{
	tl_pool_recorder_retire(rec, block);
	wake_drain(rec->backend, &rec->pool);
}

static uint64_t pending_records(struct file_recorder *f, const struct tl_pool *pool);

/* events_written: the records streamed, and those in memory not yet
 * streamed. */
static void file_stats(struct tl_recorder *rec, tl_stats *st)
{
	struct file_recorder *f = rec->backend;
	const struct tl_pool *pool = &rec->pool;
	uint64_t pending = 0, records = 0;
	/* tries for a view the drain did not change meanwhile; a drain that
	 * writes block after block throughout leaves the last try's view,
	 * which may count the block being written twice */
	for (int attempt = 0; attempt < 64; attempt++) {
		uint64_t before = atomic_load(&f->progress);
		pending = pending_records(f, pool);
		records = atomic_load(&f->records);
		if (!(before & 1) && atomic_load(&f->progress) == before)
			break;
	}
	st->events_written = records + pending;
	st->events_overwritten = 0;
	st->writer_yields = atomic_load_explicit(&f->yields, memory_order_relaxed);
}

/* The records in memory not yet streamed. */
static uint64_t pending_records(struct file_recorder *f, const struct tl_pool *pool)
{
	uint64_t pending = 0;
	uint32_t handed = atomic_load_explicit(&pool->handed, memory_order_acquire);
	for (uint32_t i = 0; i < handed; i++) {
		const struct tl_block *b = tl_pool_block(pool, i);
		_Atomic uint64_t *end;
		uint64_t records;
		tl_block_extent(b, &end, &records);
		const struct written *w = &f->written[i];
		uint64_t done = atomic_load_explicit(&w->seq, memory_order_acquire) ==
		                        atomic_load_explicit(&b->seq, memory_order_relaxed)
		                    ? atomic_load_explicit(&w->records, memory_order_relaxed)
		                    : 0;
		pending += records > done ? records - done : 0;
	}
	return pending;
}

static int file_flush(struct tl_recorder *rec)
{
	struct file_recorder *f = rec->backend;
	if (!f->drain_running)
		return -ENODEV;
	drain_once(f, &rec->pool);
	write_owned(f, &rec->pool);
	pthread_mutex_lock(&f->write_lock);
	sync_staged(f);
	pthread_mutex_unlock(&f->write_lock);
	return f->error;
}

static void file_fork_child(struct tl_recorder *rec)
{
	tl_pool_recorder_fork_child(rec);
	struct file_recorder *f = rec->backend;
	/* the drain thread and the file are the parent's */
	f->drain_running = false;
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	f->stream.sink.buf = NULL; /* the parent's buffers: not freed here */
	f->stream.sink.scratch = NULL;
	f->stream.sink.pack = NULL;
	f->tail = NULL;
	for (int i = 0; i < IN_FLIGHT; i++) { /* the parent's */
		f->spare[i] = NULL;
		f->flight[i].busy = false;
	}
	f->aio = 0;
	sem_init(&f->wake, 0, 0);
	pthread_mutex_init(&f->write_lock, NULL);
}

const struct tl_recorder_ops tl_file_ops = {
	.name = "file",
	.kind = TL_RECORDER_FILE,
	.default_bytes = 64u * 1024 * 1024,
	.start = file_start,
	.stop = file_stop,
	.next_block = file_next_block,
	.retire_block = file_retire,
	.blocks = tl_pool_recorder_blocks,
	.flush = file_flush,
	.stats = file_stats,
	.fork_prepare = tl_pool_recorder_fork_prepare,
	.fork_parent = tl_pool_recorder_fork_parent,
	.after_fork_child = file_fork_child,
};
