#!/usr/bin/env python3
"""Checks that the library exports exactly the names its version script lists,
and that those are exactly the names the public headers declare TL_API.

Usage: check_exports.py --library libtimeline.so --map libtimeline.map
                        --include DIR [--nm NM] [--cc CC]

Three lists are compared, and every difference is printed:
  - the defined dynamic symbols of the library (nm -D --defined-only), with
    the version node each one carries;
  - the names in the linker version script: every global name spelled out
    (no wildcard), each in one node, every node ending in `local: *;`;
  - the functions and data declared TL_API in include/timeline/*.h
    (internal entry points the macros call, tl_i_*, included).
A name added to a header needs its line in the map, and the other way round.
Exits 1 on any difference.
"""

import argparse
import re
import subprocess
import sys

import public_api


def read_map(path, fail):
    """{name: node} for the global names of a version script."""
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"#[^\n]*", " ", text)
    names = {}
    nodes = re.findall(r"([A-Za-z_][\w.]*)?\s*\{(.*?)\}\s*([A-Za-z_][\w.]*)?\s*;", text, re.S)
    if not nodes:
        fail("%s: no version node" % path)
    for node, body, _parent in nodes:
        node = node or "(anonymous)"
        scope = None
        for item in re.split(r";", body):
            item = item.strip()
            m = re.match(r"(global|local)\s*:\s*(.*)", item, re.S)
            if m:
                scope, item = m.group(1), m.group(2).strip()
            if not item:
                continue
            if scope == "local":
                if item != "*":
                    fail("%s: node %s: local name %r (only `local: *;` is expected)" %
                         (path, node, item))
                continue
            if scope != "global":
                fail("%s: node %s: %r outside global:/local:" % (path, node, item))
                continue
            if re.search(r"[*?\[\]]", item) or item.startswith("extern"):
                fail("%s: node %s: %r is a pattern: list every name" % (path, node, item))
                continue
            if item in names:
                fail("%s: %s listed twice (nodes %s and %s)" % (path, item, names[item], node))
            names[item] = node
        if "local:" not in body.replace(" ", ""):
            fail("%s: node %s has no `local: *;`: unlisted names would be exported" %
                 (path, node))
    return names


def read_library(nm, path):
    """{name: version or None} of the defined dynamic symbols."""
    out = subprocess.run([nm, "-D", "--defined-only", path], check=True, capture_output=True,
                         text=True).stdout
    symbols = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        kind, name = fields[1], fields[2]
        if kind == "A":
            continue  # the version nodes themselves
        version = None
        if "@" in name:
            name, version = re.split(r"@@?", name, maxsplit=1)
        symbols[name] = version
    return symbols


def differences(title, left, right, fail):
    missing = sorted(set(left) - set(right))
    if missing:
        fail("%s (%d): %s" % (title, len(missing), " ".join(missing)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--library", required=True)
    ap.add_argument("--map", required=True)
    ap.add_argument("--include", required=True)
    ap.add_argument("--nm", default="nm")
    ap.add_argument("--cc", default="cc")
    args = ap.parse_args()

    failures = []

    def fail(message):
        failures.append(message)
        print("FAIL: " + message)

    listed = read_map(args.map, fail)
    exported = read_library(args.nm, args.library)
    declared = {d.name: d for d in public_api.declarations(args.cc, args.include) if d.exported}

    differences("exported by %s but not in %s" % (args.library, args.map), exported, listed,
                fail)
    differences("in %s but not exported by %s" % (args.map, args.library), listed, exported,
                fail)
    differences("declared TL_API in include/timeline/ but not in %s" % args.map, declared,
                listed, fail)
    differences("in %s but not declared TL_API in include/timeline/" % args.map, listed,
                declared, fail)
    for name, version in sorted(exported.items()):
        if name in listed and version and version != listed[name]:
            fail("%s has version %s in the library, node %s in the map" %
                 (name, version, listed[name]))
    if failures:
        print("%d problem(s). The exported names, the version script and the TL_API "
              "declarations must list the same names." % len(failures))
        return 1
    print("ok: %d names exported, listed and declared TL_API (%s)" %
          (len(exported), ", ".join(sorted(set(listed.values())))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
