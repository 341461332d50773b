/*
 * looper-libuv: the looper tracer on a real libuv loop.
 *
 * uv_check runs right after the loop wakes from polling and uv_prepare right
 * before it polls again, so the time between a check and the next prepare
 * is the loop's work (timers, idle, check and close callbacks) and the time
 * between a prepare and the next check is the wait. Each timer callback is
 * also a nested, named dispatch. I/O callbacks run inside the poll phase:
 * wrap them in tl_looper_dispatch_begin/_end too when you have them.
 *
 * A timer ticks every 10 ms doing little; once, a handler blocks for
 * 500 ms: lag (100 ms), slow dispatch (100 ms) and ANR (300 ms) reports
 * follow, and the ANR dump lands in the directory given (default ".").
 * Exits 0 when all three kinds were reported.
 *
 * Usage: looper-libuv [DUMP_DIR]
 */
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include <uv.h>

#include <timeline/looper.h>
#include <timeline/trace_event.h>

static tl_looper *loop_tracer;
static _Atomic int lag_reports, anr_reports, slow_reports;

static void on_report(const tl_looper_report *r, void *user)
{
	(void)user;
	switch (r->kind) {
	case TL_LOOPER_REPORT_LAG:
		atomic_fetch_add(&lag_reports, 1);
		break;
	case TL_LOOPER_REPORT_ANR:
		atomic_fetch_add(&anr_reports, 1);
		if (r->dump_path)
			fprintf(stderr, "looper-libuv: ANR dump %s, report %s\n", r->dump_path,
			        r->report_path ? r->report_path : "(none)");
		break;
	case TL_LOOPER_REPORT_SLOW:
		atomic_fetch_add(&slow_reports, 1);
		fprintf(stderr, "looper-libuv: slow dispatch, stack key %s\n%s", r->stack_key,
		        r->tree_text);
		break;
	}
	fprintf(stderr, "looper-libuv: %s", r->json);
}

/* ---- the hooks ------------------------------------------------------------ */

static void on_check(uv_check_t *handle)
{
	(void)handle;
	tl_looper_idle_end(loop_tracer);
	tl_looper_dispatch_begin(loop_tracer, "uv loop iteration");
}

static void on_prepare(uv_prepare_t *handle)
{
	(void)handle;
	tl_looper_dispatch_end(loop_tracer);
	tl_looper_idle_begin(loop_tracer);
}

/* ---- the work ------------------------------------------------------------- */

static void busy_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

static void on_tick(uv_timer_t *timer)
{
	(void)timer;
	tl_looper_dispatch_begin(loop_tracer, "tick");
	TL_TRACE_EVENT0("example", "update state");
	tl_looper_dispatch_end(loop_tracer);
}

static void on_block(uv_timer_t *timer)
{
	(void)timer;
	tl_looper_dispatch_begin(loop_tracer, "blocking handler");
	{
		TL_TRACE_EVENT0("example", "parse config");
		busy_ms(50);
	}
	{
		TL_TRACE_EVENT0("example", "synchronous disk read");
		busy_ms(450);
	}
	tl_looper_dispatch_end(loop_tracer);
}

static void on_stop(uv_timer_t *timer)
{
	uv_stop(timer->loop);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";
	if (tl_init(NULL) != 0)
		return 1;
	tl_looper_options opts;
	tl_looper_options_init(&opts);
	opts.name = "libuv main loop";
	opts.lag_threshold_ms = 100;
	opts.anr_timeout_ms = 300;
	opts.slow_dispatch_ms = 100;
	opts.dump_directory = dir;
	opts.on_report = on_report;
	loop_tracer = tl_looper_create(&opts);
	if (!loop_tracer)
		return 1;

	uv_loop_t *loop = uv_default_loop();
	uv_check_t check;
	uv_prepare_t prepare;
	uv_timer_t tick, block, stop;
	uv_check_init(loop, &check);
	uv_check_start(&check, on_check);
	uv_prepare_init(loop, &prepare);
	uv_prepare_start(&prepare, on_prepare);
	uv_timer_init(loop, &tick);
	uv_timer_start(&tick, on_tick, 10, 10);
	uv_timer_init(loop, &block);
	uv_timer_start(&block, on_block, 200, 0);
	uv_timer_init(loop, &stop);
	uv_timer_start(&stop, on_stop, 1000, 0);

	tl_looper_dispatch_begin(loop_tracer, "uv loop start"); /* closed by the first prepare */
	uv_run(loop, UV_RUN_DEFAULT);
	tl_looper_idle_end(loop_tracer);

	uv_close((uv_handle_t *)&check, NULL);
	uv_close((uv_handle_t *)&prepare, NULL);
	uv_close((uv_handle_t *)&tick, NULL);
	uv_close((uv_handle_t *)&block, NULL);
	uv_close((uv_handle_t *)&stop, NULL);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_loop_close(loop);

	tl_looper_stats stats = {.struct_size = sizeof stats};
	tl_looper_stats_get(loop_tracer, &stats);
	fprintf(stderr, "looper-libuv: %llu dispatches; %d lag, %d slow, %d ANR reports\n",
	        (unsigned long long)stats.dispatches, atomic_load(&lag_reports),
	        atomic_load(&slow_reports), atomic_load(&anr_reports));
	tl_looper_destroy(loop_tracer);
	tl_shutdown();
	return lag_reports && slow_reports && anr_reports ? 0 : 1;
}
