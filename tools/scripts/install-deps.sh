#!/usr/bin/env bash
# Installs what building and testing timeline needs on Debian, when missing.
# Run as root (or with sudo available). Safe to run again.
set -euo pipefail

packages=(cmake make gcc g++ pkg-config libcmocka-dev libtracefs-dev libtraceevent-dev
	python3 valgrind clang libclang-rt-14-dev libfuzzer-14-dev libuv1-dev)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
	echo "Installing: ${missing[*]}"
	as_root=()
	[ "$(id -u)" -eq 0 ] || as_root=(sudo)
	"${as_root[@]}" apt-get update -qq
	DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null
fi
