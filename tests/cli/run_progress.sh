#!/bin/sh
# The replay progress bar: drawn on standard error when it is a terminal and
# the input is a regular file, never otherwise, and never on standard output.
# The terminal is a pseudo-terminal from script(1) (util-linux); without it the
# test is skipped (exit 77).
#
# usage: run_progress.sh MXLIMIT SOURCE_DIR
set -u
bin=$1
root=$2
command -v script >/dev/null 2>&1 || { echo "SKIP: no script(1)"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The bar moves every 65 536 lines: 200 000 lines draw it a few times.
"$root/scripts/gen_load_tsv" 200000 >"$dir/load.tsv" || fail "generator"
# has_bar TYPESCRIPT: a "[###...]  NN%" frame was drawn.
has_bar() { tr '\r' '\n' <"$1" | grep -q '^\[#*  *\] *[0-9]*%$'; }

# stderr on the terminal, input a named file, then stdin redirected from it.
script -qec "'$bin' replay '$dir/load.tsv' >'$dir/out1'" "$dir/ts1" \
  >/dev/null 2>&1 </dev/null || fail "replay FILE under script(1)"
has_bar "$dir/ts1" || fail "no progress bar for a regular file on a terminal"
grep -q '^requests  *200000$' "$dir/out1" || fail "summary missing"
grep -q "$(printf '\r')" "$dir/out1" && fail "progress bar on standard output"
script -qec "'$bin' replay - <'$dir/load.tsv' >'$dir/out2'" "$dir/ts2" \
  >/dev/null 2>&1 </dev/null || fail "replay - under script(1)"
has_bar "$dir/ts2" || fail "no progress bar for stdin from a regular file"

# A pipe is not a regular file: no bar.
script -qec "cat '$dir/load.tsv' | '$bin' replay - >'$dir/out3'" "$dir/ts3" \
  >/dev/null 2>&1 </dev/null || fail "replay from a pipe under script(1)"
has_bar "$dir/ts3" && fail "progress bar for a pipe"
# Standard error not a terminal: no bar.
"$bin" replay "$dir/load.tsv" >/dev/null 2>"$dir/err4" || fail "replay"
[ -s "$dir/err4" ] && fail "standard error not empty when it is a file"
echo "ok"
