#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what is missing, then
#   1. MPICH, release: builds everything, runs every test (unit, MPI, end-to-end);
#   2. lint: clang-tidy with .clang-tidy over runtime/, mpi_transport/, ucx_transport/ and
#      hdf5_vol/ (scripts/lint.sh, about 3 CPU-minutes), every finding an error;
#   3. MPICH, ASan + UBSan: builds and runs every test again under the sanitizers;
#   4. MPICH, ThreadSanitizer: builds what the threaded unit tests and the MPI tests need and
#      runs them (label "threads"), any data race failing the test;
#   5. Open MPI: builds and runs the MPI tests with the other MPI, so neither rots.
# Usage: scripts/test.sh [--quick]   (--quick: step 1 only)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[[ ${1:-} == --quick ]] && quick=1

started=$SECONDS
timing() { printf 'test.sh: %-28s %4d s (%d min in all)\n' "$1" "$2" $(((SECONDS - started) / 60)); }
t=$SECONDS
scripts/setup.sh
timing setup $((SECONDS - t))

step() { printf '\n==== %s ====\n' "$*"; }
run_preset() {
  local preset=$1 t=$SECONDS
  step "configure + build: $preset"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset"
  timing "build $preset" $((SECONDS - t))
  t=$SECONDS
  step "test: $preset"
  ctest --preset "$preset"
  timing "tests $preset" $((SECONDS - t))
}

run_preset release
if [[ $quick -eq 0 ]]; then
  step "lint: clang-tidy"
  t=$SECONDS
  scripts/lint.sh
  timing lint $((SECONDS - t))
  run_preset asan
  run_preset tsan
  run_preset openmpi
fi
step "all tests passed"
