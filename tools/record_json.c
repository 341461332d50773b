/*
 * `timeline record --format json` and `--format perfetto`: the captured
 * ftrace text read back the way `timeline convert` reads it (markers
 * rebuilt into slices, instants, async slices and counters as Perfetto
 * would), plus the scheduler: each CPU becomes a thread of a "CPUs" process
 * whose slices are the tasks that ran on it, from sched_switch. The one
 * trace model goes to the JSON or the Perfetto exporter.
 */
#include "tools/record_json.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "recorder/export/trace_model.h"
#include "tools/readers/ftrace_text.h"
#include "tools/readers/trace_import.h"

/* Ids of the synthetic "CPUs" process and its per-CPU threads: above any
 * pid the kernel hands out (at most 2^22). */
#define CPU_PID 0x7fff0000u
#define CPU_TID(cpu) (CPU_PID + 1u + (cpu))

/* The value of `key=` in sched_switch's text, up to the next blank. */
static int field(const tl_str_view *text, const char *key, const char **value, size_t *len)
{
	size_t klen = strlen(key);
	for (size_t i = 0; i + klen <= text->len; i++) {
		if ((i == 0 || text->ptr[i - 1] == ' ') && memcmp(text->ptr + i, key, klen) == 0) {
			size_t start = i + klen, end = start;
			while (end < text->len && text->ptr[end] != ' ')
				end++;
			*value = text->ptr + start;
			*len = end - start;
			return 0;
		}
	}
	return -1;
}

struct cpu_state {
	int running;
	int64_t since_ns;
	char name[64]; /* "comm pid" */
	uint64_t seq;
};

static int add_cpu_slice(tl_model *model, uint32_t cpu, struct cpu_state *st, int64_t end_ns)
{
	tl_model_event *e = tl_model_event_append(model);
	if (!e)
		return -ENOMEM;
	e->phase = TL_PHASE_COMPLETE;
	e->pid = CPU_PID;
	e->tid = CPU_TID(cpu);
	e->ts_ns = st->since_ns;
	e->end_ns = end_ns;
	e->seq = st->seq++;
	e->cat = tl_model_intern(model, "sched", 5);
	e->name = tl_model_intern(model, st->name, strlen(st->name));
	return e->cat && e->name ? 0 : -ENOMEM;
}

static int compare_events(const void *a, const void *b)
{
	const tl_model_event *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Adds the per-CPU scheduling slices of text to model. */
static int add_sched_slices(const tl_ftrace_text *text, tl_model *model)
{
	uint32_t ncpus = 0;
	for (size_t i = 0; i < text->nlines; i++)
		if (text->lines[i].cpu + 1 > ncpus)
			ncpus = text->lines[i].cpu + 1;
	if (ncpus == 0)
		return 0;
	struct cpu_state *cpus = calloc(ncpus, sizeof *cpus);
	if (!cpus)
		return -ENOMEM;
	int rc = 0;
	int64_t last_ns = 0;
	for (size_t i = 0; i < text->nlines && rc == 0; i++) {
		const tl_ftrace_line *line = &text->lines[i];
		last_ns = line->ts_ns > last_ns ? line->ts_ns : last_ns;
		if (line->kind != TL_FTRACE_LINE_OTHER || line->event.len != 12 ||
		    memcmp(line->event.ptr, "sched_switch", 12) != 0)
			continue;
		const char *comm, *pid;
		size_t comm_len, pid_len;
		if (field(&line->text, "next_comm=", &comm, &comm_len) ||
		    field(&line->text, "next_pid=", &pid, &pid_len))
			continue;
		struct cpu_state *st = &cpus[line->cpu];
		if (st->running && line->ts_ns > st->since_ns)
			rc = add_cpu_slice(model, line->cpu, st, line->ts_ns);
		/* pid 0 is the idle task: an idle CPU has no slice */
		st->running = !(pid_len == 1 && pid[0] == '0');
		st->since_ns = line->ts_ns;
		snprintf(st->name, sizeof st->name, "%.*s %.*s", (int)(comm_len > 40 ? 40 : comm_len),
			 comm, (int)(pid_len > 12 ? 12 : pid_len), pid);
	}
	for (uint32_t cpu = 0; cpu < ncpus && rc == 0; cpu++) {
		struct cpu_state *st = &cpus[cpu];
		if (st->running && last_ns > st->since_ns)
			rc = add_cpu_slice(model, cpu, st, last_ns);
		if (st->seq > 0 && rc == 0) {
			char name[32];
			int n = snprintf(name, sizeof name, "CPU %u", cpu);
			rc = tl_model_thread_set_in(model, CPU_PID, CPU_TID(cpu), name, (size_t)n);
		}
	}
	if (rc == 0 && model->nevents)
		rc = tl_model_process_set(model, CPU_PID, "CPUs", 4);
	free(cpus);
	if (rc == 0 && model->nevents > 1) /* qsort's array may not be NULL, even empty */
		qsort(model->events, model->nevents, sizeof *model->events, compare_events);
	return rc;
}

/* A process the markers did not name takes the name of its main thread
 * (tid == pid), as the kernel's task name shows it. */
static int name_processes(tl_model *model)
{
	for (size_t i = 0; i < model->nthreads; i++) {
		const tl_model_thread *t = &model->threads[i];
		uint32_t pid = t->pid ? t->pid : model->pid;
		if (t->tid != pid || !t->name[0])
			continue;
		const char *have = tl_model_process_name(model, pid);
		if (have && have[0])
			continue;
		if (pid == model->pid) {
			model->process_name = t->name;
			continue;
		}
		int rc = tl_model_process_set(model, pid, t->name, strlen(t->name));
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- the command's own events (file recorder files) ------------------------ */

/* A file recorder file of dir: "app-PID.tl", or one of its rotation,
 * "app-PID.tl.N" (N from 1, the newest of the older ones). */
struct app_file {
	char name[64];
	unsigned long pid;
	unsigned long rotation; /* N, 0 for the current file */
};

/* By process, oldest first: the highest N first, the current file last. */
static int compare_app_files(const void *pa, const void *pb)
{
	const struct app_file *a = pa, *b = pb;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->rotation > b->rotation ? -1 : a->rotation < b->rotation;
}

/* Whether name is a file recorder file of the command ("app-%p.tl" as
 * cmd_record.c names them, or one of its rotation): fills *f. */
static int app_file_of(const char *name, struct app_file *f)
{
	char *end;
	if (strncmp(name, "app-", 4) != 0 || name[4] < '0' || name[4] > '9' ||
	    strlen(name) >= sizeof f->name)
		return 0;
	f->pid = strtoul(name + 4, &end, 10);
	if (strncmp(end, ".tl", 3) != 0)
		return 0;
	end += 3;
	f->rotation = 0;
	if (*end == '.' && end[1] >= '1' && end[1] <= '9')
		f->rotation = strtoul(end + 1, &end, 10);
	if (*end != '\0')
		return 0;
	snprintf(f->name, sizeof f->name, "%s", name);
	return 1;
}

/* Lists the file recorder files of dir, sorted (compare_app_files); how
 * many into *files (malloc'd), or -errno. */
static int list_app_files(const char *dir, struct app_file **files)
{
	*files = NULL;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *ent;
	struct app_file f;
	while ((ent = readdir(d)) != NULL) {
		if (!app_file_of(ent->d_name, &f))
			continue;
		struct app_file *grown = realloc(*files, (size_t)(n + 1) * sizeof **files);
		if (!grown) {
			closedir(d);
			free(*files);
			*files = NULL;
			return -ENOMEM;
		}
		*files = grown;
		(*files)[n++] = f;
	}
	closedir(d);
	if (n > 1)
		qsort(*files, (size_t)n, sizeof **files, compare_app_files);
	return n;
}

/*
 * Reads the file recorder files of dir, one trace per process: "app-PID.tl"
 * with the older files of its rotation ("app-PID.tl.N", when the command
 * ran with TIMELINE_FILE_MAX_KB), oldest first, as `timeline convert` reads
 * a rotation. Data lost in a file (cut by a kill, undecodable records) is
 * said on standard error and what was read is kept. Returns how many
 * traces were read into *models (malloc'd), or -errno.
 */
static int read_app_models(const char *dir, tl_model **models, char *err, size_t errlen)
{
	*models = NULL;
	if (!dir)
		return 0;
	struct app_file *files;
	int nfiles = list_app_files(dir, &files);
	if (nfiles < 0)
		return nfiles;
	int n = 0, rc = 0;
	for (int first = 0, last; first < nfiles && rc == 0; first = last) {
		for (last = first + 1; last < nfiles && files[last].pid == files[first].pid; last++)
			;
		char(*paths)[4096] = calloc((size_t)(last - first), sizeof *paths);
		const char **set = calloc((size_t)(last - first), sizeof *set);
		tl_model *grown = realloc(*models, (size_t)(n + 1) * sizeof **models);
		if (grown)
			*models = grown;
		if (!paths || !set || !grown) {
			free(paths);
			free(set);
			rc = -ENOMEM;
			break;
		}
		for (int i = first; i < last; i++) {
			snprintf(paths[i - first], sizeof paths[i - first], "%s/%s", dir,
			         files[i].name);
			set[i - first] = paths[i - first];
		}
		char why[256] = "";
		int read = tl_model_read_binary_files(set, (size_t)(last - first), NULL,
		                                      &(*models)[n], why, sizeof why);
		free(paths);
		free(set);
		const char *name = files[last - 1].name;
		if (read < 0 && read != -ENODATA) {
			/* a process killed before its file had a header: nothing to add */
			if ((*models)[n].nevents == 0)
				continue;
			snprintf(err, errlen, "%s: %s", name, why);
			rc = read;
			break;
		}
		if (why[0])
			fprintf(stderr,
			        "timeline record: warning: the command's own events (%s%s): %s; "
			        "merging what was read\n",
			        name, last - first > 1 ? " and its rotation" : "", why);
		if (read == -ENODATA)
			continue; /* killed after its header, before its first event: said */
		n++;
	}
	free(files);
	if (rc) {
		for (int i = 0; i < n; i++)
			tl_model_free(&(*models)[i]);
		free(*models);
		*models = NULL;
		return rc;
	}
	return n;
}

/* What to add to an app's timestamps to put them on the capture's clock:
 * 0 on the same clock, else the difference of the app's boot and mono
 * clocks at its snapshot. */
static int64_t app_clock_shift(const tl_model *app, int capture_clock)
{
	if (app->clock_id == capture_clock || !app->boottime_ns || !app->monotonic_ns)
		return 0;
	int64_t boot_minus_mono = app->boottime_ns - app->monotonic_ns;
	if (app->clock_id == 7 && capture_clock == 1)
		return -boot_minus_mono;
	if (app->clock_id == 1 && capture_clock == 7)
		return boot_minus_mono;
	return 0;
}

static int compare_merged_events(const void *pa, const void *pb, void *model)
{
	const tl_model_event *a = pa, *b = pb;
	uint32_t ap = tl_model_event_pid(model, a), bp = tl_model_event_pid(model, b);
	if (ap != bp)
		return ap < bp ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/*
 * Adds an app's own events to the capture: its processes and full thread
 * names, every event with its args, on the capture's clock. The app's
 * process's events rebuilt from its markers are dropped first: its own
 * record of the same events says more (a program that recorded with the
 * file recorder writes no marker, so this only matters for one that also
 * wrote atrace itself).
 */
static int add_app_model(tl_model *capture, const tl_model *app)
{
	uint32_t pid = app->pid;
	size_t kept = 0;
	for (size_t i = 0; i < capture->nevents; i++)
		if (tl_model_event_pid(capture, &capture->events[i]) != pid)
			capture->events[kept++] = capture->events[i];
	capture->nevents = kept;
	int nomem = 0;
	if (app->process_name && app->process_name[0] &&
	    tl_model_process_set(capture, pid, app->process_name, strlen(app->process_name)))
		return -ENOMEM;
	for (size_t i = 0; i < app->nthreads; i++) {
		const tl_model_thread *t = &app->threads[i];
		if (t->name[0] && tl_model_thread_set_in(capture, tl_model_thread_pid(app, t), t->tid,
		                                         t->name, strlen(t->name)))
			return -ENOMEM;
	}
	uint64_t seq = 0;
	for (size_t i = 0; i < capture->nevents; i++)
		if (capture->events[i].seq >= seq)
			seq = capture->events[i].seq + 1;
	int64_t shift = app_clock_shift(app, capture->clock_id);
	for (size_t i = 0; i < app->nevents && !nomem; i++) {
		tl_model_event *e = tl_model_event_append(capture);
		if (!e)
			return -ENOMEM;
		const tl_model_event *from = &app->events[i];
		*e = *from;
		e->pid = tl_model_event_pid(app, from);
		e->seq = seq + from->seq;
		e->ts_ns += shift;
		if (e->phase == TL_PHASE_COMPLETE && e->end_ns)
			e->end_ns += shift; /* a counter's value shares it */
		nomem = tl_model_event_adopt_strings(capture, e) != 0;
	}
	if (nomem)
		return -ENOMEM;
	capture->stats.events_dropped += app->stats.events_dropped;
	capture->stats.events_overwritten += app->stats.events_overwritten;
	if (capture->nevents > 1)
		qsort_r(capture->events, capture->nevents, sizeof *capture->events,
		        compare_merged_events, capture);
	return 0;
}

typedef int (*exporter_fn)(const tl_model *model, int fd, tl_export_counts *counts);

static int record_write_model(struct record_session *session, const char *app_dir, int fd,
                              exporter_fn export_model, char *err, size_t errlen)
{
	int rc;
	void *data = MAP_FAILED;
	size_t size = 0;
	tl_ftrace_text text = {0};
	tl_import imp = {0};
	tl_model model = {0};
	int have_import = 0, have_model = 0;

	int text_fd = memfd_create("timeline-record", MFD_CLOEXEC);
	if (text_fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot make a buffer for the text: %s", strerror(errno));
		return rc;
	}
	rc = record_session_write_text(session, text_fd);
	if (rc < 0) {
		snprintf(err, errlen, "cannot write the text: %s", strerror(-rc));
		goto out;
	}
	off_t end = lseek(text_fd, 0, SEEK_END);
	if (end <= 0) {
		rc = end < 0 ? -errno : -EINVAL;
		snprintf(err, errlen, "the captured text is empty");
		goto out;
	}
	size = (size_t)end;
	data = mmap(NULL, size, PROT_READ, MAP_PRIVATE, text_fd, 0);
	if (data == MAP_FAILED) {
		rc = -errno;
		snprintf(err, errlen, "cannot map the captured text: %s", strerror(errno));
		goto out;
	}
	tl_read_error read_err = {0};
	rc = tl_ftrace_text_read(data, size, 0, &text, &read_err);
	if (rc == 0)
		rc = tl_import_build(&text, NULL, &imp);
	have_import = rc == 0;
	if (rc == 0)
		rc = tl_import_to_model(&imp, &model);
	have_model = rc == 0;
	if (rc == 0)
		rc = name_processes(&model);
	if (rc == 0)
		rc = add_sched_slices(&text, &model);
	if (rc) {
		snprintf(err, errlen, "cannot rebuild the trace: %s",
			 read_err.message[0] ? read_err.message : strerror(-rc));
		goto out;
	}
	tl_model *apps = NULL;
	int napps = read_app_models(app_dir, &apps, err, errlen);
	if (napps < 0) {
		rc = napps;
		goto out;
	}
	for (int i = 0; i < napps; i++) {
		if (rc == 0)
			rc = add_app_model(&model, &apps[i]);
		tl_model_free(&apps[i]);
	}
	free(apps);
	if (rc) {
		snprintf(err, errlen, "cannot add the command's own events: %s", strerror(-rc));
		goto out;
	}
	rc = export_model(&model, fd, NULL);
	if (rc)
		snprintf(err, errlen, "write failed: %s", strerror(-rc));
out:
	if (have_model)
		tl_model_free(&model);
	if (have_import)
		tl_import_free(&imp);
	tl_ftrace_text_free(&text);
	if (data != MAP_FAILED)
		munmap(data, size);
	close(text_fd);
	return rc;
}

int record_write_json(struct record_session *session, const char *app_dir, int fd, char *err,
                      size_t errlen)
{
	return record_write_model(session, app_dir, fd, tl_export_json, err, errlen);
}

int record_write_perfetto(struct record_session *session, const char *app_dir, int fd, char *err,
                          size_t errlen)
{
	return record_write_model(session, app_dir, fd, tl_export_perfetto, err, errlen);
}

/* ---- ftrace text with the command's own events ------------------------------ */

/* The timestamp of an ftrace line, in ns ("... [001] ....  2483.933690: ..."):
 * the number before the first ':' after the CPU column; -1 for a header. */
static int64_t line_ts(const char *line, size_t len)
{
	const char *end = line + len;
	const char *p = memchr(line, ']', len);
	if (!p || line[0] == '#')
		return -1;
	const char *colon = memchr(p, ':', (size_t)(end - p));
	if (!colon)
		return -1;
	const char *start = colon;
	while (start > p && start[-1] != ' ')
		start--;
	int64_t sec = 0, frac = 0, scale = 1000000000;
	const char *q = start;
	for (; q < colon && *q >= '0' && *q <= '9'; q++)
		sec = sec * 10 + (*q - '0');
	if (q < colon && *q == '.')
		for (q++; q < colon && *q >= '0' && *q <= '9' && scale > 1; q++) {
			scale /= 10;
			frac += (*q - '0') * scale;
		}
	return q == colon ? sec * 1000000000 + frac : -1;
}

struct text {
	char *data;
	size_t len, at;
};

static int text_of_fd(int mfd, struct text *t)
{
	off_t end = lseek(mfd, 0, SEEK_END);
	if (end < 0)
		return -errno;
	t->len = (size_t)end;
	t->at = 0;
	t->data = malloc(t->len + 1);
	if (!t->data)
		return -ENOMEM;
	if (pread(mfd, t->data, t->len, 0) != (ssize_t)t->len) {
		free(t->data);
		return -EIO;
	}
	return 0;
}

/* The next event line of t (its header lines skipped), or NULL. */
static const char *next_line(struct text *t, size_t *len, int64_t *ts)
{
	while (t->at < t->len) {
		const char *line = t->data + t->at;
		const char *nl = memchr(line, '\n', t->len - t->at);
		*len = nl ? (size_t)(nl - line) + 1 : t->len - t->at;
		int64_t v = line_ts(line, *len);
		if (v >= 0) {
			*ts = v;
			return line;
		}
		t->at += *len;
	}
	return NULL;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Whether a line of the capture is a marker of one of the pids whose own
 * events are merged: an atrace event (clock sync markers are kept) of the
 * process its payload names, or its tgid column when the payload names
 * none (an E may not). The app's record of the same events replaces it, as
 * in the JSON. */
static int is_merged_marker(const char *line, size_t len, const uint32_t *pids, int npids)
{
	tl_ftrace_line tok;
	tl_atrace_point point;
	if (len && line[len - 1] == '\n')
		len--;
	if (tl_ftrace_line_tokenize(line, len, &tok) != 0 || tok.kind != TL_FTRACE_LINE_MARKER ||
	    tl_atrace_parse(tok.text.ptr, tok.text.len, &point) != TL_ATRACE_OK)
		return 0;
	uint32_t pid = point.tgid ? point.tgid : tok.tgid;
	for (int i = 0; i < npids; i++)
		if (pids[i] == pid)
			return 1;
	return 0;
}

int record_write_text(struct record_session *session, const char *app_dir, int capture_clock,
                      int fd, char *err, size_t errlen)
{
	tl_model *apps = NULL;
	int napps = read_app_models(app_dir, &apps, err, errlen);
	if (napps <= 0) {
		int rc = napps < 0 ? napps : record_session_write_text(session, fd);
		if (rc < 0 && !err[0])
			snprintf(err, errlen, "write failed: %s", strerror(-rc));
		return rc;
	}
	/* the capture, and each app's events as the ftrace exporter writes
	 * them, merged line by line in time order */
	struct text *texts = calloc((size_t)napps + 1, sizeof *texts);
	uint32_t *pids = calloc((size_t)napps, sizeof *pids);
	int rc = texts && pids ? 0 : -ENOMEM;
	for (int i = 0; i <= napps && rc == 0; i++) {
		int mfd = memfd_create("timeline-record", MFD_CLOEXEC);
		if (mfd < 0) {
			rc = -errno;
			break;
		}
		if (i == 0) {
			rc = record_session_write_text(session, mfd);
		} else {
			tl_model *app = &apps[i - 1];
			pids[i - 1] = app->pid;
			int64_t shift = app_clock_shift(app, capture_clock);
			for (size_t k = 0; k < app->nevents; k++) {
				app->events[k].ts_ns += shift;
				if (app->events[k].phase == TL_PHASE_COMPLETE &&
				    app->events[k].end_ns)
					app->events[k].end_ns += shift;
			}
			rc = tl_export_ftrace(app, mfd, NULL);
		}
		if (rc == 0)
			rc = text_of_fd(mfd, &texts[i]);
		close(mfd);
	}
	for (int i = 0; i < napps; i++)
		tl_model_free(&apps[i]);
	free(apps);
	if (rc == 0) {
		/* the capture's header, then every event line by timestamp */
		const char *body = texts[0].data;
		size_t header = 0;
		while (header < texts[0].len && body[header] == '#') {
			const char *nl = memchr(body + header, '\n', texts[0].len - header);
			header = nl ? (size_t)(nl - body) + 1 : texts[0].len;
		}
		rc = write_all(fd, body, header);
		texts[0].at = header;
		for (;;) {
			int best = -1;
			int64_t best_ts = 0;
			size_t best_len = 0;
			const char *best_line = NULL;
			for (int i = 0; i <= napps; i++) {
				size_t len;
				int64_t ts;
				const char *line = next_line(&texts[i], &len, &ts);
				if (line && (best < 0 || ts < best_ts)) {
					best = i;
					best_ts = ts;
					best_len = len;
					best_line = line;
				}
			}
			if (best < 0 || rc)
				break;
			if (best > 0 || !is_merged_marker(best_line, best_len, pids, napps))
				rc = write_all(fd, best_line, best_len);
			texts[best].at += best_len;
		}
	}
	for (int i = 0; texts && i <= napps; i++)
		free(texts[i].data);
	free(texts);
	free(pids);
	if (rc)
		snprintf(err, errlen, "cannot write the trace with the command's own events: %s",
		         strerror(-rc));
	return rc;
}
