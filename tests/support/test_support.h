/* Helpers shared by the cmocka suites. */
#ifndef TIMELINE_TEST_SUPPORT_H
#define TIMELINE_TEST_SUPPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

/* 1 in a build under a sanitizer, whose allocator and instruction
 * counts are its own; else 0. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TL_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                         \
    __has_feature(memory_sanitizer)
#define TL_TEST_SANITIZED 1
#endif
#endif
#ifndef TL_TEST_SANITIZED
#define TL_TEST_SANITIZED 0
#endif

/* Exit code ctest reads as "skipped" (SKIP_RETURN_CODE). */
#define TL_TEST_SKIP_EXIT 77

/* A fresh path under the test temp directory: <tmp>/<stem>-<pid>-<n><ext>. */
const char *tl_test_path(const char *stem, const char *ext);

/* Reads a whole file into a NUL-terminated malloc'd buffer; NULL on error. */
char *tl_test_read_file(const char *path, size_t *len);

/* Runs a shell command, returns its exit status (or -1). Output goes to the
 * test's stdout. */
int tl_test_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Runs a shell command with its standard output and error each into a
 * fresh file: its exit status (or -1); *out and *err what it printed, read
 * back (either may be NULL when not wanted; free them). */
int tl_test_run_output(char **out, char **err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* tl_test_run_output of `timeline ARGS` (the CLI of tl_test_cli). */
int tl_test_run_cli(char **out, char **err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The built `timeline` CLI (from TIMELINE_CLI), or NULL. */
const char *tl_test_cli(void);

/* The emulator a cross build's suites run under (TL_TEST_EMULATOR, set by
 * ctest), or NULL when they run natively. For skips of what it cannot do. */
const char *tl_test_emulator(void);

/* Counts occurrences of needle in haystack. */
size_t tl_test_count(const char *haystack, const char *needle);

/* The names in dir (without . and ..), joined by spaces, in readdir order;
 * static storage, overwritten by the next call. Fails the test when dir
 * cannot be opened. */
const char *tl_test_dir_entries(const char *dir);

/* Starts the library with a recorder and buffer size, asserting success. */
void tl_test_init(int recorder, size_t buffer_bytes);

struct tl_model;
/* Takes a binary snapshot in memory and reads it back; asserts success. */
void tl_test_snapshot_model(struct tl_model *model);

/* Counts events of a phase (and name, when not NULL) in a model. */
size_t tl_test_count_events(const struct tl_model *model, char phase, const char *name);

/* Unsets the TIMELINE_* environment so a suite starts from the defaults,
 * except TIMELINE_NO_TSC and TIMELINE_FORCE_TSC: ctest runs the
 * clock-dependent suites again with each of them set to 1, so they are put
 * back to the values they had at the first call (a suite calls this first
 * thing in main). The first call also runs tl_test_require_clock_path(). */
void tl_test_clear_environment(void);

/* ---- traces read back ------------------------------------------------------ */

/*
 * Decodes the Perfetto trace at path with protoc against the schema in
 * tests/fixtures/perfetto/ and returns protoc's text (malloc'd). Fails the
 * test when protoc rejects the file or shows a field the schema does not
 * have (an unknown field prints as its number); skips the running test,
 * printing why, when protoc is not installed.
 */
char *tl_test_perfetto_decode(const char *path);

/* Whether protoc is installed (for tests that decode only when it is). */
int tl_test_have_protoc(void);

/*
 * What `timeline slices --kind ...` prints for the trace at path, every
 * kind of item but the stats (which name each format's own rejections);
 * malloc'd. Fails the test when the file cannot be read.
 */
char *tl_test_slices(const char *path);

/* ---- signals -------------------------------------------------------------- */

/* A timer that sends signo to the calling thread alone (the process may
 * have other threads) every interval_ns, the first after first_ns: a
 * signal storm on that thread. Fails the test when it cannot be made. */
typedef struct tl_test_thread_timer {
	timer_t timer;
	int armed;
} tl_test_thread_timer;

void tl_test_thread_timer_start(tl_test_thread_timer *t, int signo, long first_ns,
                                long interval_ns);

/* The same for a thread that must not fail the test itself (cmocka's
 * assertions belong to the test's thread): 0 or -errno. */
int tl_test_thread_timer_try_start(tl_test_thread_timer *t, int signo, long first_ns,
                                   long interval_ns);

/* Disarms and deletes the timer. */
void tl_test_thread_timer_stop(tl_test_thread_timer *t);

/* ---- the clock path ------------------------------------------------------ */

/* The kernel's clocksource, as sysfs names it ("tsc", "kvm-clock", ...), or
 * "unknown" when it cannot be read. */
const char *tl_test_clocksource(void);

/* True when TIMELINE_NO_TSC=1 is in the environment: every session, whatever
 * its tl_options, reads the clock through the vDSO. */
int tl_test_no_tsc_forced(void);

/* True when TIMELINE_FORCE_TSC=1 is in the environment (and TIMELINE_NO_TSC=1
 * is not): sessions take the TSC path wherever the TSC is invariant. */
int tl_test_tsc_forced(void);

/* True when a session started now with no_tsc = false stamps events with the
 * TSC: the TSC is usable on this machine, or invariant and forced with
 * TIMELINE_FORCE_TSC=1, and TIMELINE_NO_TSC does not force the vDSO path. */
int tl_test_tsc_expected(void);

/* For a suite's main: when TIMELINE_FORCE_TSC=1 asks for a TSC path this
 * machine cannot take (no TSC, or not an invariant one), prints why and exits
 * with TL_TEST_SKIP_EXIT, so the suite's .tsc entry shows as skipped. */
void tl_test_require_clock_path(void);

/* Names the clock path a session with no_tsc = false takes here, and why:
 * "TSC path (clocksource tsc)", "TSC path (TIMELINE_FORCE_TSC=1, clocksource
 * kvm-clock)", "vDSO path (TIMELINE_NO_TSC=1)", "vDSO path (clocksource
 * kvm-clock)". Static storage. */
const char *tl_test_clock_path(void);

/* For a test about the TSC path: skips the running cmocka test, printing the
 * reason (the kernel's clocksource, or TIMELINE_NO_TSC=1), unless sessions
 * take the TSC path here (by themselves or forced). */
void tl_test_skip_unless_tsc(void);

/*
 * A small disk to fill: a tmpfs of `bytes` mounted on a fresh directory
 * under the test temp directory (static storage). A process that may mount
 * (CAP_SYS_ADMIN) and cannot fails the test: only one that may not skips
 * it, printing why. Give it back with tl_test_unmount_disk.
 */
const char *tl_test_mount_disk(const char *stem, size_t bytes);

/* Unmounts and removes what tl_test_mount_disk made, if anything. */
void tl_test_unmount_disk(void);

#endif
