#!/usr/bin/env python3
"""Checks that `timeline stats` gives, per slice name, the figures the slices
`timeline slices` prints add up to: count, slices never ended, total, min,
nearest-rank p50/p90/p99 and max.

Usage: check_stats_against_slices.py TIMELINE TRACE...

Each TRACE is read by both commands; one that `slices` refuses is skipped
(stats must refuse it too). Every difference is printed; exits 1 on any.
"""

import csv
import io
import json
import math
import re
import subprocess
import sys

NAME = re.compile(r' name=("(?:[^"\\]|\\.)*")')
DUR = re.compile(r" dur=(-?\d+)")


def run(cli, *args):
    done = subprocess.run([cli, *args], capture_output=True)
    return done.returncode, done.stdout.decode("utf-8", "surrogateescape")


def from_slices(text):
    """{name: (durations of the ended ones, number never ended)}"""
    groups = {}
    for line in text.splitlines():
        name = json.loads(NAME.search(line).group(1))
        m = DUR.search(line)  # instants have none: 0
        dur = int(m.group(1)) if m else 0
        ended, unfinished = groups.setdefault(name, ([], [0]))
        if dur < 0:
            unfinished[0] += 1
        else:
            ended.append(dur)
    return groups


def nearest_rank(sorted_durations, p):
    n = len(sorted_durations)
    return sorted_durations[max(1, math.ceil(p * n / 100)) - 1]


def check(cli, trace):
    """The differences for one trace, as lines."""
    rc, text = run(cli, "slices", trace, "--kind", "slice,instant,async")
    stats_rc, csv_text = run(cli, "stats", trace, "--csv")
    if rc != 0:
        return [] if stats_rc == rc else [f"{trace}: slices exits {rc}, stats {stats_rc}"]
    if stats_rc != 0:
        return [f"{trace}: stats exits {stats_rc}"]
    want = {}
    for name, (ended, unfinished) in from_slices(text).items():
        ended.sort()
        figures = [len(ended), unfinished[0], sum(ended)]
        if ended:
            figures += [ended[0]] + [nearest_rank(ended, p) for p in (50, 90, 99)]
            figures += [ended[-1]]
        want[name] = [str(v) for v in figures]
    got = {}
    for row in csv.DictReader(io.StringIO(csv_text)):
        if row["table"] != "slice":
            continue
        keys = ["count", "unfinished", "total_ns"]
        if row["count"] != "0":
            keys += ["min_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns"]
        got[row["name"]] = [row[k] for k in keys]
    problems = []
    for name in sorted(set(want) | set(got)):
        if want.get(name) != got.get(name):
            problems.append(f"{trace}: {name!r}: slices give {want.get(name)}, "
                            f"stats {got.get(name)}")
    return problems


def main():
    cli, traces = sys.argv[1], sys.argv[2:]
    problems = []
    for trace in traces:
        problems += check(cli, trace)
    for p in problems:
        print(p)
    print(f"{len(traces)} traces, {len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
