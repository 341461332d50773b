#!/usr/bin/env python3
"""Compiles every ```c block of README.md and docs/*.md against the public
headers, and links the whole programs against the library.

Usage: check_doc_examples.py --source DIR --library libtimeline.so
                             --work DIR [--cc CC] [--skip REASON]

Each block is compiled in one of three ways:
  program  a whole program (it defines main): compiled as it is, with
           -std=c11 -Wall -Wextra -Werror, and linked against the library;
  file     file-scope code (it defines a function, and not main): compiled
           after the public headers and <stdio.h>, <stdlib.h>, <string.h>,
           <errno.h>, <stdint.h>, <inttypes.h>, <stdbool.h>;
  body     anything else (statements, prototypes, type definitions):
           compiled as the body of a function, after the same headers.
file and body use -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror
without the unused-* warnings (a fragment declares what it shows, not what
it uses).

An HTML comment right before the fence (blank lines between allowed) chooses
the way when the guess is wrong, and may give the code the block takes for
granted, compiled before it at file scope (the rest of the first line is a
note for the reader of the markdown):

    <!-- example: body (the application's own functions)
    void handle_request(void);
    -->

Compiler messages name the markdown file and line. Prints one line per
block that fails, with the compiler's output, and exits 1 if any failed;
with --skip, prints the reason and exits 77.
"""

import argparse
import glob
import os
import re
import subprocess
import sys

MODES = ("program", "file", "body")
MARKER = re.compile(r"<!--\s*example:\s*(\w+)([^\n]*)\n?(.*?)-->\s*$", re.S)
DEFINES_MAIN = re.compile(r"^\s*int\s+main\s*\(", re.M)
# a line at column 0 that starts a function definition: name(...) then {
DEFINES_FUNCTION = re.compile(r"^[A-Za-z_][^;=\n]*\)\s*(\n\s*)?\{", re.M)
HEADERS = ("timeline.h", "trace_event.h", "looper.h", "frame.h", "instrument.h")
C_HEADERS = ("errno.h", "inttypes.h", "stdbool.h", "stdint.h", "stdio.h", "stdlib.h",
             "string.h")
STRICT = ["-std=c11", "-Wall", "-Wextra", "-Werror"]
FRAGMENT = STRICT + ["-D_POSIX_C_SOURCE=200809L", "-Wno-unused", "-Wno-unused-parameter"]


class Block:
    def __init__(self, path, line, code, marker, marker_line):
        self.path = path  # relative to the source directory
        self.line = line  # first line of code
        self.code = code
        self.context, self.context_line = "", marker_line
        if marker:
            self.mode = marker.group(1)
            self.context = marker.group(3)
            self.context_line = marker_line + 1
        elif DEFINES_MAIN.search(code):
            self.mode = "program"
        elif DEFINES_FUNCTION.search(code):
            self.mode = "file"
        else:
            self.mode = "body"

    def name(self):
        return "%s:%d (%s)" % (self.path, self.line, self.mode)

    def source(self):
        where = '#line %d "%s"\n'
        if self.mode == "program":
            return where % (self.line, self.path) + self.code
        text = "".join("#include <%s>\n" % h for h in C_HEADERS)
        text += "".join("#include <timeline/%s>\n" % h for h in HEADERS)
        if self.context.strip():
            text += where % (self.context_line, self.path) + self.context + "\n"
        if self.mode == "file":
            return text + where % (self.line, self.path) + self.code
        return (text + "void doc_example(void);\nvoid doc_example(void)\n{\n" +
                where % (self.line, self.path) + self.code + "}\n")


def blocks(source_dir):
    paths = ["README.md"] + sorted(
        os.path.relpath(p, source_dir) for p in glob.glob(os.path.join(source_dir, "docs", "*.md")))
    for path in paths:
        lines = open(os.path.join(source_dir, path), encoding="utf-8").read().split("\n")
        i = 0
        while i < len(lines):
            fence = lines[i].strip()
            if not fence.startswith("```"):
                i += 1
                continue
            end = i + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            if fence == "```c":
                marker, marker_line = None, 0
                j = i - 1
                while j >= 0 and not lines[j].strip():
                    j -= 1
                if j >= 0 and lines[j].rstrip().endswith("-->"):
                    k = j
                    while k >= 0 and "<!--" not in lines[k]:
                        k -= 1
                    comment = "\n".join(lines[k:j + 1]).strip()
                    marker = MARKER.match(comment[comment.index("<!--"):]) if k >= 0 else None
                    marker_line = k + 1
                yield Block(path, i + 2, "\n".join(lines[i + 1:end]) + "\n", marker, marker_line)
            i = end + 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", required=True, help="the source tree")
    ap.add_argument("--library", required=True, help="libtimeline.so")
    ap.add_argument("--work", required=True, help="a directory for the compiled examples")
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--skip")
    args = ap.parse_args()
    if args.skip:
        print("skipped: " + args.skip)
        return 77

    os.makedirs(args.work, exist_ok=True)
    include = os.path.join(args.source, "include")
    failed = checked = 0
    for n, block in enumerate(blocks(args.source)):
        checked += 1
        if block.mode not in MODES:
            print("FAIL: %s: unknown mode %r in the example comment (one of %s)" %
                  (block.name(), block.mode, ", ".join(MODES)))
            failed += 1
            continue
        base = os.path.join(args.work, "example%02d" % n)
        with open(base + ".c", "w", encoding="utf-8") as f:
            f.write(block.source())
        if block.mode == "program":
            cmd = [args.cc] + STRICT + ["-I", include, base + ".c", args.library, "-o", base]
        else:
            cmd = [args.cc] + FRAGMENT + ["-I", include, "-c", base + ".c", "-o", base + ".o"]
        run = subprocess.run(cmd, cwd=args.source, capture_output=True, text=True)
        if run.returncode != 0:
            failed += 1
            print("FAIL: %s: does not %s (%s)" %
                  (block.name(), "compile and link" if block.mode == "program" else "compile",
                   base + ".c"))
            print(run.stdout + run.stderr)
    if failed:
        print("%d of %d C blocks failed. A block that is not a whole program needs what it "
              "uses declared: see check_doc_examples.py for the example comment." %
              (failed, checked))
        return 1
    print("ok: %d C blocks of README.md and docs/*.md compile" % checked)
    return 0


if __name__ == "__main__":
    sys.exit(main())
