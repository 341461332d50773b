#!/bin/sh
# The CLI of a cross build, for the suites that start it through sh: the
# kernel cannot run a foreign executable by itself (without binfmt_misc),
# so this starts it under the emulator that runs the suites. ctest sets
# TL_TEST_EMULATOR (the emulator and its options, separated by blanks) and
# TL_TEST_EMULATED_CLI (the CLI's path).
# shellcheck disable=SC2086 # the emulator's options are split on purpose
exec $TL_TEST_EMULATOR "$TL_TEST_EMULATED_CLI" "$@"
