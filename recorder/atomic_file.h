/*
 * Files that appear complete under their final name or not at all: written
 * under a temporary name in the same directory, synced, then renamed over
 * the final name. Every file the library and the CLI write by name goes
 * through here (snapshots by path, the looper's dumps and reports, the
 * CLI's outputs). Internal; a tracer reaches it through recorder/tracer.h.
 *
 * What is written where:
 *   - a path that does not exist, or names a regular file: the data goes to
 *     "<dir>/.<name>.tmp-<pid>-<n>" (created with O_EXCL | O_CLOEXEC, mode
 *     0644 less the umask, or the replaced file's mode), which is fsync'd
 *     and renamed to the path; the directory is then fsync'd (best effort).
 *     On any failure the temporary file is removed and a file already
 *     under the final name is left as it was.
 *   - a path that names a symbolic link, a FIFO, a device or a socket
 *     (/dev/stdout, /dev/null, a pipe): written in place, as open(2) with
 *     O_TRUNC would; nothing can be renamed over it, so a failure may leave
 *     part of the data there.
 *   - a directory: -EISDIR, nothing written.
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
	bool in_place;                      /* written in place: no temporary name */
	const char *path;                   /* the final name, the caller's string */
	char temp[TL_ATOMIC_FILE_PATH_MAX]; /* the temporary name, "" when in place */
};

/* Creates the file to write for `path` (which must stay valid until commit
 * or abort). 0, or -errno with nothing created: -EISDIR for a directory,
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

/* write(2) until all of data is written (EINTR retried): 0 or -errno. */
int tl_write_full(int fd, const void *data, size_t len);

#pragma GCC visibility pop

#endif /* TIMELINE_ATOMIC_FILE_H */
