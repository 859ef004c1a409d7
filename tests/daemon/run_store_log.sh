#!/bin/sh
# Issue #30, item 15: mxlimitd logs its store going away and coming back,
# one line each (store_watch.h), against a redis-server of its own on a Unix
# socket. Exit 77 (ctest: skipped) when redis-server is not installed.
#
# usage: run_store_log.sh MXLIMITD
set -u
bin=$1
command -v redis-server >/dev/null 2>&1 || {
  # .ci/run requires it: a failure there, a skip elsewhere.
  [ -n "${MXLIMIT_REQUIRE_REDIS:-}" ] && { echo "FAIL: MXLIMIT_REQUIRE_REDIS is set and redis-server is not installed"; exit 1; }
  echo "SKIP: redis-server is not installed (scripts/bootstrap installs it)"
  exit 77
}
tmp=$(mktemp -d) || exit 1
pid=
redis=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null
  [ -n "$redis" ] && kill "$redis" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/err" ] && { echo "stderr:"; cat "$tmp/err"; }; exit 1; }

start_redis() {
  rm -f "$tmp/redis.sock"
  redis-server --port 0 --unixsocket "$tmp/redis.sock" --save '' \
    --appendonly no --dir "$tmp" --logfile "$tmp/redis.log" &
  redis=$!
  i=0
  while [ ! -S "$tmp/redis.sock" ]; do
    i=$((i + 1)); [ $i -gt 200 ] && fail "redis-server did not start"; sleep 0.05
  done
}
stop_redis() { kill "$redis"; wait "$redis" 2>/dev/null; redis=; }
wait_for() {  # wait_for TEXT SECONDS: until the log holds TEXT
  i=0
  while ! grep -q "$1" "$tmp/err"; do
    i=$((i + 1)); [ $i -gt $(($2 * 20)) ] && fail "no '$1' line within $2 s"; sleep 0.05
  done
}

start_redis
cat >"$tmp/live.yaml" <<YAML
store:
  url: unix://$tmp/redis.sock
  key_secret: store-log-test-secret-0123456789
YAML
"$bin" --listen 127.0.0.1:0 --config "$tmp/live.yaml" >"$tmp/out" 2>"$tmp/err" &
pid=$!

i=0
while ! grep -q '^listening ' "$tmp/out" 2>/dev/null; do
  i=$((i + 1)); [ $i -gt 100 ] && fail "no 'listening' line"; sleep 0.05
done
sleep 2
grep -q 'msg="store' "$tmp/err" && fail "a store line while the store is up"

stop_redis
wait_for 'level=warn msg="store unreachable' 5
start_redis
# The line may wait for StoreWatch::kMinGap (10 s) after the previous one.
wait_for 'level=info msg="store reachable again" down_for=' 15
sleep 2
[ "$(grep -c 'msg="store unreachable' "$tmp/err")" -eq 1 ] || fail "not one 'unreachable' line"
[ "$(grep -c 'msg="store reachable again' "$tmp/err")" -eq 1 ] || fail "not one 'reachable again' line"

kill -TERM "$pid"
wait "$pid"
code=$?
pid=
[ "$code" -eq 0 ] || fail "SIGTERM: exit $code"
echo "ok"
