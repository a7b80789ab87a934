#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what is missing, then
#   1. MPICH, release: builds everything, runs every test (unit, MPI, end-to-end);
#   2. lint: clang-tidy with .clang-tidy over runtime/, mpi_transport/, ucx_transport/ and
#      hdf5_vol/ (scripts/lint.sh, about 10 CPU-minutes), every finding an error; it runs in
#      the idle scheduling class beside step 1's tests, on the cores they leave idle;
#   3. MPICH, ASan + UBSan: builds and runs every test again under the sanitizers;
#   4. MPICH, ThreadSanitizer: builds what the threaded unit tests and the MPI tests need and
#      runs them (label "threads"), any data race failing the test;
#   5. Open MPI: builds and runs the MPI tests whose paths depend on the MPI library (its
#      launcher, MPI_Init and MPI_Finalize under the preload and under HDF5, mpi4py, Slurm, the
#      MPI transport), so neither MPI rots.
# Usage: scripts/test.sh [--quick]   (--quick: step 1 only)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[[ ${1:-} == --quick ]] && quick=1

started=$SECONDS
timing() { printf 'test.sh: %-28s %4d s (%d min in all)\n' "$1" "$2" $(((SECONDS - started) / 60)); }
t=$SECONDS
# h5py for MPICH only: the Open MPI stage runs no h5py test (h5py's paths do not depend on the
# MPI below it; HDF5's own MPI calls are tested there through the VOL connector's tests).
scripts/setup.sh --h5py mpich
timing setup $((SECONDS - t))

step() { printf '\n==== %s ====\n' "$*"; }
build_preset() {
  local preset=$1 t=$SECONDS
  step "configure + build: $preset"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset"
  timing "build $preset" $((SECONDS - t))
}
# Returns ctest's status (set -e does not apply inside a function called from `if`).
test_preset() {
  local preset=$1 t=$SECONDS rc=0
  step "test: $preset"
  ctest --preset "$preset" || rc=$?
  timing "tests $preset" $((SECONDS - t))
  return "$rc"
}
run_preset() {
  build_preset "$1"
  test_preset "$1"
}

build_preset release
if [[ $quick -eq 1 ]]; then
  test_preset release
else
  # The end-to-end tests leave about a fifth of the two cores idle (Python start-up, launchers,
  # the shaped PFS's delays; 1.56 cores busy on average). Lint runs beside them in the idle
  # scheduling class (SCHED_IDLE: it runs when nothing else would), and its output is printed
  # once the tests have passed.
  lint_log=$(mktemp)
  t=$SECONDS
  # Its own process group (setsid), so that a failure stops every clang-tidy it started.
  setsid chrt --idle 0 scripts/lint.sh >"$lint_log" 2>&1 &
  lint_pid=$!
  if ! test_preset release; then
    kill -- -"$lint_pid" 2>/dev/null || true
    wait "$lint_pid" 2>/dev/null || true
    rm -f "$lint_log"
    exit 1
  fi
  step "lint: clang-tidy (started with the release tests)"
  lint_rc=0
  wait "$lint_pid" || lint_rc=$?
  cat "$lint_log"
  rm -f "$lint_log"
  timing "lint (after the tests)" $((SECONDS - t))
  [[ $lint_rc -eq 0 ]] || exit "$lint_rc"
  run_preset asan
  run_preset tsan
  run_preset openmpi
fi
step "all tests passed"
