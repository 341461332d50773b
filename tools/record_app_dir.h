/*
 * The private directory where the processes of `timeline record`'s COMMAND
 * write their file recorder files (app-PID.tl), made in $TMPDIR (/tmp when
 * unset) as timeline-record-XXXXXX, mode 0700, owned by the user the
 * command runs as (record_user.h) and by nobody else.
 *
 *   record_app_dir_make()     made, and given to the command's user
 *   ... the command runs and writes there ...
 *   record_app_dir_reclaim()  record's again, the command's plain files
 *                             alone kept, and the path to read it by
 *   record_app_dir_remove()   its files and itself removed
 *
 * Once made, the directory is reached only through descriptors: while the
 * command runs, its user owns the directory and may rename it (or a
 * directory above it that the user owns) and put a link in its place, so
 * from then on its path names whatever that user chose. From one thread.
 */
#ifndef TIMELINE_TOOLS_RECORD_APP_DIR_H
#define TIMELINE_TOOLS_RECORD_APP_DIR_H

#include <stddef.h>
#include <sys/types.h>

#include "tools/record_user.h"

struct record_app_dir {
	char path[4096]; /* as made; the command is told it */
	int parent_fd;   /* the directory it was made in; -1: none */
	int fd;          /* the directory itself; -1: none */
	uid_t owner;     /* the command's uid: the owner of its files */
};

#define RECORD_APP_DIR_NONE                                                                        \
	{                                                                                          \
		.parent_fd = -1, .fd = -1                                                          \
	}

/* Makes the directory for user's command. 0, or -errno with a one-line
 * reason in err (without the command prefix) and nothing left behind. */
int record_app_dir_make(struct record_app_dir *dir, const struct record_user *user, char *err,
                        size_t errlen);

/*
 * When the command has exited: the directory is record's again (mode 0700),
 * so that no process of the command's user can add to it any more, and
 * what is not one of that user's regular files with a single link (a
 * symbolic or hard link, a FIFO, a directory) is removed from it, never
 * followed. Writes the path to read the directory by into read_path:
 * "/proc/self/fd/N", the directory itself wherever it was moved. 0, or
 * -errno with a one-line reason in err.
 */
int record_app_dir_reclaim(struct record_app_dir *dir, char *read_path, size_t len, char *err,
                           size_t errlen);

/* Removes the directory's entries and, when its name still names it, the
 * directory; closes the descriptors. A directory never made is fine. */
void record_app_dir_remove(struct record_app_dir *dir);

#endif /* TIMELINE_TOOLS_RECORD_APP_DIR_H */
