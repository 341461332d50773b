#!/usr/bin/env python3
"""Checks ftrace text written by the timeline exporter.

Usage: check_ftrace.py FILE [options]

Always checked (formats.md sections 1, 2 and 4.2):
  - UTF-8 text starting with "# tracer: nop" and ending with a newline;
  - every event line matches both Perfetto's line pattern (searched) and
    catapult's (anchored), and both read the same tid, tgid, timestamp,
    event name (tracing_mark_write) and payload;
  - the payload is at most 1023 bytes and one of B|P|name, E|P,
    C|P|name|int64, S|P|name|int64, F|P|name|int64, I|P|name,
    N|P|track|name, with P the tgid column, non-empty names without
    trailing spaces;
  - timestamps never decrease; B/E balanced per tid.

Options:
  --count X=N   exactly N payloads of phase X
  --lines N     exactly N event lines
Prints one line per failure and exits 1 if anything failed.
"""

import re
import sys

PERFETTO = re.compile(
    r"-(\d+)\s+\(?\s*(\d+|-+)?\)?\s?\[(\d+)\]\s*([a-zA-Z.]{3}[0-9a-f.]{1,2}\s*)?"
    r"(\d+\.\d+):\s+(\S+):",
    re.ASCII,
)
CATAPULT = re.compile(
    r"^\s*(.+)-(\d+)\s+\(\s*(\d+|-+)\)\s\[(\d+)\]\s+[dX.][Nnp.][Hhs.][0-9a-f.][0-9a-f.]?"
    r"\s+(\d+\.\d+):\s+(\S+):\s(.*)$",
    re.ASCII,
)
INT64 = re.compile(r"^-?\d+$")

FIELDS = {"B": 3, "E": 2, "C": 4, "S": 4, "F": 4, "I": 3, "N": 4}


def check_payload(fail, where, payload, tgid):
    if len(payload.encode("utf-8")) > 1023:
        fail("%s: payload of %d bytes" % (where, len(payload.encode("utf-8"))))
    phase = payload[:1]
    if phase not in FIELDS:
        fail("%s: unexpected payload %r" % (where, payload[:40]))
        return None
    fields = payload.split("|")
    # A B name may contain '|' for Perfetto, but the exporter never writes one.
    if len(fields) != FIELDS[phase]:
        fail("%s: %s payload with %d fields: %r" % (where, phase, len(fields), payload[:80]))
        return None
    if fields[0] != phase:
        fail("%s: phase field %r" % (where, fields[0]))
    if fields[1] != tgid:
        fail("%s: payload pid %s differs from tgid %s" % (where, fields[1], tgid))
    for name in fields[2:3] if phase in "BCSFI" else fields[2:4]:
        if not name or name != name.rstrip(" "):
            fail("%s: empty name or trailing space in %r" % (where, payload[:80]))
        if any(ord(c) < 0x20 for c in name):
            fail("%s: control character in %r" % (where, payload[:80]))
    if phase in "CSF" and not INT64.match(fields[3]):
        fail("%s: %s value %r is not an int64" % (where, phase, fields[3]))
    return fields


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    path = argv[1]
    counts = {}
    want_lines = None
    args = argv[2:]
    while args:
        opt = args.pop(0)
        if not args:
            print("check_ftrace: %s needs a value" % opt)
            return 2
        value = args.pop(0)
        if opt == "--count":
            key, _, n = value.partition("=")
            counts[key] = int(n)
        elif opt == "--lines":
            want_lines = int(value)
        else:
            print("check_ftrace: unknown option %s" % opt)
            return 2

    failures = []
    fail = failures.append
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8", errors="strict")
    except UnicodeDecodeError as e:
        print("check_ftrace: %s: not UTF-8: %s" % (path, e))
        return 1
    if not text.startswith("# tracer: nop\n"):
        fail("does not start with '# tracer: nop'")
    if not text.endswith("\n"):
        fail("does not end with a newline")

    last_ts = None
    open_slices = {}
    seen = {}
    nlines = 0
    for lineno, line in enumerate(text.split("\n")[:-1], 1):
        if line.startswith("#"):
            continue
        where = "line %d" % lineno
        nlines += 1
        pf = PERFETTO.search(line)
        cat = CATAPULT.match(line)
        if not pf:
            fail("%s: Perfetto's pattern does not match: %r" % (where, line))
        if not cat:
            fail("%s: catapult's pattern does not match: %r" % (where, line))
        if not pf or not cat:
            continue
        if (pf.group(1), pf.group(2), pf.group(5), pf.group(6)) != (
            cat.group(2), cat.group(3), cat.group(5), cat.group(6)
        ):
            fail("%s: the two patterns read different fields: %r" % (where, line))
        if pf.group(6) != "tracing_mark_write":
            fail("%s: event %r" % (where, pf.group(6)))
        pf_payload = line[pf.end():].strip()
        if pf_payload != cat.group(7):
            fail("%s: payloads differ: %r vs %r" % (where, pf_payload, cat.group(7)))
        sec, usec = pf.group(5).split(".")
        if len(usec) != 6:
            fail("%s: timestamp %s does not have 6 decimals" % (where, pf.group(5)))
        ts = (int(sec), int(usec))
        if last_ts is not None and ts < last_ts:
            fail("%s: timestamp goes backwards" % where)
        last_ts = ts
        fields = check_payload(fail, where, cat.group(7), cat.group(3))
        if not fields:
            continue
        phase = fields[0]
        seen[phase] = seen.get(phase, 0) + 1
        tid = pf.group(1)
        if phase == "B":
            open_slices.setdefault(tid, []).append(fields[2])
        elif phase == "E":
            if not open_slices.get(tid):
                fail("%s: E without an open B on tid %s" % (where, tid))
            else:
                open_slices[tid].pop()
    for tid, names in sorted(open_slices.items()):
        for name in names:
            fail("tid %s: B %r never ended" % (tid, name))
    for phase, want in counts.items():
        if seen.get(phase, 0) != want:
            fail("%d %s payloads, expected %d" % (seen.get(phase, 0), phase, want))
    if want_lines is not None and nlines != want_lines:
        fail("%d event lines, expected %d" % (nlines, want_lines))

    for msg in failures:
        print("check_ftrace: %s: %s" % (path, msg))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
