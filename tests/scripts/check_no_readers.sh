#!/bin/sh
# libtimeline holds no reader of a foreign format: none of the functions and
# data the readers' static library (tools/readers/) defines is in the shared
# library's symbol table, local symbols included (the readers were hidden,
# not exported, when they were compiled into it).
#
# Usage: check_no_readers.sh LIBTIMELINE.so LIBTIMELINE_READERS.a
set -eu
lib=$1
readers=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The readers' external names: their functions and tables.
nm -g --defined-only "$readers" | awk 'NF == 3 { print $3 }' | sort -u >"$tmp/readers"
if [ ! -s "$tmp/readers" ]; then
	echo "$readers defines no symbols: nothing to look for"
	exit 1
fi

# Every name the library defines, without the suffixes the compiler gives
# the parts of a function it splits or clones (.cold, .isra.0, .part.0).
nm --defined-only "$lib" | awk 'NF == 3 { print $3 }' | sed 's/\..*//' | sort -u >"$tmp/lib"
if ! grep -qx tl_snapshot_json "$tmp/lib"; then
	echo "$lib has no symbol table to look in (stripped?)"
	exit 1
fi

comm -12 "$tmp/readers" "$tmp/lib" >"$tmp/both"
if [ -s "$tmp/both" ]; then
	echo "$lib contains $(wc -l <"$tmp/both") symbols of the readers ($readers):"
	sed 's/^/  /' "$tmp/both"
	exit 1
fi
echo "$lib: none of the $(wc -l <"$tmp/readers") symbols of the readers"
