/* The command's private directory for `timeline record`: see record_app_dir.h. */
#include "tools/record_app_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* The name the directory was made with, in its parent. */
static const char *base_name(const struct record_app_dir *dir)
{
	return strrchr(dir->path, '/') + 1;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

int record_app_dir_make(struct record_app_dir *dir, const struct record_user *user, char *err,
                        size_t errlen)
{
	const char *tmp = secure_getenv("TMPDIR");
	if (!tmp || !*tmp)
		tmp = "/tmp";
	*dir = (struct record_app_dir)RECORD_APP_DIR_NONE;
	dir->owner = user->change ? user->uid : geteuid();
	int e = 0;
	snprintf(dir->path, sizeof dir->path, "%s/timeline-record-XXXXXX", tmp);
	dir->parent_fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir->parent_fd < 0 || !mkdtemp(dir->path)) {
		e = errno;
		goto out_fail;
	}
	/* The one made, not a link put at its name since: record's, 0700. */
	struct stat st;
	dir->fd =
	    openat(dir->parent_fd, base_name(dir), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir->fd < 0 || fstat(dir->fd, &st) != 0) {
		e = errno;
		goto out_remove;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 07777) != 0700) {
		e = EEXIST;
		goto out_remove;
	}
	if (user->change && fchown(dir->fd, user->uid, user->gid) != 0) {
		e = errno;
		goto out_remove;
	}
	return 0;

out_remove:
	if (dir->fd < 0)
		unlinkat(dir->parent_fd, base_name(dir), AT_REMOVEDIR);
	record_app_dir_remove(dir); /* closes parent_fd */
out_fail:
	set_err(err, errlen, "cannot make a directory for the command's own events in %s: %s", tmp,
	        strerror(e));
	if (dir->parent_fd >= 0)
		close(dir->parent_fd);
	*dir = (struct record_app_dir)RECORD_APP_DIR_NONE;
	return -e;
}

/* Makes the directory record's: from then on no other user adds to it. */
static int take_back(const struct record_app_dir *dir)
{
	if (dir->owner != geteuid() && fchown(dir->fd, geteuid(), getegid()) != 0)
		return -errno;
	return fchmod(dir->fd, 0700) == 0 ? 0 : -errno;
}

/* Calls keep(dir, name, st) for each entry; an entry it does not keep is
 * unlinked (a directory removed when empty). 0 or -errno. */
static int sweep(const struct record_app_dir *dir,
                 bool (*keep)(const struct record_app_dir *, const struct stat *))
{
	int fd = fcntl(dir->fd, F_DUPFD_CLOEXEC, 0);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return -e;
	}
	rewinddir(d); /* the offset is shared with dir->fd */
	struct dirent *ent;
	while ((ent = readdir(d)) != NULL) {
		if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
			continue;
		struct stat st;
		if (fstatat(dir->fd, ent->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (!keep(dir, &st))
			unlinkat(dir->fd, ent->d_name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
	}
	closedir(d);
	return 0;
}

/* One of the command's files, as its file recorder writes them. */
static bool is_commands_file(const struct record_app_dir *dir, const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_nlink == 1 && st->st_uid == dir->owner;
}

static bool keep_none(const struct record_app_dir *dir, const struct stat *st)
{
	(void)dir;
	(void)st;
	return false;
}

int record_app_dir_reclaim(struct record_app_dir *dir, char *read_path, size_t len, char *err,
                           size_t errlen)
{
	int rc = take_back(dir);
	if (rc == 0)
		rc = sweep(dir, is_commands_file);
	if (rc < 0) {
		set_err(err, errlen, "%s: cannot take back the command's own events: %s", dir->path,
		        strerror(-rc));
		return rc;
	}
	snprintf(read_path, len, "/proc/self/fd/%d", dir->fd);
	if (access(read_path, R_OK | X_OK) != 0) {
		rc = -errno;
		set_err(err, errlen, "%s: cannot read the command's own events through %s: %s",
		        dir->path, read_path, strerror(errno));
		return rc;
	}
	return 0;
}

void record_app_dir_remove(struct record_app_dir *dir)
{
	if (dir->fd >= 0) {
		take_back(dir);
		sweep(dir, keep_none);
		/* Its name may name another directory now: the command's user's. */
		struct stat ours, named;
		if (fstat(dir->fd, &ours) == 0 &&
		    fstatat(dir->parent_fd, base_name(dir), &named, AT_SYMLINK_NOFOLLOW) == 0 &&
		    same_file(&ours, &named))
			unlinkat(dir->parent_fd, base_name(dir), AT_REMOVEDIR);
		close(dir->fd);
	}
	if (dir->parent_fd >= 0)
		close(dir->parent_fd);
	*dir = (struct record_app_dir)RECORD_APP_DIR_NONE;
}
