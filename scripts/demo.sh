#!/usr/bin/env bash
# The demo job on a fresh machine: installs what is missing, builds (release, MPICH), then runs
# a demo-scale unet3d-like training job (2 ranks) on a shaped remote file system (sshfs from
# another network namespace through a 200 Mbit/s link) without the cache and with it, and prints
# the per-epoch comparison (time, AU, samples/s, bytes read from the file system); the plot goes
# to /tmp/lbp-report/report.png and the job report of each Larder run (larder-report: one HTML
# page) to /tmp/lbp-report/<mode>.report.html. Needs root (namespaces, tc, the mount); about 2 minutes after
# the build. Options are passed to apps/larder-bench/report.sh (see its --help).
#
# Without root it runs the smallest real job instead: a dataset read twice by 2 ranks through
# POSIX and through Larder, printing file-system bytes and time for each pass, and writes its
# job report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --mpi mpich
cmake --preset release >/dev/null
cmake --build --preset release
if [[ $(id -u) -eq 0 ]]; then
  exec apps/larder-bench/report.sh --build build/release "$@"
fi
echo "demo.sh: not root, so no shaped file system: running the local demo instead" >&2
data=${LARDER_DEMO_DIR:-/tmp/larder-demo}
mpiexec.mpich -n 2 -genv LARDER_STATS "$data.stats.json" build/release/bin/larder-demo \
  --dir "$data" --files 64 --size 4M
build/release/bin/larder-report "$data.stats.json" -o "$data.report.html" >/dev/null
echo "demo.sh: the job report (open in a browser): $data.report.html"
