#!/usr/bin/env bash
# Checks the core's boundaries: a file under tracers/ or backends/ may
# include, of the core (recorder/), only the interface headers declared for
# it below. Any other recorder/ header is a violation, printed as
# "file:line: includes header".
#
# Usage: check_core_includes.sh [SOURCE_DIR]   (default: the repository)
#
# A violation in either folder fails the check.
# Exits 0 when the check passes, 1 when it fails, 2 on a usage error.
set -uo pipefail

# ---- the declared interfaces: edit these lists -----------------------------
TRACERS_ALLOWED=(recorder/tracer.h recorder/record_view.h recorder/atomic_file.h)
BACKENDS_ALLOWED=(recorder/recorder.h recorder/atrace_format.h recorder/tracer.h recorder/atomic_file.h)
# -------------------------------------------------------------------------------

root=${1:-"$(dirname "$0")/../.."}
if [ ! -d "$root" ]; then
	echo "check_core_includes: $root: not a directory" >&2
	exit 2
fi

# Prints the violations of the files under $root/$1 (any depth, .c and .h):
# their recorder/ includes that are not in the rest of the arguments.
violations() {
	local dir=$1
	shift
	local -A allowed=()
	local header
	for header in "$@"; do
		allowed[$header]=1
	done
	[ -d "$root/$dir" ] || return 0
	local file line text path
	while IFS= read -r -d '' file; do
		while IFS=: read -r line text; do
			# the path between the quotes or brackets, without ./ and ../
			path=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]([^">]*)[">].*/\1/' \
				<<<"$text")
			path=$(sed -E 's#^(\.\.?/)+##' <<<"$path")
			if [[ $path == recorder/* && -z ${allowed[$path]:-} ]]; then
				echo "${file#"$root"/}:$line: includes $path"
			fi
		done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<][^">]*recorder/' "$file")
	done < <(find "$root/$dir" -type f \( -name '*.c' -o -name '*.h' \) -print0 | sort -z)
}

# Prints a part's violations and its verdict; returns 1 when they fail it.
check() { # dir, allowed headers...
	local dir=$1
	shift
	local found count
	found=$(violations "$dir" "$@")
	if [ -z "$found" ]; then
		echo "$dir/: includes of the core: only $*: ok"
		return 0
	fi
	echo "$found"
	count=$(wc -l <<<"$found")
	echo "$dir/: $count include(s) of the core beyond $*: FAILED"
	return 1
}

status=0
check tracers "${TRACERS_ALLOWED[@]}" || status=1
check backends "${BACKENDS_ALLOWED[@]}" || status=1
exit $status
