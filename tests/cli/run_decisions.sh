#!/bin/sh
# `mxlimit replay --decisions` prints exactly one line per input line, in
# order, whatever the input holds. The input is examples/data/sample.tsv with
# unparseable lines slipped in at known places; the output must
#   - have as many lines as the input (whose last line has no '\n'),
#   - say `invalid	0	-	-` at exactly the slipped-in line numbers,
#   - match the decision format on every line, and
#   - once the invalid lines are removed, equal the decisions for the clean
#     file (so no line shifted and the bad lines changed nothing),
# reading a file or standard input, with --format tsv or auto.
#
# usage: run_decisions.sh MXLIMIT SAMPLE_TSV
set -u
bin=$1
sample=$2
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# A 70 000-byte line: over the reader's 64 KiB cap.
long=$(head -c 70000 /dev/zero | tr '\0' 'a')
# Insert the bad lines after clean lines 2, 5, 5, 9, 20, 30, 31 and 40;
# print where each lands (1-based) to expected_invalid.
awk -v long="$long" -v dir="$dir" '
  function bad(text) { print text; print NR + (++added) > (dir "/expected_invalid") }
  { sub(/\r$/, "") }
  NR == 12 { printf "%s\r\n", $0; next }   # CRLF is fine: still valid
  { print }
  NR == 2  { bad("") }
  NR == 5  { bad("hello world"); bad("   \t ") }
  NR == 9  { bad("1000\tGET\t/_matrix/client/v3/sync\t198.51.100.7\t-\textra") }
  NR == 20 { bad("12x\tGET\t/_matrix/client/v3/sync\t198.51.100.7\t-") }
  NR == 30 { bad("30000\tGET\t/_matrix/client/v3/sync\t999.1.1.1\t-") }
  NR == 31 { bad("30001\tGET\t/_matrix/client/v3/sync\t198.51.100.7\tbob") }
  NR == 40 { bad("40000\tGET\t/_matrix/client/v3/sync\t198.51.100.7\t" long) }
' "$sample" >"$dir/dirty.tsv"
# The last line without its '\n': still a line.
printf 'garbage at the end' >>"$dir/dirty.tsv"
echo $(( $(wc -l <"$dir/dirty.tsv") + 1 )) >>"$dir/expected_invalid"
in_lines=$(awk 'END { print NR }' "$dir/dirty.tsv")

"$bin" replay --decisions --format tsv "$sample" >"$dir/clean.out" ||
  fail "clean replay exited $?"
[ "$(wc -l <"$dir/clean.out")" -eq "$(wc -l <"$sample")" ] ||
  fail "clean: line count differs from the input's"

check() {  # check LABEL OUTPUT
  out_lines=$(wc -l <"$2")
  [ "$out_lines" -eq "$in_lines" ] ||
    fail "$1: $out_lines decision lines for $in_lines input lines"
  awk -F'\t' '
    NF != 5 { bad = 1 }
    $1 == "invalid" && !($2 == "0" && $3 == "-" && $4 == "-" && $5 == "-") { bad = 1 }
    $1 == "allow" && !($2 == "0" && $3 == "-" && $5 == "-") { bad = 1 }
    $1 == "shadow" && !($2 == "0" && $3 != "-" && $5 != "-") { bad = 1 }
    $1 == "deny" && !(($2 ~ /^[0-9]+$/ || $2 == "never") && $3 != "-" && $5 != "-") { bad = 1 }
    $1 !~ /^(allow|deny|shadow|invalid)$/ { bad = 1 }
    bad { print "bad decision line " NR ": " $0; exit 1 }
  ' "$2" || fail "$1: malformed output"
  awk -F'\t' '$1 == "invalid" { print NR }' "$2" >"$dir/got_invalid"
  diff -u "$dir/expected_invalid" "$dir/got_invalid" ||
    fail "$1: invalid lines at the wrong line numbers"
  grep -v '^invalid' "$2" >"$dir/valid.out"
  diff -u "$dir/clean.out" "$dir/valid.out" ||
    fail "$1: decisions for the valid lines differ from the clean run"
}

"$bin" replay --decisions --format tsv "$dir/dirty.tsv" >"$dir/file.out" ||
  fail "replay FILE exited $?"
check "--format tsv FILE" "$dir/file.out"
"$bin" replay --decisions - <"$dir/dirty.tsv" >"$dir/stdin.out" ||
  fail "replay - exited $?"
check "--format auto, stdin" "$dir/stdin.out"
echo "ok: $in_lines lines in, $in_lines decisions out," \
  "$(wc -l <"$dir/expected_invalid") invalid where expected"
