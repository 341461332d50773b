#!/usr/bin/env python3
"""Checks a Chrome JSON trace written by the timeline exporter.

Usage: check_json.py FILE [options]

Always checked (formats.md sections 3 and 4.3):
  - the bytes are UTF-8 and strict JSON (no NaN/Infinity, no raw control
    characters, no \\uD800-\\uDFFF escapes);
  - the object form with traceEvents, displayTimeUnit "ns" and metadata;
  - every event: known ph, integer pid and tid in [0, 2^32), tid != 0,
    non-empty name; cat on every non-M event; ts and dur with exactly
    three decimals; instants are ph "I" and carry s; counters have one
    numeric arg; async events have id2.local as hex; flows are v1 events
    (s, t, f) with a non-zero hex id and "bp":"e", never flow v2 fields
    (bind_id, flow_in, flow_out), so that no viewer reads a flow twice;
  - metadata events come first, then each thread's events in one block,
    in the order Perfetto sorts them (ts, then E, X by decreasing dur, the
    rest), so that file order and import order agree; then the flow
    events, in ts order, each inside a slice of its thread;
  - B/E balanced per thread, each E repeating its B's name and cat;
    B/E and X intervals properly nested (no partial overlap);
  - every pid has a process_name and every thread a thread_name.

Options:
  --count PH=N         exactly N events with that ph
  --meta KEY=VALUE     metadata[KEY] written as JSON equals VALUE
  --thread-name TID=S  the thread_name of TID is S
  --flows-paired       every flow id has one s, then any t, then one f
Prints one line per failure and exits 1 if anything failed.
"""

import json
import re
import sys
from decimal import Decimal

KNOWN_PH = set("MBEXICbenstf")
HEX_ID = re.compile(r"^0x[0-9a-f]+$")


class Checker:
    def __init__(self, path):
        self.path = path
        self.failures = []

    def fail(self, msg):
        self.failures.append(msg)


def no_surrogate_escapes(text, chk):
    in_string = False
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if not in_string:
            if c == '"':
                in_string = True
            i += 1
            continue
        if c == '"':
            in_string = False
            i += 1
        elif c == "\\":
            if i + 1 < n and text[i + 1] == "u":
                code = int(text[i + 2 : i + 6], 16)
                if 0xD800 <= code <= 0xDFFF:
                    chk.fail("surrogate escape \\u%04x at offset %d" % (code, i))
                i += 6
            else:
                i += 2
        else:
            i += 1


def reject_constant(name):
    raise ValueError("non-standard constant " + name)


def three_decimals(v):
    return isinstance(v, Decimal) and v.as_tuple().exponent == -3


def is_number(v):
    return isinstance(v, (int, Decimal)) and not isinstance(v, bool)


def check_event(chk, i, ev):
    where = "event %d" % i
    if not isinstance(ev, dict):
        chk.fail("%s: not an object" % where)
        return False
    ph = ev.get("ph")
    if ph not in KNOWN_PH:
        chk.fail("%s: unexpected ph %r" % (where, ph))
        return False
    for key in ("pid", "tid"):
        v = ev.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 2**32:
            chk.fail("%s: %s %r is not an integer in [0, 2^32)" % (where, key, v))
            return False
    if ev["tid"] == 0:
        chk.fail("%s: tid 0" % where)
    name = ev.get("name")
    if not isinstance(name, str) or not name:
        chk.fail("%s: missing or empty name" % where)
    if "args" in ev and not isinstance(ev["args"], dict):
        chk.fail("%s: args is not an object" % where)
    if ph == "M":
        if name not in ("process_name", "thread_name"):
            chk.fail("%s: unexpected metadata %r" % (where, name))
        label = ev.get("args", {}).get("name")
        if not isinstance(label, str) or not label:
            chk.fail("%s: metadata without args.name" % where)
        return True
    cat = ev.get("cat")
    if not isinstance(cat, str) or not cat:
        chk.fail("%s (%s %r): missing or empty cat" % (where, ph, name))
    if not three_decimals(ev.get("ts")):
        chk.fail("%s: ts %r does not have exactly three decimals" % (where, ev.get("ts")))
        return False
    if ph == "X":
        dur = ev.get("dur")
        if not three_decimals(dur) or dur < 0:
            chk.fail("%s: X dur %r is not a non-negative value with 3 decimals" % (where, dur))
    elif "dur" in ev:
        chk.fail("%s: dur on a %s event" % (where, ph))
    if ph == "I" and ev.get("s") not in ("t", "p", "g"):
        chk.fail("%s: instant scope %r" % (where, ev.get("s")))
    if ph == "C":
        args = ev.get("args")
        if not isinstance(args, dict) or len(args) != 1 or not all(
            is_number(v) for v in args.values()
        ):
            chk.fail("%s: counter args %r are not exactly one number" % (where, args))
    if ph in "ben":
        id2 = ev.get("id2")
        local = id2.get("local") if isinstance(id2, dict) else None
        if not isinstance(local, str) or not HEX_ID.match(local):
            chk.fail("%s: async event without a hex id2.local (%r)" % (where, id2))
    if ph in "stf":
        flow = ev.get("id")
        if not isinstance(flow, str) or not HEX_ID.match(flow) or int(flow, 16) == 0:
            chk.fail("%s: flow id %r is not non-zero hex" % (where, flow))
        if ev.get("bp") != "e":
            chk.fail("%s: flow event without \"bp\":\"e\"" % where)
    for key in ("bind_id", "flow_out", "flow_in"):
        if key in ev:
            chk.fail("%s: flow v2 field %s" % (where, key))
    if ev.get("args", {}).get("tl_closed_at_snapshot") not in (None, True):
        chk.fail("%s: tl_closed_at_snapshot is not true" % where)
    if "tl_closed_at_snapshot" in ev.get("args", {}) and ph not in "BX":
        chk.fail("%s: tl_closed_at_snapshot on a %s event" % (where, ph))
    return True


def perfetto_key(item):
    """Perfetto's order for equal timestamps once a trace has X events:
    E first, then X by decreasing dur, then the rest in file order."""
    i, ev = item
    ph = ev["ph"]
    if ph == "E":
        return (ev["ts"], 0, 0, i)
    if ph == "X":
        return (ev["ts"], 1, -ev["dur"], i)
    return (ev["ts"], 2, 0, i)


def check_thread(chk, key, events):
    if sorted(events, key=perfetto_key) != events:
        chk.fail("thread %s: events are not in Perfetto's sort order" % (key,))
    stack = []
    intervals = []
    last_ts = None
    for i, ev in events:
        ts = ev["ts"]
        if last_ts is not None and ts < last_ts:
            chk.fail("thread %s: event %d goes back in time (%s < %s)" % (key, i, ts, last_ts))
        last_ts = ts
        ph = ev["ph"]
        if ph == "B":
            stack.append((ev["name"], ev.get("cat"), ts))
        elif ph == "E":
            if not stack:
                chk.fail("thread %s: event %d: E %r without an open B" % (key, i, ev["name"]))
                continue
            name, cat, start = stack.pop()
            if ev.get("name") != name or ev.get("cat") != cat:
                chk.fail(
                    "thread %s: event %d: E (%r, %r) does not match B (%r, %r)"
                    % (key, i, ev.get("name"), ev.get("cat"), name, cat)
                )
            intervals.append((start, ts, name))
        elif ph == "X":
            intervals.append((ts, ts + ev["dur"], ev["name"]))
    for name, _, _ in stack:
        chk.fail("thread %s: B %r never ended" % (key, name))
    open_ends = []
    for start, end, name in sorted(intervals, key=lambda x: (x[0], -x[1])):
        while open_ends and open_ends[-1][0] <= start:
            open_ends.pop()
        if open_ends and end > open_ends[-1][0]:
            chk.fail(
                "thread %s: slice %r [%s, %s] overlaps %r without nesting"
                % (key, name, start, end, open_ends[-1][1])
            )
        open_ends.append((end, name))


def check_flow_events(chk, flow_events, threads):
    """Flow events come in ts order, each inside a slice of its thread."""
    last_ts = None
    for i, ev in flow_events:
        ts = ev["ts"]
        if last_ts is not None and ts < last_ts:
            chk.fail("event %d: flow event goes back in time (%s < %s)" % (i, ts, last_ts))
        last_ts = ts
        starts = []
        enclosed = False
        for _, other in threads.get((ev["pid"], ev["tid"]), []):
            if other["ph"] == "B":
                starts.append(other["ts"])
            elif other["ph"] == "E" and starts:
                enclosed = enclosed or starts.pop() <= ts <= other["ts"]
            elif other["ph"] == "X":
                enclosed = enclosed or other["ts"] <= ts <= other["ts"] + other["dur"]
        if not enclosed:
            chk.fail("event %d: flow event at %s is inside no slice of its thread" % (i, ts))


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    chk = Checker(argv[1])
    counts = {}
    metas = {}
    thread_names = {}
    flows_paired = False
    args = argv[2:]
    while args:
        opt = args.pop(0)
        if opt == "--flows-paired":
            flows_paired = True
            continue
        if not args:
            print("check_json: %s needs a value" % opt)
            return 2
        key, _, value = args.pop(0).partition("=")
        if opt == "--count":
            counts[key] = int(value)
        elif opt == "--meta":
            metas[key] = value
        elif opt == "--thread-name":
            thread_names[int(key)] = value
        else:
            print("check_json: unknown option %s" % opt)
            return 2

    with open(chk.path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8", errors="strict")
    except UnicodeDecodeError as e:
        print("check_json: %s: not UTF-8: %s" % (chk.path, e))
        return 1
    no_surrogate_escapes(text, chk)
    try:
        doc = json.loads(text, parse_float=Decimal, parse_constant=reject_constant)
    except ValueError as e:
        print("check_json: %s: not strict JSON: %s" % (chk.path, e))
        return 1

    if not isinstance(doc, dict):
        chk.fail("top level is not an object")
        doc = {}
    events = doc.get("traceEvents")
    if not isinstance(events, list):
        chk.fail("traceEvents is not an array")
        events = []
    if doc.get("displayTimeUnit") != "ns":
        chk.fail("displayTimeUnit is %r" % doc.get("displayTimeUnit"))
    metadata = doc.get("metadata")
    if not isinstance(metadata, dict):
        chk.fail("metadata is not an object")
        metadata = {}
    for key in ("recorder", "clock", "snapshot_ns", "boottime_ns", "monotonic_ns",
                "realtime_ns", "export_unmatched_begin", "export_unmatched_end"):
        if key not in metadata:
            chk.fail("metadata has no %s" % key)

    seen_data = False
    process_names = {}
    named_threads = {}
    threads = {}
    thread_order = []
    flow_events = []
    for i, ev in enumerate(events):
        if not check_event(chk, i, ev):
            continue
        key = (ev["pid"], ev["tid"])
        if ev["ph"] == "M":
            if seen_data:
                chk.fail("event %d: metadata event after other events" % i)
            if ev["name"] == "process_name":
                process_names[ev["pid"]] = ev["args"]["name"]
            else:
                named_threads[key] = ev["args"]["name"]
            continue
        seen_data = True
        if ev["ph"] in "stf":
            flow_events.append((i, ev))
            continue
        if flow_events:
            chk.fail("event %d: %s event after the flow events" % (i, ev["ph"]))
        if key not in threads:
            threads[key] = []
            thread_order.append(key)
        elif thread_order[-1] != key:
            chk.fail("event %d: thread %s appears in more than one block" % (i, key))
        threads[key].append((i, ev))

    for key in thread_order:
        check_thread(chk, key, threads[key])
        if key not in named_threads:
            chk.fail("thread %s has no thread_name metadata event" % (key,))
        if key[0] not in process_names:
            chk.fail("pid %d has no process_name metadata event" % key[0])

    check_flow_events(chk, flow_events, threads)

    for ph, want in counts.items():
        got = sum(1 for ev in events if isinstance(ev, dict) and ev.get("ph") == ph)
        if got != want:
            chk.fail("%d %r events, expected %d" % (got, ph, want))
    for key, want in metas.items():
        got = json.dumps(metadata.get(key), default=str)
        if got.strip('"') != want:
            chk.fail("metadata %s is %s, expected %s" % (key, got, want))
    for tid, want in thread_names.items():
        got = [n for (pid, t), n in named_threads.items() if t == tid]
        if got != [want]:
            chk.fail("thread_name of %d is %r, expected %r" % (tid, got, want))
    if flows_paired:
        phases = {}
        for _, ev in flow_events:
            phases[ev.get("id")] = phases.get(ev.get("id"), "") + ev["ph"]
        for flow, seen in sorted(phases.items(), key=lambda x: str(x[0])):
            if not re.fullmatch(r"st*f", seen):
                chk.fail("flow %s has the events %r, not one s, any t, one f" % (flow, seen))

    for msg in chk.failures:
        print("check_json: %s: %s" % (chk.path, msg))
    return 1 if chk.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
