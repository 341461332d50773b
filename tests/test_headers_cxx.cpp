// The public headers compile as C++ and the macros record from C++ code.
#include <timeline/timeline.h>
#include <timeline/trace_event.h>

#include <cstdio>
#include <cstring>
#include <string>

static int failures;
#define CHECK(cond)                                                                           \
	do {                                                                                  \
		if (!(cond)) {                                                                \
			std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                                           \
		}                                                                             \
	} while (0)

static void scoped_work(const std::string &what)
{
	TL_TRACE_EVENT1("cxx", "scoped", "what", TL_STR_COPY(what.c_str()));
	TL_TRACE_EVENT_INSTANT2("cxx", "mark", TL_SCOPE_THREAD, "n", 3, "ratio", 0.5);
	TL_TRACE_EVENT_INSTANT4("cxx", "mark4", TL_SCOPE_THREAD, "n", 3, "ratio", 0.5, "s", "str",
	                        "ok", true);
	TL_TRACE_EVENT_COUNTER("cxx", "level", 2.5);
	TL_TRACE_EVENT_COUNTER("cxx", "count", 12);
	TL_TRACE_EVENT_ASYNC_BEGIN1("cxx", "load", 7u, "ok", true);
	TL_TRACE_EVENT_ASYNC_END0("cxx", "load", 7u);
	TL_TRACE_EVENT_FLOW_BEGIN0("cxx", "flow", 1);
	tl_timestamp a = tl_now();
	TL_TRACE_EVENT_COMPLETE("cxx", "complete", a, tl_now());
	TRACE_EVENT0("cxx", "alias");
}

int main()
{
	tl_options o = {};
	o.struct_size = sizeof o;
	CHECK(tl_init(&o) == 0);
	CHECK(TL_TRACE_ENABLED("cxx"));
	scoped_work("from c++");
	tl_stats st = {};
	st.struct_size = sizeof st;
	CHECK(tl_stats_get(&st) == 0);
	// scoped B+E, 2 instants, 2 counters, async b+e, flow, complete, alias B+E
	CHECK(st.events_written == 12);
	CHECK(st.args_dropped == 0);
	tl_shutdown();
	std::printf("%d failed\n", failures);
	return failures ? 1 : 0;
}
