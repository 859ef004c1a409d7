#!/usr/bin/env bash
# ctest driver for the Go binding (bindings/go): `go vet` and `go test` with
# cgo and the default cgocheck, against the libmxlimit_c.so of this build,
# found through the build tree's mxlimit-c.pc (#cgo pkg-config). No module
# beyond the standard library, no network (GOPROXY=off); Go's caches go to the
# build directory. Exits 77 (ctest: skipped) only when there is no go at all;
# scripts/bootstrap installs Debian's golang-go. With
# MXLIMIT_REQUIRE_BINDING_TOOLCHAINS=1 (.ci/run) a missing go fails instead.
#   run_go_tests.sh PACKAGE_DIR WORK_DIR PKG_CONFIG_DIR LIB_DIR
set -euo pipefail
package=$1 work=$2 pc_dir=$3 lib_dir=$4
if ! command -v go >/dev/null 2>&1; then
  # CI has bootstrapped: a missing toolchain there is a failure, not a skip.
  if [[ ${MXLIMIT_REQUIRE_BINDING_TOOLCHAINS:-0} == 1 ]]; then
    echo "go not found, and MXLIMIT_REQUIRE_BINDING_TOOLCHAINS=1" >&2
    exit 1
  fi
  echo "go not found: Go binding test skipped (scripts/bootstrap installs golang-go)"
  exit 77
fi
export GOPATH=$work/go/path GOCACHE=$work/go/cache
export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local CGO_ENABLED=1
export PKG_CONFIG_PATH=$pc_dir
export LD_LIBRARY_PATH=$lib_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset GODEBUG  # the default cgocheck=1: Go pointers passed to C are checked
cd "$package"
go version
go vet ./...
# -v shows the per-call cost the tests log; -count=1: never a cached pass.
exec go test -v -count=1 ./...
