/*
 * `timeline record --format json` and `--format perfetto`: the captured
 * ftrace text read back the way `timeline convert` reads it (markers
 * rebuilt into slices, instants, async slices and counters as Perfetto
 * would), plus the scheduler: each CPU becomes a thread of a "CPUs" process
 * whose slices are the tasks that ran on it, from sched_switch. The one
 * trace model goes to the JSON or the Perfetto exporter.
 */
#include "tools/record_json.h"

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
	if (rc == 0)
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

typedef int (*exporter_fn)(const tl_model *model, int fd, tl_export_counts *counts);

static int record_write_model(struct record_session *session, int fd, exporter_fn export_model,
                              char *err, size_t errlen)
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

int record_write_json(struct record_session *session, int fd, char *err, size_t errlen)
{
	return record_write_model(session, fd, tl_export_json, err, errlen);
}

int record_write_perfetto(struct record_session *session, int fd, char *err, size_t errlen)
{
	return record_write_model(session, fd, tl_export_perfetto, err, errlen);
}
