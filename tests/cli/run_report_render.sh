#!/bin/sh
# `mxlimit replay --report` renders in a real browser: headless Chromium
# (Debian's `chromium`) loads the page of the bundled sample from a file and
# screenshots it. Fails on Chromium's exit code, a missing or empty PNG, or a
# run longer than 60 s; Chromium's own noise on standard error (dbus, GPU) is
# shown but not judged. A missing chromium fails the test, naming the package
# (scripts/bootstrap installs it), as the daemon's end-to-end tests do for
# nginx and caddy.
#
# usage: run_report_render.sh MXLIMIT SOURCE_DIR
set -u
bin=$1
root=$2
fail() { echo "FAIL: $*"; exit 1; }
chromium=${MXLIMIT_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$chromium" ] ||
  fail "chromium is not installed, and this test renders the page in it: apt install chromium (scripts/bootstrap does)"
dir=$(mktemp -d "${TMPDIR:-/tmp}/mxlimit-report-render.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT

(cd "$root" && "$bin" replay --report "$dir/report.html" \
  examples/data/sample-synapse.log >/dev/null) || fail "replay --report exited $?"

# A profile of its own, so that nothing is read from or left in $HOME.
HOME=$dir timeout 60 "$chromium" --headless --disable-gpu --no-sandbox \
  --user-data-dir="$dir/profile" --hide-scrollbars \
  --screenshot="$dir/report.png" --window-size=1280,2000 \
  "file://$dir/report.html" >"$dir/chromium.log" 2>&1
code=$?
if [ "$code" -ne 0 ]; then
  cat "$dir/chromium.log"
  [ "$code" -eq 124 ] && fail "chromium did not finish within 60 s"
  fail "chromium exited $code"
fi
[ -s "$dir/report.png" ] || { cat "$dir/chromium.log"; fail "no screenshot"; }
# A PNG signature, and more than a blank page's few kilobytes.
[ "$(head -c 8 "$dir/report.png" | od -An -tx1 | tr -d ' \n')" = \
  "89504e470d0a1a0a" ] || fail "report.png is not a PNG"
size=$(wc -c <"$dir/report.png")
[ "$size" -gt 20000 ] || fail "report.png is only $size bytes: a blank page?"
echo "ok: rendered to a ${size}-byte PNG"
