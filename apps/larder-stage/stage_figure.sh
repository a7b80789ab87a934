#!/usr/bin/env bash
# The docs figure for larder-stage (as root): a tree of many small files (like a Python
# environment) on scripts/pfs/pfs.sh's sshfs mount shaped to RATE, copied to N emulated nodes
# (a) by N concurrent `cp -a`, as each node would do on its own, and (b) by larder-stage with N
# ranks, one per emulated node. Prints time and the bytes that crossed the shaped link for each.
# Usage: apps/larder-stage/stage_figure.sh BUILD_DIR [RATE=200mbit] [N=4] [FILES=2000] [KIB=48]
set -euo pipefail
build=$(cd "$1" && pwd)
rate=${2:-200mbit}
n=${3:-4}
files=${4:-2000}
kib=${5:-48}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/larder-stage-figure-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/export/env" "$work/mnt"
python3 - "$work/export/env" "$files" "$kib" <<'PY'
import os, sys
root, files, kib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(files):
    d = os.path.join(root, f"pkg{i % 40:02d}", f"mod{i % 7}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"f{i:05d}.py"), "wb") as f:
        f.write(os.urandom(kib * 1024))
PY
total=$(du -sb "$work/export/env" | cut -f1)
echo "tree: $files files, $((total / 1048576)) MiB; $n emulated nodes; link $rate"
"$root/scripts/pfs/pfs.sh" run --export "$work/export" --mount "$work/mnt" --rate "$rate" -- \
  bash -c '
  set -euo pipefail
  link() { ip -n "$(ip netns list | awk "/^lbp-pfs-.*-srv/ {print \$1; exit}")" -s link show | awk "/TX:/ {getline; s+=\$1} END {print s}"; }
  b=$(link); t0=$(date +%s%N)
  for i in $(seq 0 $(('"$n"' - 1))); do cp -a "'"$work"'/mnt/env" "'"$work"'/cp$i" & done; wait
  t1=$(date +%s%N); a=$(link)
  echo "cp -a on each node:   $(( (t1 - t0) / 1000000 )) ms, $(( (a - b) / 1048576 )) MiB over the link"
  b=$(link); t0=$(date +%s%N)
  LARDER_NODE_SIZE=1 LARDER_LOG=error mpiexec.mpich -n '"$n"' -bind-to none \
    "'"$build"'/bin/larder-stage" --to "'"$work"'/stage/{node}" "'"$work"'/mnt/env" >/dev/null
  t1=$(date +%s%N); a=$(link)
  echo "larder-stage:         $(( (t1 - t0) / 1000000 )) ms, $(( (a - b) / 1048576 )) MiB over the link"
  for i in $(seq 0 $(('"$n"' - 1))); do diff -r "'"$work"'/mnt/env" "'"$work"'/stage/$i/env"; done
  echo "every copy identical to the source"
  '
