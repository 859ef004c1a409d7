#!/bin/sh
# Issue #30, item 4: a store URL's password is never printed, whatever the
# shape of the URL. Every malformed URL of tests/data/malformed_store_urls.txt
# (each holds the password s3cr3t-PW) goes through every reader: the config
# file's store.url (check-config, mxlimitd), the URL given as the whole
# store: section, mxlimitd --store and mxlimit replay --store. Each run must
# fail and print an error, and neither standard output nor standard error
# may hold "s3cr3t".
#
# usage: run_store_url_secret.sh MXLIMITD MXLIMIT URL_LIST
set -u
daemon=$1
cli=$2
list=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

: >"$tmp/empty.yaml"
echo "0123456789abcdef0123456789" >"$tmp/store.secret"
printf '0 GET /_matrix/client/v3/sync 192.0.2.1 -\n' >"$tmp/log.tsv"

runs=0
check() {  # check WHAT CMD...: CMD must fail, say why, and hide the password
  what=$1; shift
  timeout 10 "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  code=$?
  runs=$((runs + 1))
  [ "$code" -ne 0 ] || fail "$what: accepted ($*)"
  [ "$code" -ne 124 ] || fail "$what: still running after 10 s ($*)"
  [ -s "$tmp/err" ] || fail "$what: no message ($*)"
  if grep -q s3cr3t "$tmp/out" "$tmp/err"; then
    echo "FAIL: $what printed the password:"
    cat "$tmp/out" "$tmp/err"
    exit 1
  fi
}

while IFS= read -r url; do
  case $url in '#'* | '') continue ;; esac
  # YAML single quotes take every byte of these URLs as written.
  printf "store:\n  url: '%s'\n  key_secret: 0123456789abcdef0123\n" "$url" \
    >"$tmp/url.yaml"
  printf "store: '%s'\n" "$url" >"$tmp/section.yaml"
  check "check-config store.url $url" "$cli" check-config "$tmp/url.yaml"
  check "check-config store: $url" "$cli" check-config "$tmp/section.yaml"
  check "mxlimitd --config (store.url $url)" "$daemon" --listen 127.0.0.1:0 \
    --config "$tmp/url.yaml"
  check "mxlimitd --store $url" "$daemon" --listen 127.0.0.1:0 \
    --config "$tmp/empty.yaml" --store "$url" \
    --store-secret-file "$tmp/store.secret"
  check "mxlimitd --store=$url" "$daemon" --listen 127.0.0.1:0 \
    --config "$tmp/empty.yaml" "--store=$url" \
    --store-secret-file "$tmp/store.secret"
  check "replay --store $url" "$cli" replay --format tsv --store "$url" \
    "$tmp/log.tsv"
  check "replay --config (store.url $url)" "$cli" replay --format tsv \
    --config "$tmp/url.yaml" "$tmp/log.tsv"
done <"$list"
[ "$runs" -ge 100 ] || fail "only $runs runs: is $list readable?"
echo "ok: $runs runs"
