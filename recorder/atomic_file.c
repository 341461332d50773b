/*
 * Files written under a temporary name, synced and renamed (atomic_file.h).
 * Async-signal-safe throughout: names are built by hand, not with snprintf.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "recorder/atomic_file.h"
#include "recorder/format_int.h"

/* The part of the final name kept in the temporary name: room for the
 * suffix within a file system's 255-byte names. */
#define TEMP_NAME_KEEP 200
#define TEMP_TRIES 16

static _Atomic uint64_t temp_counter;

int tl_write_full(int fd, const void *data, size_t len)
{
	int saved_errno = errno;
	const unsigned char *p = data;
	int rc = 0;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		p += n;
		len -= (size_t)n;
	}
	errno = saved_errno;
	return rc;
}

static int fsync_retry(int fd)
{
	while (fsync(fd) != 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

/* "<dir>/.<name>.tmp-<pid>-<n>" for path "<dir>/<name>"; false when it does
 * not fit. */
static bool temp_name(char *out, const char *path, uint64_t n)
{
	const char *slash = strrchr(path, '/');
	size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
	const char *name = path + dir_len;
	size_t name_len = strlen(name);
	if (name_len > TEMP_NAME_KEEP)
		name_len = TEMP_NAME_KEEP;
	/* dir, '.', name, ".tmp-", 20 digits, '-', 20 digits, NUL */
	if (dir_len + 1 + name_len + 5 + 20 + 1 + 20 + 1 > TL_ATOMIC_FILE_PATH_MAX)
		return false;
	size_t at = 0;
	memcpy(out, path, dir_len);
	at += dir_len;
	out[at++] = '.';
	memcpy(out + at, name, name_len);
	at += name_len;
	memcpy(out + at, ".tmp-", 5);
	at += 5;
	at += tl_format_u64(out + at, (uint64_t)getpid());
	out[at++] = '-';
	at += tl_format_u64(out + at, n);
	out[at] = '\0';
	return true;
}

/* Syncs the directory holding path, so that the rename survives a crash.
 * Best effort: some file systems refuse to sync a directory. */
static void sync_directory(const char *temp)
{
	char dir[TL_ATOMIC_FILE_PATH_MAX];
	const char *slash = strrchr(temp, '/');
	if (slash == temp) {
		memcpy(dir, "/", 2);
	} else if (slash) {
		memcpy(dir, temp, (size_t)(slash - temp));
		dir[slash - temp] = '\0';
	} else {
		memcpy(dir, ".", 2);
	}
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync_retry(fd);
		close(fd);
	}
}

/* The mode new files get: 0600 until tl_file_mode_set. */
static _Atomic unsigned file_mode = TL_FILE_MODE_DEFAULT;

int tl_file_mode_set(unsigned mode)
{
	if (mode & ~0777u)
		return -EINVAL;
	atomic_store(&file_mode, mode);
	return 0;
}

unsigned tl_file_mode(void)
{
	return atomic_load(&file_mode);
}

/* The null device, the one non-regular file written to: nothing written to
 * it goes anywhere, and it never blocks. */
static bool is_null_device(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && major(st->st_rdev) == 1 && minor(st->st_rdev) == 3;
}

/* Why what lstat found at a final name cannot be written over: 0 when it
 * can (nothing there, or a regular file), 1 for the null device. */
static int refusal(const struct stat *st)
{
	if (S_ISREG(st->st_mode))
		return 0;
	if (S_ISDIR(st->st_mode))
		return -EISDIR;
	if (S_ISLNK(st->st_mode))
		return -ELOOP;
	if (is_null_device(st))
		return 1;
	return -ENXIO; /* a FIFO, a socket or another device */
}

static int open_null_device(struct tl_atomic_file *f, const char *path)
{
	f->in_place = true;
	f->temp[0] = '\0';
	int fd;
	do
		fd = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) != 0 || !is_null_device(&st)) {
		close(fd); /* replaced since lstat: refuse what it became */
		return -ENXIO;
	}
	f->fd = fd;
	return 0;
}

/* A new file under a temporary name beside path, created by us alone
 * (O_EXCL, never through a link) with the mode asked for exactly. */
static int open_temp(struct tl_atomic_file *f, const char *path, unsigned mode)
{
	f->in_place = false;
	for (int i = 0; i < TEMP_TRIES; i++) {
		if (!temp_name(f->temp, path, atomic_fetch_add(&temp_counter, 1) + 1))
			return -ENAMETOOLONG;
		int fd = open(
		    f->temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, mode);
		if (fd < 0 && (errno == EEXIST || errno == EINTR))
			continue; /* a leftover of an earlier process with our pid */
		if (fd < 0)
			return -errno;
		if (fchmod(fd, mode) != 0) { /* the umask taken off: exactly the mode */
			int rc = -errno;
			close(fd);
			unlink(f->temp);
			f->temp[0] = '\0';
			return rc;
		}
		f->fd = fd;
		return 0;
	}
	return -EEXIST;
}

int tl_atomic_file_open(struct tl_atomic_file *f, const char *path)
{
	int saved_errno = errno;
	f->fd = -1;
	f->in_place = false;
	f->path = path;
	f->temp[0] = '\0';
	int rc;
	struct stat st;
	if (!path || !*path) {
		rc = -EINVAL;
	} else if (lstat(path, &st) != 0) {
		rc = errno == ENOENT ? open_temp(f, path, tl_file_mode()) : -errno;
	} else if ((rc = refusal(&st)) == 0) {
		rc = open_temp(f, path, tl_file_mode());
	} else if (rc == 1) {
		rc = open_null_device(f, path);
	}
	errno = saved_errno;
	return rc;
}

int tl_fresh_file_open(const char *path)
{
	int saved_errno = errno;
	struct tl_atomic_file f;
	int rc = tl_atomic_file_open(&f, path);
	if (rc == 0 && !f.in_place && rename(f.temp, path) != 0) {
		rc = -errno;
		tl_atomic_file_abort(&f);
	}
	errno = saved_errno;
	return rc < 0 ? rc : f.fd;
}

int tl_atomic_file_commit(struct tl_atomic_file *f)
{
	if (f->fd < 0)
		return -EBADF;
	int saved_errno = errno;
	int rc = fsync_retry(f->fd);
	/* the null device cannot be synced, and need not be */
	if (f->in_place && (rc == -EINVAL || rc == -EROFS))
		rc = 0;
	if (close(f->fd) != 0 && rc == 0 && errno != EINTR)
		rc = -errno;
	f->fd = -1;
	if (!f->in_place) {
		if (rc == 0 && rename(f->temp, f->path) != 0)
			rc = -errno;
		if (rc != 0)
			unlink(f->temp);
		else
			sync_directory(f->temp);
		f->temp[0] = '\0';
	}
	errno = saved_errno;
	return rc;
}

void tl_atomic_file_abort(struct tl_atomic_file *f)
{
	int saved_errno = errno;
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	if (!f->in_place && f->temp[0])
		unlink(f->temp);
	f->temp[0] = '\0';
	errno = saved_errno;
}

int tl_atomic_file_write(const char *path, int (*write_data)(int fd, void *ctx), void *ctx)
{
	struct tl_atomic_file f;
	int rc = tl_atomic_file_open(&f, path);
	if (rc)
		return rc;
	rc = write_data(f.fd, ctx);
	if (rc) {
		tl_atomic_file_abort(&f);
		return rc;
	}
	return tl_atomic_file_commit(&f);
}

const char *tl_atomic_file_strerror(int rc)
{
	switch (rc) {
	case -ELOOP:
		return "a symbolic link, which is not followed: name the file it points to";
	case -ENXIO:
		return "not a regular file (a FIFO, socket or device): refused";
	default:
		return strerror(-rc);
	}
}

int tl_private_directory(const char *dir)
{
	int saved_errno = errno;
	int rc = 0;
	struct stat st;
	if (!dir || !*dir) {
		rc = -EINVAL;
	} else if (lstat(dir, &st) != 0) {
		if (errno != ENOENT)
			rc = -errno;
		else if (mkdir(dir, 0700) != 0 && errno != EEXIST)
			rc = -errno;
		else if (lstat(dir, &st) != 0)
			rc = -errno;
	}
	if (rc == 0) {
		if (S_ISLNK(st.st_mode))
			rc = -ELOOP;
		else if (!S_ISDIR(st.st_mode))
			rc = -ENOTDIR;
		else if (st.st_uid != geteuid() || (st.st_mode & 022))
			rc = -EPERM;
	}
	errno = saved_errno;
	return rc;
}

const char *tl_private_directory_strerror(int rc)
{
	switch (rc) {
	case -ELOOP:
		return "a symbolic link, which is not followed: name the directory it points to";
	case -EPERM:
		return "not private: it must be owned by this user and writable by nobody else "
		       "(mode 0700 or 0755)";
	default:
		return strerror(-rc);
	}
}
