#!/usr/bin/env python3
"""Checks that docs/api.md has an entry for every public function.

Usage: check_api_docs.py --include DIR --doc docs/api.md [--cc CC] [--skip REASON]

The functions are those include/timeline/*.h declare or define (static
inline ones included), except the internal tl_i_* names the macros use.
A function's entry is a heading of docs/api.md that names it in a code span
(### `tl_frame_begin`, or several: ### `tl_frame_begin`, `tl_frame_end`),
followed, before the next heading, by a ```c block with its prototype
(`tl_frame_begin(`). A heading naming a tl_* function or type the headers
do not declare (a stale entry) fails too.
Prints one line per problem and exits 1 if there is any; with --skip,
prints the reason and exits 77.
"""

import argparse
import re
import sys

import public_api

HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
CODE_SPAN = re.compile(r"`([A-Za-z_]\w*)(?:\(\))?`")


def sections(path):
    """Yields (line number, heading names, text of its c blocks)."""
    heading, names, blocks = None, [], []
    fence = None
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        stripped = line.strip()
        if fence is not None:
            if stripped == "```":
                fence = None
            elif fence == "c":
                blocks.append(line)
            continue
        if stripped.startswith("```"):
            fence = stripped[3:].strip()
            continue
        m = HEADING.match(line)
        if m:
            if heading:
                yield heading, names, "".join(blocks)
            heading, names, blocks = number, CODE_SPAN.findall(m.group(2)), []
    if heading:
        yield heading, names, "".join(blocks)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--include", required=True)
    ap.add_argument("--doc", required=True)
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--skip")
    args = ap.parse_args()
    if args.skip:
        print("skipped: " + args.skip)
        return 77

    declared = public_api.declarations(args.cc, args.include)
    public = {d.name: d for d in declared if d.kind != "type" and not d.name.startswith("tl_i_")}
    known = {d.name for d in declared}

    failures = []

    def fail(message):
        failures.append(message)
        print("FAIL: " + message)

    entries = {}
    for line, names, code in sections(args.doc):
        for name in names:
            if name.startswith("tl_") and name not in known:
                fail("%s:%d: heading names `%s`, which no public header declares" %
                     (args.doc, line, name))
            if name in public:
                entries.setdefault(name, []).append((line, code))

    for name, decl in sorted(public.items(), key=lambda item: (item[1].header, item[0])):
        where = entries.get(name)
        if not where:
            fail("%s (%s): no heading of %s names it in a code span" %
                 (name, decl.header, args.doc))
            continue
        pattern = re.compile(r"\b%s\s*%s" % (re.escape(name),
                                            r"\(" if decl.kind == "function" else r"\b"))
        if not any(pattern.search(code) for _, code in where):
            fail("%s:%d: the entry of %s has no ```c block with its prototype" %
                 (args.doc, where[0][0], name))

    if failures:
        print("%d problem(s); each public function needs its entry in %s "
              "(a heading naming it in a code span, then its prototype in a ```c block)" %
              (len(failures), args.doc))
        return 1
    print("ok: %d public functions, each with its entry in %s" % (len(public), args.doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
