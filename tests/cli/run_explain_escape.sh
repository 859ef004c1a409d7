#!/bin/sh
# `mxlimit explain` with a target and a --user holding a newline, ESC and
# U+0085 (UTF-8 C2 85): standard output must equal GOLDEN, where those bytes
# are escaped (\n, \x1b, \xc2\x85), and the --user is refused (exit 2) with
# its bytes escaped too.
#
# usage: run_explain_escape.sh MXLIMIT GOLDEN
set -u
bin=$1
golden=$2
out=$(mktemp) || exit 1
err=$(mktemp) || exit 1
trap 'rm -f "$out" "$err"' EXIT
target=$(printf '/_matrix/client/v3/sync\nroute:    forged\033[2J\302\205x')
status=0

"$bin" explain GET "$target" >"$out" 2>"$err"
code=$?
if [ "$code" -ne 0 ]; then
  echo "FAIL: exit code $code, expected 0"
  cat "$err"
  status=1
fi
if [ -n "${MXLIMIT_UPDATE_GOLDEN:-}" ]; then cp "$out" "$golden"; fi
if ! diff -u "$golden" "$out"; then
  echo "FAIL: standard output differs from $golden"
  status=1
fi
# Belt and braces: no raw ESC, NEL or C1 byte anywhere in the output.
if LC_ALL=C grep -q "$(printf '[\033\302\205]')" "$out"; then
  echo "FAIL: a raw control byte reached standard output"
  status=1
fi

user=$(printf '@a\nb\033:example.org\302\205')
"$bin" explain --user "$user" GET /_matrix/client/v3/sync >"$out" 2>"$err"
code=$?
if [ "$code" -ne 2 ]; then
  echo "FAIL: a bad --user: exit code $code, expected 2"
  status=1
fi
if [ "$(wc -l <"$err")" -ne 1 ] ||
   LC_ALL=C grep -q "$(printf '[\033\302\205]')" "$err"; then
  echo "FAIL: a bad --user must give one escaped line, got:"
  cat "$err"
  status=1
fi
exit $status
