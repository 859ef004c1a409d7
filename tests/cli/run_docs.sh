#!/bin/sh
# docs/cli.md shows real output: in each ```console block, every line
# starting with "$ " is a command and the lines up to the next command or the
# end of the block are its output (standard output and standard error). This
# reruns every command from the source root with the built mxlimit first on
# the PATH and compares, ignoring the `throughput` lines (timing).
#
# usage: run_docs.sh MXLIMIT SOURCE_DIR
set -u
bin=$1
root=$2
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/bin"
ln -s "$bin" "$dir/bin/mxlimit"

awk -v dir="$dir" '
  $0 == "```console" { inside = 1; next }
  inside && $0 == "```" { inside = 0; if (n) close(out); next }
  !inside { next }
  /^\$ / {
    if (n) close(out)
    n++
    cmd = dir "/cmd" n; out = dir "/expected" n
    print substr($0, 3) > cmd; close(cmd)
    printf "" > out
    next
  }
  { print > out }
  END { print n + 0 > (dir "/count") }
' "$root/docs/cli.md"
count=$(cat "$dir/count")
[ "$count" -gt 0 ] || { echo "FAIL: no console examples in docs/cli.md"; exit 1; }

status=0
i=1
while [ "$i" -le "$count" ]; do
  cmd=$(cat "$dir/cmd$i")
  (cd "$root" && PATH="$dir/bin:$PATH" sh -c "$cmd" 2>&1) |
    grep -v '^throughput ' >"$dir/got$i"
  grep -v '^throughput ' "$dir/expected$i" >"$dir/want$i"
  if ! diff -u "$dir/want$i" "$dir/got$i"; then
    echo "FAIL: docs/cli.md is stale for: \$ $cmd"
    status=1
  fi
  i=$((i + 1))
done
[ "$status" -eq 0 ] && echo "ok: $count examples in docs/cli.md are current"
exit $status
