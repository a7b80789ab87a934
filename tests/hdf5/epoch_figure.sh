#!/usr/bin/env bash
# The figure of docs/hdf5-vol.md: 4 ranks read a DLIO-style HDF5 file (2048 samples of 256x256
# uint8, 128 MiB) in random order for 3 epochs from scripts/pfs/pfs.sh's shaped sshfs mount:
# natively, through the connector with start=world, and through the connector with Larder
# started by its MPI_Init hooks. Needs root (pfs.sh); removes what it creates.
#
# usage: tests/hdf5/epoch_figure.sh BUILD_DIR [RATE (default 400mbit)] [WORK_DIR]
set -euo pipefail
build=$(realpath "$1")
rate=${2:-400mbit}
work=${3:-/tmp/larder-hdf5-figure}
here=$(cd "$(dirname "$0")" && pwd)
bench=$build/bin/hdf5_epoch_bench
[[ -x $bench ]] || { echo "no $bench: build the hdf5_epoch_bench target" >&2; exit 1; }

mkdir -p "$work/export" "$work/pfs"
if [[ ! -f $work/export/train.h5 ]]; then
  mpiexec.mpich -n 1 "$bench" --file "$work/export/train.h5" --samples 2048 --d1 256 --d2 256 \
    --epochs 0
fi
cat >"$work/runs.sh" <<RUNS
#!/usr/bin/env bash
set -u
f=$work/pfs/train.h5
vol=(HDF5_PLUGIN_PATH=$build/lib/hdf5-plugins)
echo "=== native"
mpiexec.mpich -n 4 -bind-to none $bench --file \$f --epochs 3
echo "=== connector, start=world"
env "\${vol[@]}" HDF5_VOL_CONNECTOR="larder start=world;under_vol=0;under_info={}" \\
  mpiexec.mpich -n 4 -bind-to none $bench --file \$f --epochs 3
echo "=== connector, Larder started by its MPI_Init hooks"
env "\${vol[@]}" LARDER_PREFIX=$work/pfs HDF5_VOL_CONNECTOR="larder under_vol=0;under_info={}" \\
  mpiexec.mpich -n 4 -bind-to none $bench --file \$f --epochs 3
RUNS
chmod +x "$work/runs.sh"
"$here/../../scripts/pfs/pfs.sh" run --export "$work/export" --mount "$work/pfs" --rate "$rate" \
  -- "$work/runs.sh"
