#!/bin/sh
# Runs check_devtools.mjs with node, or skips (exit 77) saying why.
# usage: check_devtools.sh [--skip REASON] ENGINE_DIR TIMELINE_CLI WORK_DIR
if [ "$1" = --skip ]; then
	echo "skipped: $2"
	exit 77
fi
if ! command -v node >/dev/null 2>&1; then
	echo "skipped: node is not installed (tools/scripts/install-deps.sh installs it)"
	exit 77
fi
exec node "$(dirname "$0")/check_devtools.mjs" "$@"
