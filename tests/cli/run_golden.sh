#!/bin/sh
# Runs the mxlimit binary and checks its exit code and, optionally, its
# standard output against a golden file.
#
# usage: run_golden.sh MXLIMIT EXPECTED_EXIT INPUT GOLDEN [ARG...]
#   INPUT   file fed to standard input, or '-' for none (/dev/null)
#   GOLDEN  expected standard output, or '-' to check the exit code only
set -u
bin=$1
expected_exit=$2
input=$3
golden=$4
shift 4

out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
if [ "$input" = - ]; then input=/dev/null; fi

"$bin" "$@" <"$input" >"$out"
code=$?
status=0
if [ "$code" -ne "$expected_exit" ]; then
  echo "FAIL: exit code $code, expected $expected_exit: mxlimit $*"
  status=1
fi
if [ "$golden" != - ] && ! diff -u "$golden" "$out"; then
  echo "FAIL: standard output differs from $golden"
  status=1
fi
exit $status
