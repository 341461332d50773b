/* Who `timeline record` runs its COMMAND as: see record_user.h. */
#include "tools/record_user.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A decimal id: digits only, below the (uid_t)-1 that means "none". */
static bool parse_id(const char *s, unsigned long *out)
{
	if (!s || *s < '0' || *s > '9')
		return false;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end != '\0' || v >= (uid_t)-1)
		return false;
	*out = (unsigned long)v;
	return true;
}

static int user_of_entry(struct record_user *user, const struct passwd *pw, gid_t gid)
{
	struct record_user u = {.uid = pw->pw_uid, .gid = gid};
	u.name = strdup(pw->pw_name);
	u.home = strdup(pw->pw_dir && *pw->pw_dir ? pw->pw_dir : "/");
	u.shell = strdup(pw->pw_shell && *pw->pw_shell ? pw->pw_shell : "/bin/sh");
	if (!u.name || !u.home || !u.shell) {
		record_user_free(&u);
		return -ENOMEM;
	}
	*user = u;
	return 0;
}

int record_user_find(struct record_user *user, const char *spec)
{
	/* A name first, as chown(1) does: a name may be made of digits. */
	errno = 0;
	struct passwd *pw = getpwnam(spec);
	unsigned long uid;
	if (!pw && parse_id(spec, &uid)) {
		errno = 0;
		pw = getpwuid((uid_t)uid);
	}
	if (!pw)
		return errno == ENOMEM ? -ENOMEM : -ENOENT;
	return user_of_entry(user, pw, pw->pw_gid);
}

/* Record's own identity, named from the user database when it can be. */
static int user_of_self(struct record_user *user)
{
	struct passwd *pw = getpwuid(geteuid());
	if (pw)
		return user_of_entry(user, pw, getegid());
	*user = (struct record_user){.uid = geteuid(), .gid = getegid()};
	return 0;
}

int record_user_of_sudo(struct record_user *user)
{
	const char *sudo_uid = secure_getenv("SUDO_UID");
	if (getuid() != 0 || geteuid() != 0 || !sudo_uid)
		return user_of_self(user);
	unsigned long uid, gid;
	struct passwd *pw = parse_id(sudo_uid, &uid) ? getpwuid((uid_t)uid) : NULL;
	if (!pw) {
		int rc = user_of_self(user);
		return rc < 0 ? rc : -EINVAL;
	}
	return user_of_entry(user, pw,
	                     parse_id(secure_getenv("SUDO_GID"), &gid) ? (gid_t)gid : pw->pw_gid);
}

int record_user_prepare(struct record_user *user)
{
	user->change = user->uid != geteuid() || user->gid != getegid();
	if (!user->change)
		return 0;
	if (geteuid() != 0)
		return -EPERM;
	/* initgroups(3) without its setgroups: the list, read here. */
	for (int n = 16;;) {
		gid_t *groups = realloc(user->groups, (size_t)n * sizeof *groups);
		if (!groups)
			return -ENOMEM;
		user->groups = groups;
		int want = n;
		if (getgrouplist(user->name, user->gid, groups, &want) >= 0) {
			user->ngroups = (size_t)want;
			return 0;
		}
		n = want > n ? want : 2 * n;
	}
}

int record_user_become(const struct record_user *user, const char **step)
{
	if (setgroups(user->ngroups, user->groups) != 0) {
		*step = "setgroups";
		return -errno;
	}
	if (setgid(user->gid) != 0) {
		*step = "setgid";
		return -errno;
	}
	if (setuid(user->uid) != 0) {
		*step = "setuid";
		return -errno;
	}
	uid_t ruid, euid, suid;
	gid_t rgid, egid, sgid;
	if (getresuid(&ruid, &euid, &suid) != 0 || getresgid(&rgid, &egid, &sgid) != 0) {
		*step = "getresuid";
		return -errno;
	}
	if (ruid != user->uid || euid != user->uid || suid != user->uid || rgid != user->gid ||
	    egid != user->gid || sgid != user->gid) {
		*step = "its ids are not all the user's after setuid";
		return 1;
	}
	if (user->uid != 0 && setuid(0) != -1) {
		*step = "setuid(0) still succeeds after setuid: root could be regained";
		return 1;
	}
	return 0;
}

void record_user_setenv(const struct record_user *user)
{
	setenv("HOME", user->home, 1);
	setenv("USER", user->name, 1);
	setenv("LOGNAME", user->name, 1);
	setenv("SHELL", user->shell, 1);
}

void record_user_free(struct record_user *user)
{
	free(user->name);
	free(user->home);
	free(user->shell);
	free(user->groups);
	*user = (struct record_user){0};
}
