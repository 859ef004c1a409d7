#!/bin/sh
# Runs the mxlimit binary and checks its exit code and, optionally, its
# standard output and standard error against golden files.
#
# usage: run_golden.sh [--drop PREFIX] [--stderr EXPECTED] [--stderr-prefix P]
#                      MXLIMIT EXPECTED_EXIT INPUT GOLDEN [ARG...]
#   INPUT     file fed to standard input, or '-' for none (/dev/null)
#   GOLDEN    expected standard output; '-' not checked; 'empty' must be empty
#   --drop    drop standard output lines starting with PREFIX before comparing
#             (for lines that vary from run to run, e.g. "throughput ")
#   --stderr  expected standard error: a file, 'empty' or 'nonempty'
#             (default: not checked)
#   --stderr-prefix  every standard error line must start with P, which is
#             removed before comparing with --stderr's file (so one file of
#             loader messages serves every subcommand)
set -u
drop=
stderr_expected=-
stderr_prefix=
while :; do
  case $1 in
    --drop) drop=$2; shift 2 ;;
    --stderr) stderr_expected=$2; shift 2 ;;
    --stderr-prefix) stderr_prefix=$2; shift 2 ;;
    *) break ;;
  esac
done
bin=$1
expected_exit=$2
input=$3
golden=$4
shift 4

out=$(mktemp) || exit 1
err=$(mktemp) || exit 1
trap 'rm -f "$out" "$err"' EXIT
if [ "$input" = - ]; then input=/dev/null; fi

"$bin" "$@" <"$input" >"$out" 2>"$err"
code=$?
status=0
if [ "$code" -ne "$expected_exit" ]; then
  echo "FAIL: exit code $code, expected $expected_exit: mxlimit $*"
  echo "standard error was:"
  cat "$err"
  status=1
fi
if [ -n "$stderr_prefix" ]; then
  unprefixed=$(awk -v p="$stderr_prefix" 'index($0, p) != 1' "$err")
  if [ -n "$unprefixed" ]; then
    echo "FAIL: standard error lines without the prefix '$stderr_prefix':"
    echo "$unprefixed"
    status=1
  fi
  # The prefix is fixed text: strip it by length, not as a pattern.
  awk -v n="${#stderr_prefix}" '{ print substr($0, n + 1) }' "$err" >"$err.kept"
  mv "$err.kept" "$err"
fi
if [ -n "$drop" ]; then
  grep -v "^$drop" "$out" >"$out.kept"
  mv "$out.kept" "$out"
fi
case $golden in
  -) ;;
  empty)
    if [ -s "$out" ]; then
      echo "FAIL: standard output should be empty, got:"
      cat "$out"
      status=1
    fi ;;
  *)
    # MXLIMIT_UPDATE_GOLDEN=1 rewrites the golden file (review the diff).
    if [ -n "${MXLIMIT_UPDATE_GOLDEN:-}" ]; then cp "$out" "$golden"; fi
    if ! diff -u "$golden" "$out"; then
      echo "FAIL: standard output differs from $golden"
      status=1
    fi ;;
esac
case $stderr_expected in
  -) ;;
  empty)
    if [ -s "$err" ]; then
      echo "FAIL: standard error should be empty, got:"
      cat "$err"
      status=1
    fi ;;
  nonempty)
    if [ ! -s "$err" ]; then
      echo "FAIL: standard error is empty; expected a message"
      status=1
    fi ;;
  *)
    if [ -n "${MXLIMIT_UPDATE_GOLDEN:-}" ]; then cp "$err" "$stderr_expected"; fi
    if ! diff -u "$stderr_expected" "$err"; then
      echo "FAIL: standard error differs from $stderr_expected"
      status=1
    fi ;;
esac
exit $status
