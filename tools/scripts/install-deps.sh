#!/usr/bin/env bash
# Installs what building and testing timeline needs on Debian, when missing.
# Run as root (or with sudo available). Safe to run again.
set -euo pipefail

packages=(cmake make gcc g++ pkg-config libcmocka-dev libtracefs-dev libtraceevent-dev
	python3 valgrind clang libclang-rt-14-dev libfuzzer-14-dev libuv1-dev)
# trace-cmd runs the capture docs/systrace.md describes (test_trace_cmd_capture).
packages+=(trace-cmd)
# protoc decodes every Perfetto trace the suites write against Perfetto's
# schema (tests/fixtures/perfetto/); without it those checks skip.
packages+=(protobuf-compiler)
# elfutils' libelf reads the symbol tables that name instrumented functions
# (libdw-dev brings libelf-dev, which is what the build links).
packages+=(libdw-dev)
# uftrace: timeline-bench times `uftrace record` on the loop its
# instrumented calls run (tests/bench/bench_uftrace.c); without it that
# comparison is skipped.
packages+=(uftrace)
# The aarch64 gate: Debian's cross compilers, qemu-user to run the suites,
# and the arm64 libraries from the multiarch archive (libstdc++6:arm64 runs
# the C++ suite; cmake/toolchain-aarch64-linux-gnu.cmake says why the
# arm64 C library, not the cross one, runs them).
packages+=(gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user libcmocka-dev:arm64
	libtracefs-dev:arm64 libtraceevent-dev:arm64 libuv1-dev:arm64 libstdc++6:arm64 libdw-dev:arm64)

# Node.js and npm run Chrome DevTools' trace engine in the DevTools check;
# a machine that has them from elsewhere keeps its own.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)

as_root=()
[ "$(id -u)" -eq 0 ] || as_root=(sudo)

if ! dpkg --print-foreign-architectures | grep -qx arm64; then
	echo "Adding the arm64 architecture to dpkg"
	"${as_root[@]}" dpkg --add-architecture arm64
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
	echo "Installing: ${missing[*]}"
	"${as_root[@]}" apt-get update -qq
	DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null
fi

# Chrome DevTools' trace engine for tests/scripts/check_devtools.mjs, at the
# versions pinned in tests/devtools/package-lock.json, installed in
# tests/devtools/node_modules. Without it that check installs it in the
# build tree, and fails when it cannot (tests/scripts/check_devtools.sh).
devtools=$(cd "$(dirname "$0")/../../tests/devtools" && pwd)
engine_version=$(sed -n 's/.*"@paulirish\/trace_engine": "\(.*\)".*/\1/p' "$devtools/package.json")
installed=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' \
	"$devtools/node_modules/@paulirish/trace_engine/package.json" 2>/dev/null || true)
if [ "$installed" != "$engine_version" ]; then
	echo "Installing @paulirish/trace_engine $engine_version in $devtools"
	if ! (cd "$devtools" && npm ci --no-audit --no-fund --loglevel=error); then
		echo "warning: npm could not install the trace engine: the DevTools check will try again, and fail if it cannot" >&2
	fi
fi
