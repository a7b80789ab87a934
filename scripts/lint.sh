#!/usr/bin/env bash
# clang-tidy with the root .clang-tidy over Larder's libraries: runtime/, mpi_transport/,
# ucx_transport/ and hdf5_vol/ (docs/style.md, "clang-tidy"). Every finding is an error.
#
# Uses the release preset's compile_commands.json (configuring the preset when it is missing; no
# build is needed: there are no generated headers). hdf5_vol/ is in it only when the configure
# found HDF5 (scripts/setup.sh builds it); otherwise it is skipped, and the summary says so.
# Prints each finding, then one summary line with the time; exits 1 on any finding.
# Usage: scripts/lint.sh [FILE.cpp...]   (default: every .cpp of the four folders)
#   LARDER_LINT_JOBS  parallel clang-tidy processes (default 2)
#   CLANG_TIDY        the clang-tidy to run (default clang-tidy, Debian bookworm's 14)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd -P)
readonly ROOT
readonly BUILD_DIR=$ROOT/build/release
readonly FOLDERS=(runtime mpi_transport ucx_transport hdf5_vol)
readonly JOBS=${LARDER_LINT_JOBS:-2}
readonly TIDY=${CLANG_TIDY:-clang-tidy}
# clang 14 cannot parse libstdc++ 12's <source_location> (hdf5_vol/errors.hpp); this header,
# included first in each file, supplies it for the linter only (see the file).
readonly SHIM=$ROOT/scripts/lint/source_location.hpp

start=$(date +%s)
command -v "$TIDY" >/dev/null || { echo "lint: $TIDY not found (scripts/setup.sh installs it)" >&2; exit 2; }
if [[ ! -f $BUILD_DIR/compile_commands.json ]]; then
  cmake --preset release >/dev/null
fi

# The files to check: those named, else every .cpp of the folders that the build compiles.
list=$(python3 - "$BUILD_DIR/compile_commands.json" "$ROOT" "${FOLDERS[@]}" -- "$@" <<'PY'
import json, os, sys
db_path, root, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
folders, named = rest[:rest.index("--")], rest[rest.index("--") + 1:]
db = {os.path.realpath(os.path.join(e["directory"], e["file"])) for e in json.load(open(db_path))}
if named:
    for f in named:
        path = os.path.realpath(f)
        if path not in db:
            sys.exit(f"lint: {f} is not in {db_path}")
        print(path)
else:
    for path in sorted(db):
        rel = os.path.relpath(path, root)
        if rel.endswith(".cpp") and rel.split(os.sep)[0] in folders:
            print(path)
PY
)
mapfile -t files <<<"$list"
note=""
if [[ $# -eq 0 ]] && ! printf '%s\n' "${files[@]}" | grep -q "^$ROOT/hdf5_vol/"; then
  note=" (hdf5_vol/ skipped: the configure did not find HDF5; run scripts/setup.sh)"
fi
[[ -n $list ]] || { echo "lint: no files to check in $BUILD_DIR/compile_commands.json" >&2; exit 2; }

# One log per file; a file whose clang-tidy succeeds leaves none.
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
export TIDY BUILD_DIR SHIM logs
# shellcheck disable=SC2016  # expanded by the inner bash, from the exported variables
printf '%s\0' "${files[@]}" | xargs -0 -P "$JOBS" -n 1 bash -c '
  log=$logs/$(printf "%s" "$1" | tr / _).log
  if "$TIDY" -p "$BUILD_DIR" --quiet --warnings-as-errors="*" --extra-arg=-include"$SHIM" "$1" \
      >"$log" 2>&1; then
    rm -f "$log"
  fi' _ || true

failed=$(find "$logs" -name '*.log' | wc -l)
checked="${#files[@]} file$([[ ${#files[@]} -eq 1 ]] || echo s)"
elapsed=$(($(date +%s) - start))
if [[ $failed -eq 0 ]]; then
  echo "lint: clang-tidy: ${checked}, no findings, ${elapsed} s${note}"
  exit 0
fi
# A header's finding is reported once per file that includes it: print each once.
cat "$logs"/*.log | grep -v -E '^[0-9]+ (warnings?|errors?)( and [0-9]+ (warnings?|errors?))? generated\.$' \
  | awk 'BEGIN { keep = 1 } /^[^ ].*:[0-9]+:[0-9]+: (warning|error): / { keep = !seen[$0]++ } keep'
findings=$(cat "$logs"/*.log | grep -E '^[^ ].*:[0-9]+:[0-9]+: (warning|error): ' | sort -u | wc -l)
echo "lint: clang-tidy: ${checked}, ${findings} finding(s) in ${failed} file(s), ${elapsed} s${note}"
exit 1
