#!/bin/sh
# mxlimitd as an operator runs it: --help documents every flag, usage errors
# exit 2, a bad policy file or secret stops the start (exit 1) naming the
# file, SIGHUP reloads (a broken file is refused, logged with FILE:LINE:COL,
# and the old policies keep answering), SIGTERM exits 0.
#
# usage: run_mxlimitd_process.sh MXLIMITD
set -u
bin=$1
tmp=$(mktemp -d) || exit 1
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/err" ] && { echo "stderr:"; cat "$tmp/err"; }; exit 1; }

"$bin" --help >"$tmp/help" || fail "--help exited $?"
for flag in --listen --config --secret-file --store --store-secret-file \
            --trusted-proxy --user-key \
            token-hash whoami= --token-cache --token-ttl --whoami-timeout \
            --appservice-registration --threads --max-connections --version \
            /_mxlimit/auth_request /_mxlimit/forward_auth /_mxlimit/metrics \
            /_mxlimit/health SIGHUP SIGTERM --admin-listen --admin-token-file \
            /_mxlimit/admin/v1/tiers /_mxlimit/admin/v1/reset; do
  grep -q -- "$flag" "$tmp/help" || fail "--help does not mention $flag"
done
"$bin" --version | grep -q '^mxlimitd [0-9]' || fail "--version"

expect_exit() {  # expect_exit CODE ARGS...: runs mxlimitd, checks the code
  code=$1; shift
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  got=$?
  [ "$got" -eq "$code" ] || fail "mxlimitd $* exited $got, expected $code"
}
expect_exit 2 --listen 127.0.0.1:0
grep -q -- "--config is required" "$tmp/err" || fail "no --config message"
expect_exit 2 --config x --listen localhost:80
expect_exit 2 --config x --threads 0
expect_exit 2 --config x --user-key whoami=ftp://x
expect_exit 2 --config x --bogus
# The admin API: both flags or neither; loopback or a unix socket only.
expect_exit 2 --config x --admin-listen unix:/tmp/x.sock
grep -q -- "--admin-listen and --admin-token-file go together" "$tmp/err" ||
  fail "no message for --admin-listen without a token file"
expect_exit 2 --config x --admin-token-file /tmp/x
expect_exit 2 --config x --admin-listen 0.0.0.0:8090 --admin-token-file /tmp/x
grep -q "never served on a routable address" "$tmp/err" ||
  fail "no message for a routable --admin-listen"

printf 'policies:\n  - name: p\n    match: "/x"\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n' >"$tmp/bad.yaml"
expect_exit 1 --listen 127.0.0.1:0 --config "$tmp/bad.yaml"
grep -q "bad.yaml:4:" "$tmp/err" || fail "no FILE:LINE for a bad policy file"
: >"$tmp/ok.yaml"
echo "not hex" >"$tmp/secret"
expect_exit 1 --listen 127.0.0.1:0 --config "$tmp/ok.yaml" --secret-file "$tmp/secret"
grep -q "$tmp/secret" "$tmp/err" || fail "the bad secret file is not named"
echo "short" >"$tmp/admin-token"
expect_exit 1 --listen 127.0.0.1:0 --config "$tmp/ok.yaml" \
  --admin-listen 127.0.0.1:0 --admin-token-file "$tmp/admin-token"
grep -q "admin-token.*at least 16" "$tmp/err" || fail "a short admin token starts"

# The store flags: a malformed URL is a usage error; a store without a key
# secret, a short secret file, or a secret file without a store stop the
# start, each saying which.
expect_exit 2 --config "$tmp/ok.yaml" --store http://127.0.0.1:6379
grep -q "redis://HOST:PORT" "$tmp/err" || fail "no URL shape for a bad --store"
expect_exit 2 --config "$tmp/ok.yaml" --store redis://u:hunter2@h
grep -q "hunter2" "$tmp/err" && fail "a --store password was printed"
expect_exit 1 --listen 127.0.0.1:0 --config "$tmp/ok.yaml" --store redis://127.0.0.1:1/0
grep -q "needs a key secret" "$tmp/err" || fail "no message for --store without a secret"
echo "short" >"$tmp/store.secret"
expect_exit 1 --listen 127.0.0.1:0 --config "$tmp/ok.yaml" --store redis://127.0.0.1:1/0 \
  --store-secret-file "$tmp/store.secret"
grep -q "$tmp/store.secret: holds 5 bytes" "$tmp/err" || fail "the short store secret is not named"
echo "0123456789abcdef0123" >"$tmp/store.secret"
expect_exit 1 --listen 127.0.0.1:0 --config "$tmp/ok.yaml" --store-secret-file "$tmp/store.secret"
grep -q "no store" "$tmp/err" || fail "no message for a store secret without a store"

# A running daemon: one login allowed per minute, then denied.
cat >"$tmp/live.yaml" <<'YAML'
policies:
  - name: test.login
    match: "/_matrix/client/v3/login"
    scope: ip
    rate_limit: {unit: minute, requests_per_unit: 1, burst: 1}
YAML
"$bin" --listen 127.0.0.1:0 --config "$tmp/live.yaml" >"$tmp/out" 2>"$tmp/err" &
pid=$!
i=0
while ! grep -q '^listening ' "$tmp/out" 2>/dev/null; do
  i=$((i + 1)); [ $i -gt 100 ] && fail "no 'listening' line"; sleep 0.05
done
port=$(sed -n 's/^listening 127.0.0.1:\([0-9]*\)$/\1/p' "$tmp/out")
[ -f "$tmp/mxlimitd.secret" ] || fail "no secret created beside the config"

ask() {  # ask: prints the HTTP status of one login decision
  printf 'GET /_mxlimit/forward_auth HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Forwarded-Method: POST\r\nX-Forwarded-Uri: /_matrix/client/v3/login\r\n\r\n' |
    timeout 5 python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(sys.stdin.buffer.read())
data = b""
while True:
    chunk = s.recv(4096)
    if not chunk: break
    data += chunk
print(data.split(b" ")[1].decode())' "$port"
}
[ "$(ask)" = 200 ] || fail "first login not allowed"
[ "$(ask)" = 429 ] || fail "second login not denied"

# A broken file is refused, the old policies stay.
cp "$tmp/live.yaml" "$tmp/live.good"
cp "$tmp/bad.yaml" "$tmp/live.yaml"
kill -HUP "$pid"
i=0
while ! grep -q 'reload refused' "$tmp/err"; do
  i=$((i + 1)); [ $i -gt 100 ] && fail "no 'reload refused' log line"; sleep 0.05
done
grep 'reload refused' "$tmp/err" | grep -q "live.yaml:4:" || fail "refusal without FILE:LINE"
[ "$(ask)" = 429 ] || fail "old policy lost after a refused reload"

# A good file with a bigger budget takes effect.
sed 's/burst: 1/burst: 50/' "$tmp/live.good" >"$tmp/live.yaml"
kill -HUP "$pid"
i=0
while ! grep -q 'msg=reloaded' "$tmp/err"; do
  i=$((i + 1)); [ $i -gt 100 ] && fail "no 'reloaded' log line"; sleep 0.05
done
[ "$(ask)" = 200 ] || fail "the reloaded budget is not in force"

kill -TERM "$pid"
wait "$pid"
code=$?
pid=
[ "$code" -eq 0 ] || fail "SIGTERM: exit $code, expected 0"
grep -q 'msg=stopped' "$tmp/err" || fail "no 'stopped' log line"
echo "ok"
