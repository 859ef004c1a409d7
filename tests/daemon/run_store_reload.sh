#!/bin/sh
# Issue #30, item 3: a changed store: section is refused by mxlimitd's
# SIGHUP reload and by `mxlimit check-config --reload-against`, with one
# message (one rule: SharedLimiter::CheckStoreReload). The store is never
# reached (port 1): a store that is down only means local decisions.
#
# usage: run_store_reload.sh MXLIMITD MXLIMIT
set -u
daemon=$1
cli=$2
tmp=$(mktemp -d) || exit 1
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/err" ] && { echo "stderr:"; cat "$tmp/err"; }; exit 1; }

store() {  # store TIMEOUT: a config whose store section has that timeout
  cat <<YAML
store:
  url: redis://mx:hunter2-secret@127.0.0.1:1/0
  key_secret: store-reload-test-secret-0123456789
  timeout: $1
policies:
  - name: login
    match: /_matrix/client/v3/login
    rate_limit: {unit: minute, requests_per_unit: 5}
YAML
}
store 5ms >"$tmp/running.yaml"
store 7ms >"$tmp/next.yaml"

# check-config: refused, exit 1.
"$cli" check-config "$tmp/next.yaml" --reload-against "$tmp/running.yaml" \
  >"$tmp/cli.out" 2>"$tmp/cli.err"
[ $? -eq 1 ] || fail "check-config accepted a store change: $(cat "$tmp/cli.out")"
cli_why=$(sed -n 's/.* would be refused: //p' "$tmp/cli.err")
[ -n "$cli_why" ] || fail "check-config gave no refusal: $(cat "$tmp/cli.err")"

# mxlimitd with the running file: the same change is refused at SIGHUP.
cp "$tmp/running.yaml" "$tmp/live.yaml"
"$daemon" --listen 127.0.0.1:0 --config "$tmp/live.yaml" >"$tmp/out" 2>"$tmp/err" &
pid=$!
i=0
while ! grep -q '^listening ' "$tmp/out" 2>/dev/null; do
  i=$((i + 1)); [ $i -gt 100 ] && fail "no 'listening' line"; sleep 0.05
done
cp "$tmp/next.yaml" "$tmp/live.yaml"
kill -HUP "$pid"
i=0
while ! grep -q 'reload refused' "$tmp/err"; do
  i=$((i + 1)); [ $i -gt 100 ] && fail "the daemon did not refuse the store change"; sleep 0.05
done
daemon_why=$(grep 'reload refused' "$tmp/err" | sed -n 's/.* error="\(.*\)"$/\1/p')
[ "$daemon_why" = "$cli_why" ] ||
  fail "the refusals differ: check-config: '$cli_why'; mxlimitd: '$daemon_why'"
case $cli_why in
  *"store.timeout 5ms in force, 7ms in the new config"*) ;;
  *) fail "the refusal does not name the changed field: $cli_why" ;;
esac
grep -q hunter2 "$tmp/err" "$tmp/out" "$tmp/cli.out" "$tmp/cli.err" &&
  fail "a store password was printed"

# The unchanged file is still accepted by both.
cp "$tmp/running.yaml" "$tmp/live.yaml"
kill -HUP "$pid"
i=0
while ! grep -q 'msg=reloaded' "$tmp/err"; do
  i=$((i + 1)); [ $i -gt 100 ] && fail "the same store section was refused"; sleep 0.05
done
"$cli" check-config "$tmp/running.yaml" --reload-against "$tmp/running.yaml" \
  >"$tmp/cli.out" 2>"$tmp/cli.err" || fail "check-config refused an unchanged store"
kill -TERM "$pid"
wait "$pid"
pid=
echo "ok"
