/*
 * The simulated game engine behind `timeline demo`: a 60 Hz main loop and a
 * few worker threads, instrumented only through <timeline/trace_event.h>.
 * The recorder must already be running; the engine does not start or stop
 * it.
 */
#ifndef TIMELINE_DEMO_ENGINE_H
#define TIMELINE_DEMO_ENGINE_H

#include <signal.h>

#define DEMO_ENGINE_WORKERS 3
#define DEMO_ENGINE_FPS 60
/* The last worker's name: past the kernel's 15-byte comm, kept whole only
 * by the recorder's own thread names. */
#define DEMO_ENGINE_LONG_THREAD_NAME "worker-3-with-a-long-name"

struct demo_engine_report {
	double seconds;       /* wall time the main loop ran */
	unsigned frames;      /* frames produced */
	unsigned slow_frames; /* frames over the 60 Hz budget */
	unsigned jobs;        /* jobs handed to the workers */
	unsigned asset_loads; /* asynchronous loads, all finished on return */
	unsigned workers;     /* worker threads that ran */
};

/*
 * Runs the engine on the calling thread, which it names "main", for
 * `seconds` (> 0), or until *stop becomes non-zero (may be NULL; meant to
 * be set from a SIGINT handler). Every job submitted is finished and every
 * worker joined before it returns, so every slice, flow and async load is
 * closed. Fills *report (may be NULL). Returns 0, or -errno when a worker
 * thread could not be started (nothing is left running).
 */
int demo_engine_run(double seconds, const volatile sig_atomic_t *stop,
                    struct demo_engine_report *report);

#endif /* TIMELINE_DEMO_ENGINE_H */
