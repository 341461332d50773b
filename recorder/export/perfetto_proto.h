/*
 * The field numbers and enum values of Perfetto's trace schema that the
 * Perfetto exporter writes and tools/readers/perfetto_reader.c reads, as
 * perfetto_trace.proto (tests/fixtures/perfetto/) defines them. The tests
 * decode every output against that file with protoc, so a wrong number or
 * type here shows up there.
 */
#ifndef TIMELINE_PERFETTO_PROTO_H
#define TIMELINE_PERFETTO_PROTO_H

/* message Trace */
#define TL_PF_TRACE_PACKET 1 /* repeated TracePacket */

/* message TracePacket */
#define TL_PF_PACKET_CHROME_EVENTS 5     /* ChromeEventBundle */
#define TL_PF_PACKET_CLOCK_SNAPSHOT 6    /* ClockSnapshot */
#define TL_PF_PACKET_TIMESTAMP 8         /* uint64 */
#define TL_PF_PACKET_SEQUENCE_ID 10      /* uint32 trusted_packet_sequence_id */
#define TL_PF_PACKET_TRACK_EVENT 11      /* TrackEvent */
#define TL_PF_PACKET_INTERNED_DATA 12    /* InternedData */
#define TL_PF_PACKET_SEQUENCE_FLAGS 13   /* uint32 */
#define TL_PF_PACKET_DEFAULTS 59         /* TracePacketDefaults */
#define TL_PF_PACKET_TRACK_DESCRIPTOR 60 /* TrackDescriptor */
#define TL_PF_SEQ_INCREMENTAL_STATE_CLEARED 1
#define TL_PF_SEQ_NEEDS_INCREMENTAL_STATE 2

/* message TracePacketDefaults */
#define TL_PF_DEFAULTS_TIMESTAMP_CLOCK_ID 58 /* uint32 */

/* message ClockSnapshot, ClockSnapshot.Clock and enum BuiltinClock */
#define TL_PF_CLOCK_SNAPSHOT_CLOCKS 1  /* repeated Clock */
#define TL_PF_CLOCK_SNAPSHOT_PRIMARY 2 /* BuiltinClock primary_trace_clock */
#define TL_PF_CLOCK_ID 1               /* uint32 */
#define TL_PF_CLOCK_TIMESTAMP 2        /* uint64 */
#define TL_PF_BUILTIN_CLOCK_REALTIME 1
#define TL_PF_BUILTIN_CLOCK_MONOTONIC 3
#define TL_PF_BUILTIN_CLOCK_BOOTTIME 6

/* message TrackDescriptor */
#define TL_PF_TRACK_UUID 1        /* uint64 */
#define TL_PF_TRACK_NAME 2        /* string */
#define TL_PF_TRACK_PROCESS 3     /* ProcessDescriptor */
#define TL_PF_TRACK_THREAD 4      /* ThreadDescriptor */
#define TL_PF_TRACK_PARENT_UUID 5 /* uint64 */
#define TL_PF_TRACK_COUNTER 8     /* CounterDescriptor */

/* message ProcessDescriptor */
#define TL_PF_PROCESS_PID 1  /* int32 */
#define TL_PF_PROCESS_NAME 6 /* string process_name */

/* message ThreadDescriptor */
#define TL_PF_THREAD_PID 1  /* int32 */
#define TL_PF_THREAD_TID 2  /* int64 */
#define TL_PF_THREAD_NAME 5 /* string thread_name */

/* message TrackEvent and enum TrackEvent.Type */
#define TL_PF_EVENT_CATEGORY_IIDS 3         /* repeated uint64 */
#define TL_PF_EVENT_DEBUG_ANNOTATIONS 4     /* repeated DebugAnnotation */
#define TL_PF_EVENT_TYPE 9                  /* Type */
#define TL_PF_EVENT_NAME_IID 10             /* uint64 */
#define TL_PF_EVENT_TRACK_UUID 11           /* uint64 */
#define TL_PF_EVENT_CATEGORIES 22           /* repeated string (read only) */
#define TL_PF_EVENT_NAME 23                 /* string (read only) */
#define TL_PF_EVENT_COUNTER_VALUE 30        /* int64 */
#define TL_PF_EVENT_DOUBLE_COUNTER_VALUE 44 /* double */
#define TL_PF_EVENT_FLOW_IDS 47             /* repeated fixed64 */
#define TL_PF_EVENT_TERMINATING_FLOW_IDS 48 /* repeated fixed64 */
#define TL_PF_TYPE_SLICE_BEGIN 1
#define TL_PF_TYPE_SLICE_END 2
#define TL_PF_TYPE_INSTANT 3
#define TL_PF_TYPE_COUNTER 4

/* message DebugAnnotation */
#define TL_PF_ANNOTATION_NAME_IID 1 /* uint64 */
#define TL_PF_ANNOTATION_BOOL 2     /* bool bool_value */
#define TL_PF_ANNOTATION_UINT 3     /* uint64 uint_value */
#define TL_PF_ANNOTATION_INT 4      /* int64 int_value */
#define TL_PF_ANNOTATION_DOUBLE 5   /* double double_value */
#define TL_PF_ANNOTATION_STRING 6   /* string string_value */
#define TL_PF_ANNOTATION_POINTER 7  /* uint64 pointer_value */
#define TL_PF_ANNOTATION_NAME 10    /* string name (read only) */

/* message InternedData; EventCategory, EventName, DebugAnnotationName */
#define TL_PF_INTERNED_EVENT_CATEGORIES 1
#define TL_PF_INTERNED_EVENT_NAMES 2
#define TL_PF_INTERNED_ANNOTATION_NAMES 3
#define TL_PF_INTERNED_IID 1  /* uint64 */
#define TL_PF_INTERNED_NAME 2 /* string */

/* message ChromeEventBundle and ChromeMetadata */
#define TL_PF_BUNDLE_METADATA 2 /* repeated ChromeMetadata */
#define TL_PF_METADATA_NAME 1   /* string */
#define TL_PF_METADATA_STRING 2 /* string string_value */
#define TL_PF_METADATA_BOOL 3   /* bool bool_value */
#define TL_PF_METADATA_INT 4    /* int64 int_value */

/* The trusted_packet_sequence_id of every packet the exporter writes. */
#define TL_PF_SEQUENCE 1

#endif /* TIMELINE_PERFETTO_PROTO_H */
