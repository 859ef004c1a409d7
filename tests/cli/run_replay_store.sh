#!/bin/sh
# `mxlimit replay --store URL` against a redis-server of its own (on a free
# loopback port, no persistence, stopped by its PID): the bundled Synapse
# log's decisions are those of a replay without a store, line for line, and
# the store holds the buckets (hashed keys, never a user ID). Exits 77
# (ctest: skipped) when redis-server is not installed.
#
# usage: run_replay_store.sh MXLIMIT SAMPLE_LOG
set -u
bin=$1
sample=$2
command -v redis-server >/dev/null 2>&1 || {
  # .ci/run requires it: a failure there, a skip elsewhere.
  [ -n "${MXLIMIT_REQUIRE_REDIS:-}" ] && { echo "FAIL: MXLIMIT_REQUIRE_REDIS is set and redis-server is not installed"; exit 1; }
  echo "SKIP: redis-server is not installed (scripts/bootstrap installs it)"
  exit 77
}
dir=$(mktemp -d) || exit 1
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
  --dir "$dir" --logfile "$dir/redis.log" &
pid=$!
i=0
until redis-cli -p "$port" ping >/dev/null 2>&1; do
  i=$((i + 1))
  [ $i -gt 200 ] && fail "redis-server did not start"
  sleep 0.05
done

"$bin" replay --decisions "$sample" >"$dir/local.out" 2>"$dir/local.err" ||
  fail "replay without a store: $(cat "$dir/local.err")"
"$bin" replay --decisions --store "redis://127.0.0.1:$port/0" "$sample" \
  >"$dir/store.out" 2>"$dir/store.err" ||
  fail "replay --store: $(cat "$dir/store.err")"
cmp -s "$dir/local.out" "$dir/store.out" ||
  fail "decisions differ: $(diff "$dir/local.out" "$dir/store.out" | head -5)"
grep -q . "$dir/store.out" || fail "no decisions"
keys=$(redis-cli -p "$port" --scan --pattern 'mxl:1:*' | wc -l)
[ "$keys" -gt 0 ] || fail "the store holds no bucket"
redis-cli -p "$port" --scan | grep -v '^mxl:1:[iuort]:[A-Za-z0-9_-]\{22\}$' &&
  fail "a key that is not a hashed bucket name"
echo "PASS: $(wc -l <"$dir/store.out") decisions identical; $keys buckets in the store"
