#!/usr/bin/env bash
# ctest driver for the Rust binding (bindings/rust): `cargo test --offline`
# against the libmxlimit_c.so of this build, found through the build tree's
# mxlimit-c.pc as an installed one would be. Cargo's output goes to the build
# directory; the crate has no dependencies, so nothing is downloaded. Exits 77
# (ctest: skipped) only when there is no cargo at all; scripts/bootstrap
# installs Debian's. With MXLIMIT_REQUIRE_BINDING_TOOLCHAINS=1 (.ci/run) a
# missing cargo fails instead.
#   run_rust_tests.sh CRATE_DIR WORK_DIR PKG_CONFIG_DIR LIB_DIR
set -euo pipefail
crate=$1 work=$2 pc_dir=$3 lib_dir=$4
if ! command -v cargo >/dev/null 2>&1; then
  # CI has bootstrapped: a missing toolchain there is a failure, not a skip.
  if [[ ${MXLIMIT_REQUIRE_BINDING_TOOLCHAINS:-0} == 1 ]]; then
    echo "cargo not found, and MXLIMIT_REQUIRE_BINDING_TOOLCHAINS=1" >&2
    exit 1
  fi
  echo "cargo not found: Rust binding test skipped (scripts/bootstrap installs it)"
  exit 77
fi
export CARGO_TARGET_DIR=$work/cargo-target
export PKG_CONFIG_PATH=$pc_dir
export LD_LIBRARY_PATH=$lib_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cd "$crate"
cargo --version
# --locked: Cargo.lock is committed and must not change; --nocapture shows
# the per-call cost the tests print.
exec cargo test --offline --locked -- --nocapture
