#!/usr/bin/env bash
# h5dump and h5ls print the same thing, and fail the same way, with and without the larder
# connector (HDF5_PLUGIN_PATH + HDF5_VOL_CONNECTOR), on the file zoo and a DLIO-style file;
# the connector really reads through Larder (its stats file shows cached reads); a bad
# HDF5_VOL_CONNECTOR info string fails HDF5's initialisation with a clear message.
#
# usage: tools_compare.sh HDF5_BIN_DIR PLUGIN_DIR MAKE_TEST_FILES
set -uo pipefail
h5bin=$1
plugin_dir=$2
maker=$3

work=$(mktemp -d "${TMPDIR:-/tmp}/larder-vol-tools.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
"$maker" "$work" || { echo "FAIL: could not write the test files"; exit 1; }
printf 'this is not an HDF5 file\n%.0s' {1..200} >not_hdf5.txt
head -c 20000 zoo.h5 >truncated.h5

unset HDF5_VOL_CONNECTOR HDF5_PLUGIN_PATH LARDER_PREFIX
export LARDER_LOG=error LARDER_CHUNK=4096 LARDER_MEM=64M
readonly connector="larder under_vol=0;under_info={}"
failures=0
runs=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# compare NAME CMD...: stdout, stderr and exit code equal with and without the connector.
compare() {
  local name=$1
  shift
  runs=$((runs + 1))
  "$@" >"native.out" 2>"native.err"
  local native_rc=$?
  HDF5_PLUGIN_PATH=$plugin_dir HDF5_VOL_CONNECTOR=$connector LARDER_STATS=$work/stats.json \
    "$@" >"larder.out" 2>"larder.err"
  local larder_rc=$?
  if [[ $native_rc -ne $larder_rc ]]; then
    fail "$name: exit code $larder_rc with the connector, $native_rc without"
    cat larder.err
  fi
  if ! diff -u native.out larder.out >diff.out; then
    fail "$name: stdout differs"
    head -40 diff.out
  fi
  if ! diff -u native.err larder.err >diff.err; then
    fail "$name: stderr differs"
    head -20 diff.err
  fi
}

# cached NAME: the last run with the connector read through Larder and the PFS at most once
# per chunk.
cached() {
  python3 - "$work/stats.json" "$1" <<'PY' || failures=$((failures + 1))
import json, sys
path, name = sys.argv[1], sys.argv[2]
s = json.load(open(path))
if s["app"]["read_calls"] == 0 or s["pfs"]["read_ops"] == 0:
    sys.exit(f"FAIL: {name}: nothing was read through larder: {s['app']} {s['pfs']}")
# Each PFS read is a miss or a load ahead of the reads (read-ahead, an open's first chunk).
if s["pfs"]["read_ops"] != s["misses"] + s["prefetches"] or s["fallbacks"] != 0:
    sys.exit(f"FAIL: {name}: pfs reads {s['pfs']['read_ops']} != misses {s['misses']}"
             f" + loads ahead {s['prefetches']} (fallbacks {s['fallbacks']})")
PY
  rm -f "$work/stats.json"
}

for args in "zoo.h5" "-p zoo.h5" "zoo_ext.h5" "dlio.h5" "-d /records -s 3,0,0 -c 2,16,24 dlio.h5" \
            "-p -d /numbers/uint64_gzip zoo.h5" "-A zoo.h5" "-R -d /refs zoo.h5"; do
  # shellcheck disable=SC2086
  compare "h5dump $args" "$h5bin/h5dump" $args
  cached "h5dump $args"
done
for args in "-r zoo.h5" "-r -v zoo.h5" "-r --follow-symlinks zoo.h5" "-r -d dlio.h5"; do
  # shellcheck disable=SC2086
  compare "h5ls $args" "$h5bin/h5ls" $args
  cached "h5ls $args"
done
for bad in missing.h5 not_hdf5.txt truncated.h5; do
  compare "h5dump $bad" "$h5bin/h5dump" "$bad"
  compare "h5ls $bad" "$h5bin/h5ls" "$bad"
  rm -f "$work/stats.json"
done

# A bad info string: HDF5 fails its initialisation exactly as for an unknown connector name
# (then carries on with the native connector: HDF5's choice), and our message says what is wrong.
HDF5_VOL_CONNECTOR=no_such_connector "$h5bin/h5ls" zoo.h5 >/dev/null 2>&1
unknown_rc=$?
for info in "under_vol=abc;under_info={}" "under_vol=0;under_info={" "colour=blue" \
            "under_vol=4242;under_info={}"; do
  runs=$((runs + 1))
  HDF5_PLUGIN_PATH=$plugin_dir HDF5_VOL_CONNECTOR="larder $info" LARDER_STATS=$work/stats.json \
    "$h5bin/h5ls" zoo.h5 >bad.out 2>bad.err
  rc=$?
  [[ $rc -eq $unknown_rc ]] || fail "HDF5_VOL_CONNECTOR='larder $info': exit code $rc, $unknown_rc for an unknown connector"
  if ! grep -q "larder vol: bad larder connector info" bad.err ||
     ! grep -q "unable to set default VOL connector" bad.err; then
    fail "HDF5_VOL_CONNECTOR='larder $info': no clear message; stderr was:"
    cat bad.err
  fi
  [[ ! -e $work/stats.json ]] || fail "HDF5_VOL_CONNECTOR='larder $info': the cache was used"
done

echo "$runs runs, $failures failures"
[[ $failures -eq 0 ]]
