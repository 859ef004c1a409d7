#!/bin/sh
# `mxlimit replay --json` is one valid JSON document even when the quoted
# invalid lines hold quotes, backslashes, control characters and bytes that
# are not UTF-8; and json_check (which the other tests rely on) accepts valid
# JSON and rejects invalid JSON.
#
# usage: run_json.sh MXLIMIT JSON_CHECK
set -u
bin=$1
json_check=$2
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# json_check itself: each of these must be rejected...
n=0
for doc in '{"a":1,}' '[1,]' '[01]' '{"a" 1}' '{} {}' 'nul' '"\q"' \
  '"\ud800"' '[1.]' '{"a":-}' '' '"abc'; do
  n=$((n + 1))
  printf '%s' "$doc" >"$dir/bad$n.json"
  "$json_check" "$dir/bad$n.json" >/dev/null 2>&1 &&
    fail "json_check accepted invalid JSON: $doc"
done
printf '"a\001b"' >"$dir/ctl.json"
printf '"a\377b"' >"$dir/utf.json"
for f in ctl utf; do
  "$json_check" "$dir/$f.json" >/dev/null 2>&1 &&
    fail "json_check accepted invalid JSON: $f.json"
done
# ... and this accepted, with its values decoded.
printf '{"a": [1, -2.5e3, "\\u00e9\\ud83d\\ude00\\"\\\\", true, null], "b": {"c": 0}}\n' \
  >"$dir/good.json"
"$json_check" "$dir/good.json" 'a[]' b.c >"$dir/good.out" ||
  fail "json_check rejected valid JSON"
printf '1\n-2.5e3\n\303\251\360\237\230\200"\\\ntrue\nnull\n0\n' >"$dir/good.expected"
diff -u "$dir/good.expected" "$dir/good.out" || fail "json_check decoded wrongly"

# A tsv log with odd bytes in its invalid lines.
{
  printf '0\tGET\t/_matrix/client/versions\t192.0.2.1\t-\n'
  printf 'say "hi" \\o/\n'
  printf 'ctl\001here\tand tab\n'
  printf 'bad \377 utf8 \303\n'
  printf '100\tGET\t/_matrix/client/versions\t192.0.2.1\t-\n'
} >"$dir/odd.tsv"
"$bin" replay --json --format tsv "$dir/odd.tsv" >"$dir/odd.json" ||
  fail "replay --json exited $?"
"$json_check" "$dir/odd.json" requests invalid_lines 'invalid_examples[].line' \
  'invalid_examples[].text' >"$dir/odd.out" ||
  fail "replay --json wrote invalid JSON: $(cat "$dir/odd.json")"
# Control characters are quoted as '?' (as in the text summary), invalid
# UTF-8 bytes as U+FFFD, everything else as it was.
printf '2\n3\n2\n3\n4\nsay "hi" \\o/\nctl?here?and tab\nbad \357\277\275 utf8 \357\277\275\n' \
  >"$dir/odd.expected"
diff -u "$dir/odd.expected" "$dir/odd.out" || fail "replay --json fields"

# The top-level fields docs/cli.md lists are all there.
for key in input format config requests allowed denied denied_never \
  shadow_denied exempt invalid_lines invalid_examples policies top_routes \
  top_denied_routes top_limited_clients tables.ip.size tables.ip.capacity \
  tables.ip.admissions tables.ip.evictions tables.user.size lines seconds \
  lines_per_second 'policies[].name' 'policies[].scope' 'policies[].builtin' \
  'policies[].allowed' 'policies[].denied' 'policies[].shadow_denied' \
  'policies[].denied_by_other' \
  'top_routes[].key' 'top_routes[].count' 'top_routes[].max_overcount'; do
  "$json_check" "$dir/odd.json" "$key" >/dev/null || fail "no field $key"
done
# `prefix` only when the lines had one; `format` is the line format either way.
"$json_check" "$dir/odd.json" prefix >/dev/null 2>&1 &&
  fail "a prefix for a log without one"
root=$(dirname "$0")/../..
"$bin" replay --json "$root/tests/cli/data/synapse-small-docker.log" \
  >"$dir/docker.json" || fail "replay --json exited $?"
"$json_check" "$dir/docker.json" format prefix requests >"$dir/docker.out" ||
  fail "replay --json wrote invalid JSON: $(cat "$dir/docker.json")"
printf 'synapse\ndocker\n17\n' | diff -u - "$dir/docker.out" ||
  fail "replay --json format and prefix"
echo "ok"
