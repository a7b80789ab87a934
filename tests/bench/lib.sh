# Shared by larder-bench's script tests (sourced). ctest passes, in the environment:
#   LARDER_BENCH (the tool), MPIEXEC and MPIEXEC_PREFLAGS, PYTHON (with numpy, when present),
#   H5DUMP, BENCH_CONFIGS (apps/larder-bench/configs), PFS_SCRIPT (scripts/pfs/pfs.sh).
set -euo pipefail

SKIP=77
WORK=$(mktemp -d /tmp/lbp-test.XXXXXX)
trap 'rm -rf --one-file-system "$WORK"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit $SKIP; }
note() { echo "-- $*"; }

# bench NPROCS ARGS...: larder-bench under mpiexec, output in $WORK/last.log
bench() {
  local n=$1; shift
  # shellcheck disable=SC2086  # MPIEXEC_PREFLAGS is a word list
  if ! "$MPIEXEC" -n "$n" ${MPIEXEC_PREFLAGS:-} "$LARDER_BENCH" "$@" --no-progress \
      >"$WORK/last.log" 2>&1; then
    cat "$WORK/last.log" >&2
    return 1
  fi
}

# py SCRIPT ARGS...: the Python the tests use (json from the standard library; numpy if needed)
py() { "${PYTHON:-/usr/bin/python3}" "$@"; }

have_numpy() { py -c 'import numpy' 2>/dev/null; }

# Bytes of the files under a directory matching a glob.
bytes_of() { find "$1" -name "$2" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}'; }
