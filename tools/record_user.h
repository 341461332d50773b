/*
 * Who `timeline record` runs its COMMAND as: the user named with --user,
 * else the user who ran sudo (SUDO_UID, SUDO_GID) when record runs as root,
 * else record's own identity. Everything is looked up in the user and group
 * databases before the fork, so that the child only makes system calls.
 *
 * Lifecycle, from record's one thread:
 *
 *   record_user_find() or record_user_of_sudo()   who
 *   record_user_prepare()                        groups; whether it changes
 *   fork, then in the child:
 *     record_user_become()                       groups, gid, uid; checked
 *     record_user_setenv()                       HOME, USER, LOGNAME, SHELL
 *   record_user_free()
 */
#ifndef TIMELINE_TOOLS_RECORD_USER_H
#define TIMELINE_TOOLS_RECORD_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct record_user {
	uid_t uid;
	gid_t gid;
	char *name; /* from the user database; malloc'd, as home and shell */
	char *home;
	char *shell;
	gid_t *groups; /* supplementary groups (gid among them), from prepare */
	size_t ngroups;
	bool change; /* not record's own identity: the child takes it */
};

/*
 * The user for --user's value: a name, or a numeric uid, either with an
 * entry in the user database (its primary group, home and shell come from
 * it). 0, -ENOENT when there is none, -ENOMEM. Fills *user on success only.
 */
int record_user_find(struct record_user *user, const char *spec);

/*
 * The user without --user: when record runs as root (real and effective)
 * and SUDO_UID is a uid with an entry in the user database, that user, with
 * SUDO_GID as the group when it is a number (else the user's own group);
 * otherwise record's own identity. Returns 0, or -EINVAL when SUDO_UID is
 * set and names no user (*user is then record's own identity: the caller
 * says so), -ENOMEM.
 */
int record_user_of_sudo(struct record_user *user);

/*
 * Decides whether the identity changes (the uid or the gid is not record's
 * effective one) and, when it does, reads the user's supplementary groups
 * as initgroups(3) would. 0; -EPERM when it changes and record is not
 * root; -ENOMEM.
 */
int record_user_prepare(struct record_user *user);

/*
 * In the forked child, before exec, when user->change: setgroups, setgid,
 * setuid in that order, each checked, then checks that the real, effective
 * and saved ids are the user's and, for a user other than root, that
 * setuid(0) fails. Async-signal-safe (system calls only). 0; -errno with
 * *step naming the call that failed; 1 with *step saying which check did.
 */
int record_user_become(const struct record_user *user, const char **step);

/* In the child, when user->change: HOME and SHELL from the user database
 * (SHELL /bin/sh when it names none), USER and LOGNAME the user's name. */
void record_user_setenv(const struct record_user *user);

/* Frees what find, of_sudo and prepare allocated. NULL members are fine. */
void record_user_free(struct record_user *user);

#endif /* TIMELINE_TOOLS_RECORD_USER_H */
