#!/usr/bin/env bash
# The demo job on a fresh machine: installs what is missing, builds (release, MPICH), and runs a
# small dataset read by 2 ranks without and with Larder, printing the comparison.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --mpi mpich
cmake --preset release >/dev/null
cmake --build --preset release
data=${LARDER_DEMO_DIR:-/tmp/larder-demo}
exec mpiexec.mpich -n 2 build/release/bin/larder-demo --dir "$data" --files 64 --size 4M "$@"
