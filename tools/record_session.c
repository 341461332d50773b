/*
 * `timeline record`'s tracefs session: see record_session.h.
 *
 * Reading: each CPU's per_cpu/cpuN/trace_pipe_raw is opened non-blocking
 * and read one sub-buffer at a time (a read may return a partly filled
 * one, so nothing waits for a page to fill). Each sub-buffer is decoded
 * with a kbuffer from libtraceevent; its header says how many events the
 * kernel dropped before it (kbuffer_missed_events), which is counted per
 * CPU. At the end the instance's per_cpu/cpuN/stats give the kernel's own
 * totals (overrun, commit overrun, dropped events); the larger of the two
 * counts is reported, so a loss is never hidden.
 *
 * Keeping: every event becomes one record in its CPU's temporary file:
 * timestamp, pid, the latency flags and the text after the prefix
 * ("tracing_mark_write: B|42|work", "sched_switch: prev_comm=..."). The
 * prefix (task name and tgid) is only formatted at the end, from a table of
 * tasks filled while reading, the way the kernel resolves names from its
 * saved command lines when the trace is printed.
 */
#include "tools/record_session.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mntent.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event-parse.h>
#include <kbuffer.h>
#include <trace-seq.h>
#include <tracefs.h>

#include "recorder/export/slice_match.h"
#include "recorder/utf8.h"

#define TASK_COMM_MAX 16
#define TGID_UNKNOWN (-1)

/* One kept event, as stored in a CPU's temporary file; text follows. */
struct record_entry {
	uint64_t ts_ns;
	int32_t pid;
	uint32_t text_len;
	char flags[8]; /* NUL-terminated */
};

struct record_task {
	int32_t pid; /* -1: free slot */
	int32_t tgid;
	uint64_t events;
	char comm[TASK_COMM_MAX + 1];
};

struct record_cpu {
	int cpu;
	int fd;          /* trace_pipe_raw, non-blocking */
	FILE *spill;     /* kept events, in order */
	uint64_t missed; /* from the sub-buffer headers */
	int missed_unknown;
	uint64_t kernel_lost; /* from per_cpu/cpuN/stats at the end */
	/* The task the last sched_switch read on this CPU put on it (-1:
	 * none read yet, or events were missed since), and the switches whose
	 * prev_pid was another: the kernel did not record the switch that put
	 * that task there, and said nothing was missed. */
	int64_t running;
	uint64_t unseen_switch_ins;
};

struct record_session {
	struct tracefs_instance *instance;
	char name[64];
	char *dir;
	int created; /* the instance directory is ours to remove */
	int tracing;
	enum record_clock clock;

	struct tep_handle *tep;
	struct kbuffer *kbuf;
	struct tep_event *print_event;
	struct tep_event *switch_event;
	struct tep_event *waking_event;
	struct trace_seq seq;
	int seq_ready;

	void *page;
	size_t page_size;
	struct record_cpu *cpus;
	int ncpus;

	struct record_task *tasks;
	size_t tasks_cap;
	size_t tasks_used;

	struct record_counts counts;
};

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ---- tasks: pid -> name and tgid ----------------------------------------- */

static size_t task_hash(int32_t pid, size_t cap)
{
	return ((uint32_t)pid * 2654435761u) & (cap - 1);
}

static int tasks_grow(struct record_session *s)
{
	size_t cap = s->tasks_cap ? s->tasks_cap * 2 : 1024;
	struct record_task *tasks = malloc(cap * sizeof *tasks);
	if (!tasks)
		return -ENOMEM;
	for (size_t i = 0; i < cap; i++)
		tasks[i].pid = -1;
	for (size_t i = 0; i < s->tasks_cap; i++) {
		if (s->tasks[i].pid < 0)
			continue;
		size_t h = task_hash(s->tasks[i].pid, cap);
		while (tasks[h].pid >= 0)
			h = (h + 1) & (cap - 1);
		tasks[h] = s->tasks[i];
	}
	free(s->tasks);
	s->tasks = tasks;
	s->tasks_cap = cap;
	return 0;
}

static struct record_task *task_find(const struct record_session *s, int32_t pid)
{
	if (!s->tasks_cap || pid < 0)
		return NULL;
	size_t h = task_hash(pid, s->tasks_cap);
	while (s->tasks[h].pid >= 0) {
		if (s->tasks[h].pid == pid)
			return &s->tasks[h];
		h = (h + 1) & (s->tasks_cap - 1);
	}
	return NULL;
}

/* Name and tgid from /proc, while the task still exists. */
static void task_read_proc(struct record_task *task)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/status", (int)task->pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	char line[256];
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "Name:\t", 6) == 0) {
			size_t n = strcspn(line + 6, "\n");
			if (n > TASK_COMM_MAX)
				n = TASK_COMM_MAX;
			memcpy(task->comm, line + 6, n);
			task->comm[n] = '\0';
		} else if (strncmp(line, "Tgid:\t", 6) == 0) {
			task->tgid = (int32_t)strtol(line + 6, NULL, 10);
			break;
		}
	}
	fclose(f);
}

/* The task for pid, added (and looked up in /proc) on first sight. */
static struct record_task *task_get(struct record_session *s, int32_t pid)
{
	struct record_task *task = task_find(s, pid);
	if (task || pid < 0)
		return task;
	if ((s->tasks_used + 1) * 2 > s->tasks_cap && tasks_grow(s) < 0)
		return NULL;
	size_t h = task_hash(pid, s->tasks_cap);
	while (s->tasks[h].pid >= 0)
		h = (h + 1) & (s->tasks_cap - 1);
	task = &s->tasks[h];
	memset(task, 0, sizeof *task);
	task->pid = pid;
	task->tgid = TGID_UNKNOWN;
	s->tasks_used++;
	if (pid == 0)
		strcpy(task->comm, "<idle>");
	else
		task_read_proc(task);
	return task;
}

static void task_set_comm(struct record_session *s, int32_t pid, const char *comm, size_t max)
{
	if (pid <= 0 || !comm)
		return;
	struct record_task *task = task_get(s, pid);
	if (!task)
		return;
	size_t n = strnlen(comm, max < TASK_COMM_MAX ? max : TASK_COMM_MAX);
	if (n == 0)
		return;
	memcpy(task->comm, comm, n);
	task->comm[n] = '\0';
}

/* ---- setup ------------------------------------------------------------------ */

static int write_instance_file(struct record_session *s, const char *file, const char *value,
                               char *err, size_t errlen)
{
	if (tracefs_instance_file_write(s->instance, file, value) < 0) {
		int e = errno ? errno : EIO;
		set_err(err, errlen, "%s/%s: cannot write '%s': %s", s->dir, file, value,
		        strerror(e));
		return -e;
	}
	return 0;
}

static int enable_event(struct record_session *s, const char *name, enum record_open_failure *why,
                        char *err, size_t errlen)
{
	char file[256];
	snprintf(file, sizeof file, "events/%s/enable", name);
	if (!tracefs_file_exists(s->instance, file)) {
		*why = RECORD_FAIL_BAD_EVENT;
		set_err(err, errlen,
		        "no event '%s' in this kernel (the list is in %s/available_events)", name,
		        tracefs_tracing_dir());
		return -ENOENT;
	}
	return write_instance_file(s, file, "1", err, errlen);
}

static void set_needs_root(enum record_open_failure *why, char *err, size_t errlen)
{
	*why = RECORD_FAIL_PERMISSION;
	set_err(err, errlen,
	        "needs root (CAP_SYS_ADMIN) to create a tracefs instance in %s/instances: run it "
	        "with sudo",
	        tracefs_tracing_dir());
}

static int create_instance(struct record_session *s, enum record_open_failure *why, char *err,
                           size_t errlen)
{
	/* Asked first: libtracefs 1.6 loses the path it built when its mkdir
	 * is refused. */
	char instances[PATH_MAX];
	snprintf(instances, sizeof instances, "%s/instances", tracefs_tracing_dir());
	if (faccessat(AT_FDCWD, instances, W_OK, AT_EACCESS) != 0 &&
	    (errno == EACCES || errno == EPERM)) {
		set_needs_root(why, err, errlen);
		return -EACCES;
	}
	for (int attempt = 0; attempt < 100; attempt++) {
		if (attempt == 0)
			snprintf(s->name, sizeof s->name, "timeline-%d", (int)getpid());
		else
			snprintf(s->name, sizeof s->name, "timeline-%d-%d", (int)getpid(), attempt);
		if (tracefs_instance_exists(s->name))
			continue;
		errno = 0;
		s->instance = tracefs_instance_create(s->name);
		if (!s->instance) {
			int e = errno ? errno : EIO;
			if (e == EACCES || e == EPERM) {
				set_needs_root(why, err, errlen);
			} else {
				set_err(err, errlen, "cannot create the tracefs instance %s: %s",
				        s->name, strerror(e));
			}
			return -e;
		}
		s->created = tracefs_instance_is_new(s->instance);
		if (!s->created) {
			/* Taken between the check and the mkdir: not ours. */
			tracefs_instance_free(s->instance);
			s->instance = NULL;
			continue;
		}
		s->dir = tracefs_instance_get_dir(s->instance);
		if (!s->dir) {
			set_err(err, errlen, "out of memory");
			return -ENOMEM;
		}
		return 0;
	}
	set_err(err, errlen, "cannot find a free tracefs instance name");
	return -EEXIST;
}

static size_t subbuf_size(struct record_session *s)
{
	long long kb = 0;
	if (tracefs_file_exists(s->instance, "buffer_subbuf_size_kb") &&
	    tracefs_instance_file_read_number(s->instance, "buffer_subbuf_size_kb", &kb) == 0 &&
	    kb > 0)
		return (size_t)kb * 1024;
	return (size_t)sysconf(_SC_PAGESIZE);
}

static int load_event_formats(struct record_session *s, const struct record_config *config,
                              char *err, size_t errlen)
{
	const char *systems[64];
	size_t n = 0;
	systems[n++] = "ftrace";
	systems[n++] = "sched";
	for (size_t i = 0; i < config->nevents && n + 1 < sizeof systems / sizeof systems[0]; i++) {
		size_t len = strcspn(config->events[i], "/");
		char *system = strndup(config->events[i], len);
		if (!system)
			return -ENOMEM;
		bool dup = false;
		for (size_t j = 0; j < n && !dup; j++)
			dup = strcmp(systems[j], system) == 0;
		if (dup)
			free(system);
		else
			systems[n++] = system;
	}
	systems[n] = NULL;

	tep_set_loglevel(TEP_LOG_NONE);
	s->tep = tracefs_local_events_system(tracefs_tracing_dir(), systems);
	for (size_t j = 2; j < n; j++)
		free((char *)systems[j]);
	if (!s->tep) {
		set_err(err, errlen, "cannot read the event formats under %s/events",
		        tracefs_tracing_dir());
		return -EIO;
	}
	s->print_event = tep_find_event_by_name(s->tep, "ftrace", "print");
	s->switch_event = tep_find_event_by_name(s->tep, "sched", "sched_switch");
	s->waking_event = tep_find_event_by_name(s->tep, "sched", "sched_waking");
	if (!s->print_event) {
		set_err(err, errlen, "this kernel has no ftrace/print event format");
		return -ENOENT;
	}
	s->kbuf = tep_kbuffer(s->tep);
	if (!s->kbuf) {
		set_err(err, errlen, "cannot read the ring buffer page format");
		return -EIO;
	}
	trace_seq_init(&s->seq);
	s->seq_ready = 1;
	return 0;
}

static int open_cpus(struct record_session *s, char *err, size_t errlen)
{
	long conf = sysconf(_SC_NPROCESSORS_CONF);
	int max = conf > 0 ? (int)conf : 1;
	s->cpus = calloc((size_t)max, sizeof *s->cpus);
	s->page_size = subbuf_size(s);
	s->page = malloc(s->page_size);
	if (!s->cpus || !s->page) {
		set_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (int cpu = 0; cpu < max; cpu++) {
		char file[64];
		snprintf(file, sizeof file, "per_cpu/cpu%d/trace_pipe_raw", cpu);
		if (!tracefs_file_exists(s->instance, file))
			continue;
		struct record_cpu *c = &s->cpus[s->ncpus];
		c->cpu = cpu;
		c->running = -1;
		/* Close-on-exec, as the spill file: the command, which may run as
		 * another user, inherits neither. */
		c->fd = tracefs_instance_file_open(s->instance, file,
		                                   O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (c->fd < 0) {
			int e = errno ? errno : EIO;
			set_err(err, errlen, "%s/%s: cannot open: %s", s->dir, file, strerror(e));
			return -e;
		}
		c->spill = tmpfile();
		if (!c->spill || fcntl(fileno(c->spill), F_SETFD, FD_CLOEXEC) != 0) {
			int e = errno;
			if (c->spill)
				fclose(c->spill);
			close(c->fd);
			set_err(err, errlen, "cannot create a temporary file: %s", strerror(e));
			return -e;
		}
		s->ncpus++;
	}
	if (s->ncpus == 0) {
		set_err(err, errlen, "%s has no per_cpu buffers", s->dir);
		return -ENOENT;
	}
	return 0;
}

/*
 * Where tracefs is mounted, from /proc/mounts: a tracefs mount, else the
 * tracing directory of a debugfs mount. 0, or -ENOENT when there is none.
 */
static int find_tracefs(char *dir, size_t len)
{
	FILE *mounts = setmntent("/proc/mounts", "re");
	if (!mounts)
		return -ENOENT;
	int found = 0;
	struct mntent *m;
	while (found < 2 && (m = getmntent(mounts)) != NULL) {
		if (strcmp(m->mnt_type, "tracefs") == 0) {
			snprintf(dir, len, "%s", m->mnt_dir);
			found = 2;
		} else if (!found && strcmp(m->mnt_type, "debugfs") == 0) {
			struct stat st;
			snprintf(dir, len, "%s/tracing", m->mnt_dir);
			if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
				found = 1;
		}
	}
	endmntent(mounts);
	return found ? 0 : -ENOENT;
}

int record_session_open(struct record_session **out, const struct record_config *config,
                        enum record_open_failure *failure, char *err, size_t errlen)
{
	*out = NULL;
	*failure = RECORD_FAIL_OTHER;
	char mount_point[PATH_MAX];
	if (find_tracefs(mount_point, sizeof mount_point) < 0) {
		*failure = RECORD_FAIL_NOT_MOUNTED;
		set_err(err, errlen,
		        "tracefs is not mounted: run 'mount -t tracefs nodev /sys/kernel/tracing' "
		        "as root");
		return -ENOENT;
	}

	/* Pinned, so that libtracefs never looks for (or mounts) another one. */
	if (tracefs_set_tracing_dir(mount_point) < 0) {
		set_err(err, errlen, "out of memory");
		return -ENOMEM;
	}

	struct record_session *s = calloc(1, sizeof *s);
	if (!s) {
		set_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->clock = config->clock;
	int rc = create_instance(s, failure, err, errlen);
	if (rc < 0)
		goto out_close;

	/* Tracing starts off, so that nothing is recorded half set up. */
	rc = write_instance_file(s, "tracing_on", "0", err, errlen);
	if (rc < 0)
		goto out_close;
	rc = write_instance_file(s, "trace_clock",
	                         config->clock == RECORD_CLOCK_MONO ? "mono" : "boot", err, errlen);
	if (rc < 0)
		goto out_close;
	char kb[32];
	snprintf(kb, sizeof kb, "%u", config->buffer_kb);
	rc = write_instance_file(s, "buffer_size_kb", kb, err, errlen);
	if (rc < 0)
		goto out_close;
	/* trace_marker writes become ftrace/print events only with "markers" on. */
	rc = write_instance_file(s, "options/markers", "1", err, errlen);
	if (rc < 0)
		goto out_close;
	/* Newer kernels can copy the top-level trace_marker into an instance,
	 * so that programs writing there (plain atrace) are recorded too. */
	if (tracefs_file_exists(s->instance, "options/copy_trace_marker")) {
		rc = write_instance_file(s, "options/copy_trace_marker", "1", err, errlen);
		if (rc < 0)
			goto out_close;
	}
	rc = enable_event(s, "sched/sched_switch", failure, err, errlen);
	if (rc == 0)
		rc = enable_event(s, "sched/sched_waking", failure, err, errlen);
	for (size_t i = 0; rc == 0 && i < config->nevents; i++)
		rc = enable_event(s, config->events[i], failure, err, errlen);
	if (rc < 0)
		goto out_close;

	rc = load_event_formats(s, config, err, errlen);
	if (rc < 0)
		goto out_close;
	rc = open_cpus(s, err, errlen);
	if (rc < 0)
		goto out_close;
	*out = s;
	return 0;

out_close:
	record_session_close(s);
	return rc;
}

const char *record_session_instance(const struct record_session *session)
{
	return session->name;
}

const char *record_session_dir(const struct record_session *session)
{
	return session->dir;
}

int record_session_start(struct record_session *s, char *err, size_t errlen)
{
	if (tracefs_trace_on(s->instance) < 0) {
		int e = errno ? errno : EIO;
		set_err(err, errlen, "%s/tracing_on: cannot turn tracing on: %s", s->dir,
		        strerror(e));
		return -e;
	}
	s->tracing = 1;
	return 0;
}

/* ---- decoding ----------------------------------------------------------------- */

static int32_t field_int(struct tep_event *event, const char *name, struct tep_record *rec)
{
	unsigned long long v = 0;
	if (tep_get_field_val(NULL, event, name, rec, &v, 0) < 0)
		return -1;
	return (int32_t)v;
}

static const char *field_str(struct tep_event *event, const char *name, struct tep_record *rec,
                             size_t *max)
{
	struct tep_format_field *field = tep_find_field(event, name);
	if (!field || field->offset < 0 || rec->size <= field->offset)
		return NULL;
	*max = (size_t)(rec->size - field->offset);
	if (field->size > 0 && (size_t)field->size < *max)
		*max = (size_t)field->size;
	return (const char *)rec->data + field->offset;
}

/*
 * Appends src[0..len) to seq so that it stays on one line and is valid
 * UTF-8: control characters become ' ', invalid bytes U+FFFD.
 */
static void append_clean(struct trace_seq *seq, const char *src, size_t len)
{
	const unsigned char *p = (const unsigned char *)src;
	while (len) {
		size_t n = tl_utf8_char_len(p, len);
		if (n == 0) {
			trace_seq_puts(seq, TL_UTF8_REPLACEMENT);
			n = 1;
		} else if (n == 1 && (*p < 0x20 || *p == 0x7f)) {
			trace_seq_putc(seq, ' ');
		} else {
			trace_seq_printf(seq, "%.*s", (int)n, (const char *)p);
		}
		p += n;
		len -= n;
	}
}

/* A trace_marker write: counts its phase, learns its tgid, formats it. */
static void format_marker(struct record_session *s, struct tep_record *rec,
                          struct record_task *task)
{
	size_t max = 0;
	const char *buf = field_str(s->print_event, "buf", rec, &max);
	size_t len = buf ? strnlen(buf, max) : 0;
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\0'))
		len--;

	const char *phase = len ? strchr(RECORD_MARKER_PHASES, buf[0]) : NULL;
	if (phase && buf[0] != '\0')
		s->counts.markers[phase - RECORD_MARKER_PHASES]++;
	else
		s->counts.markers_other++;

	/* "X|<tgid>|...": the writer's process, if /proc did not tell. */
	if (task && task->tgid == TGID_UNKNOWN && len > 2 && buf[1] == '|') {
		long tgid = 0;
		size_t i = 2;
		while (i < len && buf[i] >= '0' && buf[i] <= '9' && tgid < 0x7fffffff)
			tgid = tgid * 10 + (buf[i++] - '0');
		if (i > 2 && (i == len || buf[i] == '|'))
			task->tgid = (int32_t)tgid;
	}
	trace_seq_puts(&s->seq, "tracing_mark_write: ");
	if (buf)
		append_clean(&s->seq, buf, len);
}

static void format_other(struct record_session *s, struct tep_event *event, struct tep_record *rec)
{
	struct trace_seq info;
	trace_seq_init(&info);
	tep_print_event(s->tep, &info, rec, "%s", TEP_PRINT_INFO);
	trace_seq_printf(&s->seq, "%s: ", event->name);
	append_clean(&s->seq, info.buffer, info.len);
	trace_seq_destroy(&info);
}

/* The irqs-off / need-resched / irq-context / preempt-depth columns. */
static void format_flags(struct record_session *s, struct tep_record *rec, char flags[8])
{
	struct trace_seq lat;
	trace_seq_init(&lat);
	tep_print_event(s->tep, &lat, rec, "%s", TEP_PRINT_LATENCY);
	size_t n = 0;
	for (unsigned i = 0; i < lat.len && n < 5; i++) {
		char c = lat.buffer[i];
		if (c != ' ')
			flags[n++] = c;
	}
	trace_seq_destroy(&lat);
	if (n < 4) {
		memcpy(flags, "....", 4);
		n = 4;
	}
	flags[n] = '\0';
}

static int keep_event(struct record_session *s, struct record_cpu *c, struct tep_record *rec)
{
	struct tep_event *event = tep_find_event(s->tep, tep_data_type(s->tep, rec));
	if (!event)
		return 0; /* an event whose format was not loaded: cannot print it */
	int32_t pid = tep_data_pid(s->tep, rec);
	struct record_task *task = task_get(s, pid);
	if (task)
		task->events++;

	trace_seq_reset(&s->seq);
	if (event == s->print_event) {
		format_marker(s, rec, task);
	} else {
		if (event == s->switch_event) {
			size_t max = 0;
			const char *comm = field_str(event, "prev_comm", rec, &max);
			task_set_comm(s, field_int(event, "prev_pid", rec), comm, max);
			comm = field_str(event, "next_comm", rec, &max);
			task_set_comm(s, field_int(event, "next_pid", rec), comm, max);
			s->counts.sched_switch++;
			int64_t prev = field_int(event, "prev_pid", rec);
			if (c->running >= 0 && prev != c->running) {
				c->unseen_switch_ins++;
				s->counts.unseen_switch_ins++;
			}
			c->running = field_int(event, "next_pid", rec);
		} else if (event == s->waking_event) {
			size_t max = 0;
			const char *comm = field_str(event, "comm", rec, &max);
			task_set_comm(s, field_int(event, "pid", rec), comm, max);
			s->counts.sched_waking++;
		} else {
			s->counts.others++;
		}
		format_other(s, event, rec);
	}
	if (s->seq.state != TRACE_SEQ__GOOD)
		return -ENOMEM;

	struct record_entry entry = {0};
	entry.ts_ns = rec->ts;
	entry.pid = pid;
	entry.text_len = s->seq.len;
	format_flags(s, rec, entry.flags);
	if (fwrite(&entry, sizeof entry, 1, c->spill) != 1 ||
	    fwrite(s->seq.buffer, 1, s->seq.len, c->spill) != s->seq.len)
		return -(errno ? errno : EIO);

	int64_t ts = (int64_t)rec->ts;
	if (s->counts.events == 0 || ts < s->counts.first_ts_ns)
		s->counts.first_ts_ns = ts;
	if (ts > s->counts.last_ts_ns)
		s->counts.last_ts_ns = ts;
	s->counts.events++;
	return 0;
}

/* Decodes one sub-buffer read from c. */
static int decode_page(struct record_session *s, struct record_cpu *c)
{
	if (kbuffer_load_subbuffer(s->kbuf, s->page) < 0)
		return -EINVAL;
	int missed = kbuffer_missed_events(s->kbuf);
	if (missed > 0)
		c->missed += (uint64_t)missed;
	else if (missed < 0)
		c->missed_unknown++; /* lost, but the kernel had no room to say how many */
	if (missed != 0)
		c->running = -1; /* a lost switch explains the next mismatch */

	unsigned long long ts;
	void *data = kbuffer_read_event(s->kbuf, &ts);
	while (data) {
		struct tep_record rec = {0};
		rec.ts = ts;
		rec.data = data;
		rec.size = kbuffer_event_size(s->kbuf);
		rec.cpu = c->cpu;
		int rc = keep_event(s, c, &rec);
		if (rc < 0)
			return rc;
		data = kbuffer_next_event(s->kbuf, &ts);
	}
	return 0;
}

/* Reads c until its buffer is empty. */
static int drain_cpu(struct record_session *s, struct record_cpu *c, char *err, size_t errlen)
{
	for (;;) {
		ssize_t n = read(c->fd, s->page, s->page_size);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n < 0) {
			int e = errno;
			set_err(err, errlen, "%s/per_cpu/cpu%d/trace_pipe_raw: read failed: %s",
			        s->dir, c->cpu, strerror(e));
			return -e;
		}
		if (n == 0)
			return 0;
		s->counts.bytes += (uint64_t)n;
		int rc = decode_page(s, c);
		if (rc == -EINVAL) {
			set_err(err, errlen, "cpu%d: a ring buffer page could not be decoded",
			        c->cpu);
			return rc;
		}
		if (rc < 0) {
			set_err(err, errlen, "cannot keep the events in a temporary file: %s",
			        strerror(-rc));
			return rc;
		}
	}
}

static int drain_all(struct record_session *s, char *err, size_t errlen)
{
	for (int i = 0; i < s->ncpus; i++) {
		int rc = drain_cpu(s, &s->cpus[i], err, errlen);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int record_session_wait_read(struct record_session *s, int timeout_ms, char *err, size_t errlen)
{
	struct pollfd fds[s->ncpus];
	for (int i = 0; i < s->ncpus; i++) {
		fds[i].fd = s->cpus[i].fd;
		fds[i].events = POLLIN;
		fds[i].revents = 0;
	}
	/* The kernel wakes readers when buffer_percent of a buffer is filled;
	 * the timeout bounds how stale the live progress gets. */
	if (poll(fds, (nfds_t)s->ncpus, timeout_ms) < 0 && errno != EINTR) {
		int e = errno;
		set_err(err, errlen, "poll on the trace buffers failed: %s", strerror(e));
		return -e;
	}
	return drain_all(s, err, errlen);
}

/* "overrun", "commit overrun" and "dropped events" of per_cpu/cpuN/stats. */
static uint64_t kernel_lost(struct record_session *s, int cpu)
{
	char file[64];
	snprintf(file, sizeof file, "per_cpu/cpu%d/stats", cpu);
	char *text = tracefs_instance_file_read(s->instance, file, NULL);
	if (!text)
		return 0;
	static const char *const keys[] = {"overrun: ", "commit overrun: ", "dropped events: "};
	uint64_t lost = 0;
	for (char *line = text; line && *line;) {
		for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
			size_t n = strlen(keys[k]);
			if (strncmp(line, keys[k], n) == 0)
				lost += strtoull(line + n, NULL, 10);
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	free(text);
	return lost;
}

int record_session_stop(struct record_session *s, char *err, size_t errlen)
{
	if (s->tracing) {
		tracefs_trace_off(s->instance);
		s->tracing = 0;
	}
	int rc = drain_all(s, err, errlen);
	s->counts.missed = 0;
	for (int i = 0; i < s->ncpus; i++) {
		struct record_cpu *c = &s->cpus[i];
		c->kernel_lost = kernel_lost(s, c->cpu);
		s->counts.missed += record_session_missed_on(s, i);
	}
	return rc;
}

/* ---- results ------------------------------------------------------------------- */

static int compare_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t count_processes(const struct record_session *s)
{
	if (!s->tasks_used)
		return 0;
	int32_t *tgids = malloc(s->tasks_used * sizeof *tgids);
	if (!tgids)
		return 0;
	size_t n = 0;
	for (size_t i = 0; i < s->tasks_cap; i++) {
		const struct record_task *t = &s->tasks[i];
		if (t->pid > 0 && t->events && t->tgid > 0)
			tgids[n++] = t->tgid;
	}
	qsort(tgids, n, sizeof *tgids, compare_i32);
	uint64_t distinct = 0;
	for (size_t i = 0; i < n; i++)
		distinct += i == 0 || tgids[i] != tgids[i - 1];
	free(tgids);
	return distinct;
}

void record_session_counts(const struct record_session *s, struct record_counts *out)
{
	*out = s->counts;
	/* While recording: what the page headers said so far. */
	out->missed = 0;
	for (int i = 0; i < s->ncpus; i++)
		out->missed += record_session_missed_on(s, i);
	out->processes = count_processes(s);
}

int record_session_cpus(const struct record_session *s)
{
	return s->ncpus;
}

uint64_t record_session_unseen_switch_ins_on(const struct record_session *s, int index)
{
	return s->cpus[index].unseen_switch_ins;
}

uint64_t record_session_missed_on(const struct record_session *s, int index)
{
	const struct record_cpu *c = &s->cpus[index];
	uint64_t seen = c->missed + (uint64_t)c->missed_unknown;
	return seen > c->kernel_lost ? seen : c->kernel_lost;
}

/* ---- ftrace text ---------------------------------------------------------------- */

static const char text_header[] =
    "# tracer: nop\n"
    "#\n"
    "# entries-in-buffer/entries-written: %llu/%llu   #P:%d\n"
    "#\n"
    "#                                      _-----=> irqs-off\n"
    "#                                     / _----=> need-resched\n"
    "#                                    | / _---=> hardirq/softirq\n"
    "#                                    || / _--=> preempt-depth\n"
    "#                                    ||| /     delay\n"
    "#           TASK-PID    TGID   CPU#  ||||   TIMESTAMP  FUNCTION\n"
    "#              | |        |      |   ||||      |         |\n";

/* The task column, right-aligned in 16, as recorder/export/export_ftrace.c writes
 * it: spaces and control characters become '_', and so does a '-' before a
 * digit (it would read as the -pid separator). */
static void write_task(tl_out *out, const char *comm)
{
	char task[TASK_COMM_MAX + 1];
	size_t n = 0;
	const char *p = comm && *comm ? comm : "<...>";
	for (; *p && n < TASK_COMM_MAX; p++) {
		char c = *p;
		if ((unsigned char)c <= ' ' || c == 0x7f ||
		    (c == '-' && p[1] >= '0' && p[1] <= '9'))
			c = '_';
		task[n++] = c;
	}
	for (size_t pad = n; pad < 16; pad++)
		tl_out_char(out, ' ');
	tl_out_bytes(out, task, n);
}

static void write_line(tl_out *out, const struct record_session *s, const struct record_entry *e,
                       int cpu, const char *text)
{
	const struct record_task *task = task_find(s, e->pid);
	char buf[96];
	write_task(out, task ? task->comm : NULL);
	int n;
	if (task && task->tgid >= 0 && e->pid != 0)
		n = snprintf(buf, sizeof buf, "-%-5d (%5d) ", (int)e->pid, (int)task->tgid);
	else
		n = snprintf(buf, sizeof buf, "-%-5d (-----) ", (int)e->pid);
	tl_out_bytes(out, buf, (size_t)n);
	n = snprintf(buf, sizeof buf, "[%03d] %s %5llu.%06llu: ", cpu, e->flags,
	             (unsigned long long)(e->ts_ns / 1000000000u),
	             (unsigned long long)(e->ts_ns % 1000000000u / 1000u));
	tl_out_bytes(out, buf, (size_t)n);
	tl_out_bytes(out, text, e->text_len);
	tl_out_char(out, '\n');
}

/* The head of one CPU's stream during the merge. */
struct merge_head {
	struct record_entry entry;
	char *text;
	size_t cap;
	int valid;
};

static int merge_next(struct record_cpu *c, struct merge_head *h)
{
	h->valid = 0;
	if (fread(&h->entry, sizeof h->entry, 1, c->spill) != 1)
		return ferror(c->spill) ? -EIO : 0;
	if (h->entry.text_len + 1 > h->cap) {
		char *text = realloc(h->text, h->entry.text_len + 1);
		if (!text)
			return -ENOMEM;
		h->text = text;
		h->cap = h->entry.text_len + 1;
	}
	if (fread(h->text, 1, h->entry.text_len, c->spill) != h->entry.text_len)
		return -EIO;
	h->entry.flags[sizeof h->entry.flags - 1] = '\0';
	h->valid = 1;
	return 0;
}

int record_session_write_text(struct record_session *s, int fd)
{
	struct merge_head *heads = calloc((size_t)s->ncpus, sizeof *heads);
	tl_out *out = malloc(sizeof *out);
	int rc = 0;
	if (!heads || !out) {
		rc = -ENOMEM;
		goto out_free;
	}
	tl_out_init(out, fd);
	char text[sizeof text_header + 256];
	int n = snprintf(text, sizeof text, text_header, (unsigned long long)s->counts.events,
	                 (unsigned long long)(s->counts.events + s->counts.missed), s->ncpus);
	tl_out_bytes(out, text, (size_t)n);
	n = snprintf(text, sizeof text,
	             "# timeline: recorder=tracefs clock=%s instance=%s cpus=%d "
	             "missed_events=%llu\n",
	             s->clock == RECORD_CLOCK_MONO ? "mono" : "boot", s->name, s->ncpus,
	             (unsigned long long)s->counts.missed);
	tl_out_bytes(out, text, (size_t)n);

	for (int i = 0; i < s->ncpus && rc == 0; i++) {
		if (fflush(s->cpus[i].spill) != 0 || fseek(s->cpus[i].spill, 0, SEEK_SET) != 0)
			rc = -errno;
		else
			rc = merge_next(&s->cpus[i], &heads[i]);
	}
	while (rc == 0 && !out->err) {
		int best = -1;
		for (int i = 0; i < s->ncpus; i++) {
			if (heads[i].valid &&
			    (best < 0 || heads[i].entry.ts_ns < heads[best].entry.ts_ns))
				best = i;
		}
		if (best < 0)
			break;
		write_line(out, s, &heads[best].entry, s->cpus[best].cpu, heads[best].text);
		rc = merge_next(&s->cpus[best], &heads[best]);
	}
	int flushed = tl_out_flush(out);
	if (rc == 0)
		rc = flushed;

out_free:
	for (int i = 0; heads && i < s->ncpus; i++)
		free(heads[i].text);
	free(heads);
	free(out);
	return rc;
}

/* ---- teardown -------------------------------------------------------------------- */

void record_session_close(struct record_session *s)
{
	if (!s)
		return;
	if (s->instance && s->tracing)
		tracefs_trace_off(s->instance);
	/* The buffers must be closed before the instance can be removed. */
	for (int i = 0; i < s->ncpus; i++) {
		close(s->cpus[i].fd);
		fclose(s->cpus[i].spill);
	}
	free(s->cpus);
	free(s->page);
	if (s->instance) {
		if (s->created && tracefs_instance_destroy(s->instance) < 0)
			fprintf(
			    stderr,
			    "timeline record: warning: cannot remove the tracefs instance %s: %s; "
			    "remove it with: rmdir %s\n",
			    s->name, strerror(errno), s->dir ? s->dir : s->name);
		tracefs_instance_free(s->instance);
	}
	free(s->dir);
	if (s->kbuf)
		kbuffer_free(s->kbuf);
	if (s->seq_ready)
		trace_seq_destroy(&s->seq);
	if (s->tep)
		tep_free(s->tep);
	free(s->tasks);
	free(s);
}
