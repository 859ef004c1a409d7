#!/bin/sh
# The sample's headline (examples/data/README.md): replaying
# examples/data/sample-synapse.log with the built-in policies, each of the
# four attackers is denied most of its requests and nobody else is denied
# anything.
#
#   (a) 2001:db8:bad:cafe::/64  rotating addresses on /login
#   (b) @xk7q2vb:example.org    send loop over fresh room and txn IDs
#   (c) 198.51.100.23           unknown-path scanner
#   (d) @mallory:example.org    /keys/claim flood
#
# Checked two ways that must agree:
#   - `--decisions` joined line by line with the log: every `deny` line is a
#     request of an attacker, and each attacker has more denied than allowed
#     requests;
#   - `--json` (valid JSON, checked by json_check): totals equal the
#     decisions' counts, and the top limited clients are exactly the four,
#     each with the count the decisions give.
#
# usage: run_headline.sh MXLIMIT JSON_CHECK SAMPLE_SYNAPSE_LOG
set -u
bin=$1
json_check=$2
log=$3
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bin" replay --decisions "$log" >"$dir/decisions" || fail "--decisions exited $?"
[ "$(wc -l <"$dir/decisions")" -eq "$(wc -l <"$log")" ] ||
  fail "decision count differs from the log's line count"

# Per request line: who (attacker a-d or "-"), the client key the limiter
# would name, and the decision. Synapse's line: "... - REQID - IP - TAG -
# {requester} Processed request: ...". The requester "{a|b}" acts for b.
paste "$dir/decisions" "$log" | awk -F'\t' '
  $1 == "invalid" { next }
  {
    n = split($6, part, / - /)
    ip = part[6]
    user = part[8]
    sub(/}.*/, "", user); sub(/^\{/, "", user); sub(/^.*\|/, "", user)
    who = "-"
    if (ip ~ /^2001:db8:bad:cafe:/) who = "a"
    else if (user == "@xk7q2vb:example.org") who = "b"
    else if (ip == "198.51.100.23") who = "c"
    else if (user == "@mallory:example.org") who = "d"
    print who "\t" $1 "\t" ip "\t" user
  }' >"$dir/joined"
[ -s "$dir/joined" ] || fail "no request lines joined"

bystanders=$(awk -F'\t' '$1 == "-" && $2 == "deny"' "$dir/joined" | wc -l)
if [ "$bystanders" -ne 0 ]; then
  awk -F'\t' '$1 == "-" && $2 == "deny"' "$dir/joined" | head -5
  fail "$bystanders requests of ordinary users or addresses denied"
fi
for who in a b c d; do
  set -- $(awk -F'\t' -v w="$who" '
    $1 == w { total++; if ($2 == "deny") denied++ }
    END { print total + 0, denied + 0 }' "$dir/joined")
  total=$1 denied=$2
  [ "$total" -gt 0 ] || fail "attacker ($who): no requests found in the log"
  [ $((2 * denied)) -gt "$total" ] ||
    fail "attacker ($who): only $denied of $total requests denied"
  echo "attacker ($who): $denied of $total requests denied"
  echo "$denied" >"$dir/denied_$who"
done

"$bin" replay --json "$log" >"$dir/summary.json" || fail "--json exited $?"
"$json_check" "$dir/summary.json" >/dev/null || fail "--json is not valid JSON"
field() { "$json_check" "$dir/summary.json" "$1"; }
requests=$(awk -F'\t' '$1 != "invalid"' "$dir/decisions" | wc -l)
denied=$(awk -F'\t' '$1 == "deny"' "$dir/decisions" | wc -l)
invalid=$(awk -F'\t' '$1 == "invalid"' "$dir/decisions" | wc -l)
[ "$(field requests)" -eq "$requests" ] || fail "json requests != decisions"
[ "$(field denied)" -eq "$denied" ] || fail "json denied != decisions"
[ "$(field invalid_lines)" -eq "$invalid" ] || fail "json invalid != decisions"
[ "$(field lines)" -eq "$(wc -l <"$log")" ] || fail "json lines != log lines"

field 'top_limited_clients[].key' >"$dir/top_keys"
field 'top_limited_clients[].count' >"$dir/top_counts"
paste "$dir/top_keys" "$dir/top_counts" | sort >"$dir/top"
printf '%s\t%s\n' \
  "2001:db8:bad:cafe::/64" "$(cat "$dir/denied_a")" \
  "@xk7q2vb:example.org" "$(cat "$dir/denied_b")" \
  "198.51.100.23" "$(cat "$dir/denied_c")" \
  "@mallory:example.org" "$(cat "$dir/denied_d")" | sort >"$dir/expected_top"
diff -u "$dir/expected_top" "$dir/top" ||
  fail "top limited clients are not exactly the four attackers"
echo "ok: $denied of $requests requests denied, all of them attackers'"
