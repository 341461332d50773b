#!/bin/sh
# Runs check_devtools.mjs with node, or skips (exit 77) saying why.
# usage: check_devtools.sh [--skip REASON] ENGINE_DIR TIMELINE_CLI WORK_DIR
#
# The engine is the one tools/scripts/install-deps.sh installs in
# ENGINE_DIR/node_modules. When it is not there (a fresh clone on which
# that script has not run), it is installed with npm, at the versions of
# ENGINE_DIR/package-lock.json, into WORK_DIR/engine; when that fails, the
# check fails: a machine with node runs the check or says why it cannot.
if [ "$1" = --skip ]; then
	echo "skipped: $2"
	exit 77
fi
if ! command -v node >/dev/null 2>&1; then
	echo "skipped: node is not installed (tools/scripts/install-deps.sh installs it)"
	exit 77
fi
engine_dir=$1
cli=$2
work_dir=$3
engine=node_modules/@paulirish/trace_engine/package.json
if [ ! -f "$engine_dir/$engine" ]; then
	local_dir=$work_dir/engine
	if [ ! -f "$local_dir/$engine" ]; then
		echo "$engine_dir/$engine is missing: installing the engine in $local_dir"
		if ! command -v npm >/dev/null 2>&1; then
			echo "FAIL: node is installed but npm is not, so Chrome DevTools' trace engine" \
				"cannot be installed (tools/scripts/install-deps.sh installs both)" >&2
			exit 1
		fi
		mkdir -p "$local_dir" &&
			cp "$engine_dir/package.json" "$engine_dir/package-lock.json" "$local_dir/" || exit 1
		if ! (cd "$local_dir" && npm ci --no-audit --no-fund --loglevel=error); then
			echo "FAIL: npm could not install Chrome DevTools' trace engine in $local_dir" \
				"(see npm's message above); run tools/scripts/install-deps.sh" >&2
			exit 1
		fi
	fi
	engine_dir=$local_dir
fi
exec node "$(dirname "$0")/check_devtools.mjs" "$engine_dir" "$cli" "$work_dir"
