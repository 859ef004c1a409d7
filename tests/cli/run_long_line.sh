#!/bin/sh
# A 2 MiB line (over the 1 MiB line limit) between two ordinary lines: the
# long line must print the fallback key and keep the output aligned.
set -u
bin=$1
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
{
  echo "GET /_matrix/client/v3/sync"
  printf 'GET /_matrix/client/v3/rooms/'
  head -c 2097152 /dev/zero | tr '\0' 'a'
  echo "/messages"
  printf 'PUT /_matrix/federation/v1/send/1'
} | "$bin" normalize >"$out" || { echo "FAIL: nonzero exit"; exit 1; }
expected='/_matrix/client/v3/sync
<fallback>
/_matrix/federation/v1/send/{txnId}'
if [ "$(cat "$out")" != "$expected" ]; then
  echo "FAIL: got:"
  cat "$out"
  exit 1
fi
