/*
 * The Perfetto trace reader and its import, fed traces built by hand with
 * the exporter's encoder: unknown fields skipped, malformed input named by
 * its byte, interning per sequence generation, flows as trace_processor
 * binds them, and the format told apart from the others.
 */
#include "support/test_support.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/export/perfetto_proto.h"
#include "recorder/export/proto_write.h"
#include "tools/readers/perfetto_reader.h"
#include "tools/readers/trace_import.h"

#define THREAD_UUID 77
#define UNKNOWN_FIELD 999

/* A trace being built: packets appended to trace as Trace.packet fields. */
typedef struct trace_builder {
	tl_proto trace;
	tl_proto packet;
} trace_builder;

static void start_packet(trace_builder *t, int64_t ts, unsigned flags)
{
	tl_proto_reset(&t->packet);
	if (ts >= 0)
		tl_proto_varint(&t->packet, TL_PF_PACKET_TIMESTAMP, (uint64_t)ts);
	tl_proto_varint(&t->packet, TL_PF_PACKET_SEQUENCE_ID, 1);
	tl_proto_varint(&t->packet, TL_PF_PACKET_SEQUENCE_FLAGS, flags);
}

static void end_packet(trace_builder *t)
{
	assert_int_equal(t->packet.err, 0);
	tl_proto_bytes(&t->trace, TL_PF_TRACE_PACKET, t->packet.buf, t->packet.len);
}

static void thread_descriptor(trace_builder *t)
{
	start_packet(t, -1, TL_PF_SEQ_INCREMENTAL_STATE_CLEARED);
	size_t track = tl_proto_begin(&t->packet, TL_PF_PACKET_TRACK_DESCRIPTOR);
	tl_proto_varint(&t->packet, TL_PF_TRACK_UUID, THREAD_UUID);
	size_t thread = tl_proto_begin(&t->packet, TL_PF_TRACK_THREAD);
	tl_proto_varint(&t->packet, TL_PF_THREAD_PID, 10);
	tl_proto_varint(&t->packet, TL_PF_THREAD_TID, 11);
	tl_proto_string(&t->packet, TL_PF_THREAD_NAME, "worker");
	tl_proto_end(&t->packet, thread);
	tl_proto_end(&t->packet, track);
	end_packet(t);
}

static void intern_name(tl_proto *p, uint64_t iid, const char *name)
{
	size_t data = tl_proto_begin(p, TL_PF_PACKET_INTERNED_DATA);
	size_t entry = tl_proto_begin(p, TL_PF_INTERNED_EVENT_NAMES);
	tl_proto_varint(p, TL_PF_INTERNED_IID, iid);
	tl_proto_string(p, TL_PF_INTERNED_NAME, name);
	tl_proto_end(p, entry);
	tl_proto_end(p, data);
}

/* A TrackEvent on the thread track, named by iid (0: by the name field). */
static size_t open_event(trace_builder *t, int64_t ts, unsigned flags, int type, uint64_t name_iid,
                         const char *name)
{
	start_packet(t, ts, flags);
	size_t event = tl_proto_begin(&t->packet, TL_PF_PACKET_TRACK_EVENT);
	tl_proto_varint(&t->packet, TL_PF_EVENT_TYPE, (uint64_t)type);
	tl_proto_varint(&t->packet, TL_PF_EVENT_TRACK_UUID, THREAD_UUID);
	if (name_iid)
		tl_proto_varint(&t->packet, TL_PF_EVENT_NAME_IID, name_iid);
	else if (name)
		tl_proto_string(&t->packet, TL_PF_EVENT_NAME, name);
	return event;
}

static void close_event(trace_builder *t, size_t event)
{
	tl_proto_end(&t->packet, event);
	end_packet(t);
}

static char *slices_of(trace_builder *t)
{
	const char *path = tl_test_path("reader", ".perfetto-trace");
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(t->trace.buf, 1, t->trace.len, f), t->trace.len);
	assert_int_equal(fclose(f), 0);
	return tl_test_slices(path);
}

static void builder_done(trace_builder *t)
{
	tl_proto_free(&t->trace);
	tl_proto_free(&t->packet);
}

static void assert_contains(const char *text, const char *needle)
{
	if (!strstr(text, needle))
		fail_msg("lacks %s\n--- text ---\n%s", needle, text);
}

static void test_reader_skips_fields_it_does_not_know(void **state)
{
	(void)state;
	trace_builder t = {0};
	thread_descriptor(&t);
	tl_proto_varint(&t.trace, UNKNOWN_FIELD, 5); /* in Trace */
	size_t event = open_event(&t, 1000, TL_PF_SEQ_NEEDS_INCREMENTAL_STATE,
	                          TL_PF_TYPE_SLICE_BEGIN, 0, "outer");
	tl_proto_varint(&t.packet, UNKNOWN_FIELD, 1); /* in TrackEvent */
	tl_proto_fixed64(&t.packet, UNKNOWN_FIELD + 1, 2);
	tl_proto_end(&t.packet, event);
	tl_proto_string(&t.packet, UNKNOWN_FIELD, "in the packet");
	end_packet(&t);
	close_event(&t, open_event(&t, 2000, TL_PF_SEQ_NEEDS_INCREMENTAL_STATE,
	                           TL_PF_TYPE_SLICE_END, 0, NULL));
	char *items = slices_of(&t);
	assert_contains(items, "slice ts=1000 dur=1000 name=\"outer\" tid=11 pid=10 depth=0");
	assert_contains(items, "thread_name=\"worker\"");
	free(items);
	builder_done(&t);
}

static void test_reader_names_the_byte_of_a_cut_packet(void **state)
{
	(void)state;
	trace_builder t = {0};
	thread_descriptor(&t);
	size_t whole = t.trace.len;
	close_event(&t, open_event(&t, 1000, TL_PF_SEQ_NEEDS_INCREMENTAL_STATE, TL_PF_TYPE_INSTANT,
	                           0, "i"));
	tl_perfetto_trace trace;
	tl_read_error err;
	assert_int_equal(tl_perfetto_read((const char *)t.trace.buf, t.trace.len - 2, &trace, &err),
	                 -EINVAL);
	char expect[64];
	snprintf(expect, sizeof expect, "byte %zu: ", whole);
	assert_contains(err.message, expect);
	assert_int_equal(trace.nevents, 0);
	builder_done(&t);
}

static void test_reader_rejects_a_group_wire_type(void **state)
{
	(void)state;
	trace_builder t = {0};
	unsigned char group[] = {(unsigned char)(5 << 3 | 3)}; /* field 5, start group */
	tl_proto_bytes(&t.trace, TL_PF_TRACE_PACKET, group, sizeof group);
	tl_perfetto_trace trace;
	tl_read_error err;
	assert_int_equal(tl_perfetto_read((const char *)t.trace.buf, t.trace.len, &trace, &err),
	                 -EINVAL);
	assert_contains(err.message, "malformed");
	builder_done(&t);
}

static void test_reader_interned_names_end_with_their_generation(void **state)
{
	(void)state;
	trace_builder t = {0};
	thread_descriptor(&t);
	size_t event =
	    open_event(&t, 1000, TL_PF_SEQ_NEEDS_INCREMENTAL_STATE, TL_PF_TYPE_INSTANT, 1, NULL);
	tl_proto_end(&t.packet, event);
	intern_name(&t.packet, 1, "first");
	end_packet(&t);
	/* The state is cleared: iid 1 no longer names anything. */
	close_event(&t, open_event(&t, 2000, TL_PF_SEQ_INCREMENTAL_STATE_CLEARED,
	                           TL_PF_TYPE_INSTANT, 1, NULL));
	char *items = slices_of(&t);
	assert_contains(items, "instant ts=1000 name=\"first\"");
	assert_contains(items, "instant ts=2000 name=\"\"");
	free(items);
	builder_done(&t);
}

static void test_reader_flows_begin_continue_and_end(void **state)
{
	(void)state;
	trace_builder t = {0};
	thread_descriptor(&t);
	static const struct {
		const char *name;
		uint32_t field;
	} steps[] = {{"a", TL_PF_EVENT_FLOW_IDS},
	             {"b", TL_PF_EVENT_FLOW_IDS},
	             {"c", TL_PF_EVENT_TERMINATING_FLOW_IDS},
	             {"d", TL_PF_EVENT_TERMINATING_FLOW_IDS}};
	for (int i = 0; i < 4; i++) {
		size_t event = open_event(&t, 1000 * (i + 1), TL_PF_SEQ_NEEDS_INCREMENTAL_STATE,
		                          TL_PF_TYPE_INSTANT, 0, steps[i].name);
		tl_proto_fixed64(&t.packet, steps[i].field, 42);
		close_event(&t, event);
	}
	char *items = slices_of(&t);
	assert_contains(items, "flow out=\"a\" in=\"b\"\nflow out=\"b\" in=\"c\"\n");
	assert_int_equal(tl_test_count(items, "flow out="), 2);
	free(items);
	builder_done(&t);
}

static void test_sniff_tells_a_trace_from_text_and_json(void **state)
{
	(void)state;
	trace_builder t = {0};
	thread_descriptor(&t);
	assert_true(tl_perfetto_sniff((const char *)t.trace.buf, t.trace.len));
	assert_true(tl_perfetto_sniff((const char *)t.trace.buf, 4)); /* a head cut short */
	static const char text[] = "\n# tracer: nop\n#\n  <idle>-0 [000] 1.000000: print: B|1|x\n";
	assert_false(tl_perfetto_sniff(text, sizeof text - 1));
	assert_false(tl_perfetto_sniff("{\"traceEvents\":[]}", 18));
	assert_false(tl_perfetto_sniff("", 0));
	assert_int_equal(tl_trace_format_sniff((const char *)t.trace.buf, t.trace.len),
	                 TL_TRACE_FORMAT_PERFETTO);
	builder_done(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reader_skips_fields_it_does_not_know),
	    cmocka_unit_test(test_reader_names_the_byte_of_a_cut_packet),
	    cmocka_unit_test(test_reader_rejects_a_group_wire_type),
	    cmocka_unit_test(test_reader_interned_names_end_with_their_generation),
	    cmocka_unit_test(test_reader_flows_begin_continue_and_end),
	    cmocka_unit_test(test_sniff_tells_a_trace_from_text_and_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
