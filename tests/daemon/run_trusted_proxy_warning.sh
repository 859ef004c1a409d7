#!/bin/sh
# Issue #30, item 15: `--trusted-proxy 0.0.0.0/0` (or `::/0`, or any /0)
# makes every client's forwarded address believed; mxlimitd still starts
# but says so on standard error before it serves. A real proxy network is
# not warned about.
#
# usage: run_trusted_proxy_warning.sh MXLIMITD
set -u
bin=$1
tmp=$(mktemp -d) || exit 1
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/err" ] && { echo "stderr:"; cat "$tmp/err"; }; exit 1; }
: >"$tmp/ok.yaml"

start() {  # start ARGS...: runs mxlimitd until it listens, then stops it
  # The last run's files go first: the wait below must not find its
  # `listening` line before this run's mxlimitd has truncated them.
  rm -f "$tmp/out" "$tmp/err"
  "$bin" --listen 127.0.0.1:0 --config "$tmp/ok.yaml" "$@" >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  i=0
  while ! grep -q '^listening ' "$tmp/out" 2>/dev/null; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "no 'listening' line ($*)"; sleep 0.05
  done
  kill -TERM "$pid"
  wait "$pid"
  pid=
}

for everything in 0.0.0.0/0 ::/0 10.1.2.3/0 ::ffff:0.0.0.0/96; do
  start --trusted-proxy 10.0.0.0/8 --trusted-proxy "$everything"
  grep 'level=warn' "$tmp/err" | grep -q 'covers every address' ||
    fail "no warning for --trusted-proxy $everything"
  [ "$(grep -c 'covers every address' "$tmp/err")" -eq 1 ] ||
    fail "not exactly one warning for --trusted-proxy $everything"
done
start --trusted-proxy 10.0.0.0/8 --trusted-proxy ::1 --trusted-proxy 0.0.0.0/1
grep -q 'covers every address' "$tmp/err" && fail "a warning for real proxy networks"
echo "ok"
