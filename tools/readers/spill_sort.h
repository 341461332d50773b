/*
 * An external sort of variable-length records by a 64-bit key, in bounded
 * memory: the importer's streaming consumer hands it items in one order and
 * reads them back in another (slices retired in end order, printed in begin
 * order), whatever the trace's length. Offline code; not signal-safe
 * (allocates), not thread-safe (one sorter, one thread at a time), no
 * global state.
 *
 * Records are copied into memory until they reach the budget; that run is
 * then sorted and written sequentially to one temporary file, and the
 * memory is reused. A record that does not fit in the budget by itself is
 * written as a run of its own, straight from the caller's memory. When
 * everything fits, nothing is written and the records are served from
 * memory.
 *
 * When runs were written, tl_spill_sort_finish frees the in-memory records
 * and the reading merges the runs (a binary heap), each read back with
 * pread(2) through a buffer of its own: memory while reading is then
 * 64 KiB per run (grown to hold a larger record), at most
 * TL_SPILL_SORT_FAN_IN runs at once, 16 MiB. More runs than that are first
 * merged in passes, groups of consecutive runs into longer runs appended to
 * the same file, until no more than TL_SPILL_SORT_FAN_IN remain: the file
 * then grows by up to the data's size once more per pass (a pass is needed
 * beyond TL_SPILL_SORT_FAN_IN times the budget of data).
 *
 * The file is created at the first spill, with O_TMPFILE where the file
 * system has it, else under a random name removed at once: it leaves no
 * name behind, even when the process dies (but in the instant between the
 * named file's creation and its removal). Its space is the system's again
 * at tl_spill_sort_free (or the process's end).
 *
 * Once a write or a read fails, every later call returns the same error:
 * a full disk is -ENOSPC, never records silently lost.
 */
#ifndef TIMELINE_SPILL_SORT_H
#define TIMELINE_SPILL_SORT_H

#include <stddef.h>
#include <stdint.h>

/* The budget used when a smaller one is asked for. */
#define TL_SPILL_SORT_MIN_BUDGET (64 * 1024)
/* The most runs merged at once, each with its reading buffer. */
#define TL_SPILL_SORT_FAN_IN 256

typedef struct tl_spill_sort tl_spill_sort;

/*
 * budget: bytes of records held in memory before a sorted run is written
 * to the temporary file; each record counts its length and the size of its
 * place in the sort (32 bytes on a 64-bit system), so that many small
 * records are bounded too: the records held stay within it (with, once a
 * run was written, a 64 KiB buffer for writing). At least
 * TL_SPILL_SORT_MIN_BUDGET is used whatever is asked. dir: where the
 * temporary file goes (NULL: $TMPDIR, else /var/tmp when it can be
 * written to, else /tmp: /var/tmp is for large files, and /tmp is memory
 * on many systems); the string is copied.
 * It is created at the first spill, so a directory that cannot take it is
 * an error of tl_spill_sort_add or tl_spill_sort_finish. Returns NULL with
 * errno set (ENOMEM). Free with tl_spill_sort_free.
 */
tl_spill_sort *tl_spill_sort_new(size_t budget, const char *dir);

/*
 * Orders records of equal keys: <0, 0 or >0 as a comes before, with or
 * after b (equal ones then keep the order they were added in). a and b are
 * the records' bytes (never NULL, even for len 0), the sorter's, valid
 * during the call only. It must be a consistent order (a before b and b
 * before c: a before c) and must not call the sorter. It is called while
 * runs are sorted and merged: from tl_spill_sort_add, tl_spill_sort_finish
 * and tl_spill_sort_next.
 */
typedef int (*tl_spill_sort_tie_fn)(const void *a, size_t alen, const void *b, size_t blen,
                                    void *ctx);

/*
 * Sets the order of records with equal keys: by tie (given ctx), then the
 * order of adding; NULL: the order of adding alone, the default, which
 * calls no function. Only before the first tl_spill_sort_add. Returns 0,
 * or -EINVAL once records were added or after tl_spill_sort_finish (the
 * order unchanged).
 */
int tl_spill_sort_set_tie(tl_spill_sort *s, tl_spill_sort_tie_fn tie, void *ctx);

/*
 * Adds a record: len bytes at rec (len may be 0, rec then may be NULL),
 * copied or written before the return. Returns 0 or -errno: -ENOMEM (the
 * record not added; the sorter still usable), the error of the temporary
 * file's creation or of a write (-ENOSPC, -EDQUOT, -EIO...), or -EINVAL
 * after tl_spill_sort_finish.
 */
int tl_spill_sort_add(tl_spill_sort *s, uint64_t key, const void *rec, size_t len);

/* Ends the adding; the records can then be read back. Returns 0 or -errno
 * (as tl_spill_sort_add; -EINVAL when called twice). */
int tl_spill_sort_finish(tl_spill_sort *s);

/*
 * The next record in key order; records with equal keys come back in the
 * tie function's order (tl_spill_sort_set_tie), and those it calls equal
 * (all, without one) in the order they were added (stable). *rec (never
 * NULL, even for len 0) is the sorter's and stays valid until the next
 * call. Returns 1 (a record), 0 (no more) or -errno: -EIO for a file
 * shorter than what was written to it, a read's error, -ENOMEM, or -EINVAL
 * before tl_spill_sort_finish.
 */
int tl_spill_sort_next(tl_spill_sort *s, uint64_t *key, const void **rec, size_t *len);

/* How many sorted runs went to the file (0: everything fit in memory; the
 * longer runs of merge passes are not counted), and every byte written to
 * it, merge passes included: for tests and figures. */
size_t tl_spill_sort_runs(const tl_spill_sort *s);
uint64_t tl_spill_sort_spilled_bytes(const tl_spill_sort *s);

/* Frees everything and closes the temporary file, which removes it. NULL
 * is fine. */
void tl_spill_sort_free(tl_spill_sort *s);

#endif /* TIMELINE_SPILL_SORT_H */
