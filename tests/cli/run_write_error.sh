#!/bin/sh
# Runs mxlimit with standard output on /dev/full (every write fails with
# ENOSPC) and checks that it exits 1 with one `error writing standard output`
# message on standard error. Skips (77) where /dev/full does not exist.
#
# usage: run_write_error.sh MXLIMIT ARG...
set -u
bin=$1
shift
[ -c /dev/full ] || { echo "no /dev/full: skipped"; exit 77; }
err=$(mktemp) || exit 1
trap 'rm -f "$err"' EXIT
"$bin" "$@" </dev/null >/dev/full 2>"$err"
code=$?
status=0
if [ "$code" -ne 1 ]; then
  echo "FAIL: exit code $code, expected 1: mxlimit $* > /dev/full"
  status=1
fi
if ! grep -q '^mxlimit[^:]*: error writing standard output: ' "$err"; then
  echo "FAIL: no write error message on standard error: mxlimit $*"
  status=1
fi
echo "standard error was:"
cat "$err"
exit $status
