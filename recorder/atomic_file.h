/*
 * Files that appear complete under their final name or not at all: written
 * under a temporary name in the same directory, synced, then renamed over
 * the final name. Every file the library and the CLI write by name goes
 * through here (snapshots by path, the looper's dumps and reports, the
 * CLI's outputs). Internal; a tracer reaches it through recorder/tracer.h.
 *
 * What is written where, and what is refused: the final name is never
 * followed as a link and never opened unless it is the null device, so a
 * link or a FIFO planted at the name cannot send the data elsewhere or
 * block the writer.
 *   - a path that does not exist, or names a regular file: the data goes to
 *     "<dir>/.<name>.tmp-<pid>-<n>" (created with O_EXCL | O_NOFOLLOW |
 *     O_CLOEXEC, mode tl_file_mode() exactly, the umask not applied; a file
 *     replaced does not pass its mode on), which is fsync'd and renamed to
 *     the path; the directory is then fsync'd (best effort). On any
 *     failure the temporary file is removed and a file already under the
 *     final name is left as it was. A link or a FIFO put at the name while
 *     the data is written is replaced by the rename, never followed.
 *   - a symbolic link: -ELOOP, nothing written (dangling or not);
 *   - a FIFO, a socket or a device other than the null device: -ENXIO;
 *   - a directory: -EISDIR;
 *   - the null device (/dev/null): written in place.
 * tl_atomic_file_strerror says each of these in words.
 *
 * Every function here is async-signal-safe (stat, open, write, fsync,
 * rename, unlink, close only; no allocation, no lock), errno is preserved,
 * and errors are returned as -errno: a full disk is -ENOSPC (or -EDQUOT),
 * reported by the write or by the fsync, never a truncated file under the
 * final name.
 */
#ifndef TIMELINE_ATOMIC_FILE_H
#define TIMELINE_ATOMIC_FILE_H

#include <stdbool.h>
#include <stddef.h>

#pragma GCC visibility push(hidden)

#define TL_ATOMIC_FILE_PATH_MAX 4096

/* One file being written. The fields are read-only to the caller except fd,
 * which it writes to (and must not close). */
struct tl_atomic_file {
	int fd;                             /* -1 when not open */
	bool in_place;                      /* the null device: no temporary name */
	const char *path;                   /* the final name, the caller's string */
	char temp[TL_ATOMIC_FILE_PATH_MAX]; /* the temporary name, "" when in place */
};

/* The mode of every file created here, and of the private files the
 * library writes (snapshots by path, dumps, reports, the file recorder's
 * files): TL_FILE_MODE_DEFAULT until set. tl_file_mode_set takes the
 * permission bits only (0 to 0777): 0, or -EINVAL. Any thread. */
#define TL_FILE_MODE_DEFAULT 0600u
int tl_file_mode_set(unsigned mode);
unsigned tl_file_mode(void);

/* Creates the file to write for `path` (which must stay valid until commit
 * or abort). 0, or -errno with nothing created: -EISDIR for a directory,
 * -ELOOP for a symbolic link, -ENXIO for a FIFO, socket or device,
 * -ENAMETOOLONG, or what open(2) says (-ENOENT for a missing directory,
 * -EACCES, -ENOSPC, ...). */
int tl_atomic_file_open(struct tl_atomic_file *f, const char *path);

/* Syncs the data and puts it under the final name; closes f in any case.
 * 0, or -errno (the temporary file removed). */
int tl_atomic_file_commit(struct tl_atomic_file *f);

/* Closes f and removes the temporary file: nothing appears under the final
 * name. Safe on a file already committed or aborted. */
void tl_atomic_file_abort(struct tl_atomic_file *f);

/* open, write_data(fd, ctx), commit: the usual case in one call. write_data
 * returns 0 or -errno; its error is returned as is (the file aborted). */
int tl_atomic_file_write(const char *path, int (*write_data)(int fd, void *ctx), void *ctx);

/*
 * A stream's file: a new file made as tl_atomic_file_open makes its
 * temporary one, then renamed to `path` at once, so that what is written to
 * it is under the final name as it is written (the file recorder). Refuses
 * what tl_atomic_file_open refuses. The fd (O_WRONLY, close-on-exec), or
 * -errno with nothing created.
 */
int tl_fresh_file_open(const char *path);

/* What an error of tl_atomic_file_open or tl_fresh_file_open means, in
 * words for one line ("a symbolic link, which is not followed: ..."),
 * strerror's for the others. Not async-signal-safe. */
const char *tl_atomic_file_strerror(int rc);

/*
 * A directory the product writes private files into (dump directories):
 * created 0700 when missing; refused when it is a symbolic link (-ELOOP),
 * not a directory (-ENOTDIR), not owned by the effective user or writable
 * by group or others (-EPERM). 0 or -errno. Async-signal-safe (lstat,
 * mkdir). tl_private_directory_strerror says the refusals in words (not
 * async-signal-safe).
 */
int tl_private_directory(const char *dir);
const char *tl_private_directory_strerror(int rc);

/* write(2) until all of data is written (EINTR retried): 0 or -errno. */
int tl_write_full(int fd, const void *data, size_t len);

#pragma GCC visibility pop

#endif /* TIMELINE_ATOMIC_FILE_H */
