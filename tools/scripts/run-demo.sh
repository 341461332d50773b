#!/usr/bin/env bash
# The main job: install what is missing, build, run `timeline demo`.
# Usage: tools/scripts/run-demo.sh [demo options, e.g. --recorder endless -o trace.json]
set -euo pipefail
cd "$(dirname "$0")/../.."

tools/scripts/install-deps.sh
cmake -S . -B build-demo -DCMAKE_BUILD_TYPE=Release -DTIMELINE_BUILD_TESTS=OFF -DTIMELINE_BUILD_BENCH=OFF >/dev/null
cmake --build build-demo -j"$(nproc)" --target timeline-cli >/dev/null
exec build-demo/tools/timeline demo "$@"
