#!/usr/bin/env bash
# report.sh: the demo job. Runs a demo-scale unet3d-like workload (configs/unet3d_demo.yaml) on a
# shaped remote file system (scripts/pfs/pfs.sh: sshfs from another network namespace through a
# tc-tbf-shaped veth) without the cache and with it, then prints a table (epoch time, AU,
# samples/s, MiB/s, PFS bytes per epoch) and writes a PNG plot of per-epoch throughput and AU.
#
#   sudo apps/larder-bench/report.sh [--build DIR] [--rate 200mbit] [--delay 500us] [--ranks 2]
#                                    [--out DIR] [--modes "posix larder preload"] (also: told, steps)
#                                    [--workload YAML] [--larder-env VAR=VALUE]...
#
# Needs root (namespaces, tc, the mount) and a built tree (bin/larder-bench; lib/ for the
# preload mode, which is skipped with a message when lib/liblarder_preload.so is absent).
# Modes: posix (the baseline, plain reads of the remote file system), larder (Larder's C API),
# preload (the same POSIX reader under LD_PRELOAD=liblarder_preload.so), told (Larder's C API told
# each epoch's sample order, larder-bench --prefetch), steps (preload, run twice
# as two job steps of one allocation, LARDER_KEEP: the second step is reported). Results stay in
# --out (default /tmp/lbp-report): one larder-bench --output directory per mode, report.dat and
# report.png. --delay adds a one-way latency to the link (pfs.sh --delay); --larder-env sets a
# variable for Larder's modes only (repeatable: LARDER_MEM to bound the cache's memory,
# LARDER_NODE_SIZE to split the ranks into emulated nodes). Takes about two minutes on a 2-core
# machine.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build="" rate=200mbit delay="" ranks=2 out=/tmp/lbp-report modes="posix larder preload"
workload=$here/configs/unet3d_demo.yaml
larder_env=()

die() { echo "report.sh: $*" >&2; exit 1; }
say() { echo "== $*"; }

while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --delay) delay=$2; shift 2 ;;
    --larder-env)
      [[ $2 == LARDER_*=* ]] || die "--larder-env takes LARDER_NAME=VALUE, not '$2'"
      larder_env+=(-genv "${2%%=*}" "${2#*=}"); shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --workload) workload=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[[ $(id -u) -eq 0 ]] || die "needs root: it creates network namespaces, tc qdiscs and a mount"
if [[ -z $build ]]; then
  for d in "$repo/build/release" "$repo/build" "$repo"/build-*; do
    [[ -x $d/bin/larder-bench ]] && { build=$d; break; }
  done
fi
bench=$build/bin/larder-bench
[[ -x $bench ]] || die "no bin/larder-bench under '${build:-$repo/build/release}': build first or pass --build"
command -v gnuplot >/dev/null || die "gnuplot is missing (apt-get install gnuplot-nox)"
mpiexec=$(command -v mpiexec.mpich) || die "mpiexec.mpich is missing"
python=/usr/bin/python3
pfs=$repo/scripts/pfs/pfs.sh

mkdir -p "$out"
out=$(cd "$out" && pwd)
export_dir=$out/export mnt=$out/mnt
mkdir -p "$export_dir" "$mnt"
pfs_id=""
steps_shm=""
cleanup() {
  [[ -n $steps_shm ]] && rm -rf --one-file-system "$steps_shm"
  [[ -n $pfs_id ]] && "$pfs" down "$pfs_id" >/dev/null 2>&1 || true
  rm -rf --one-file-system "$export_dir"
  rmdir "$mnt" 2>/dev/null || true
}
trap cleanup EXIT

run_bench() {  # run_bench ARGS...: larder-bench under mpiexec with the report's ranks
  "$mpiexec" -n "$ranks" -bind-to none "$@"
}

say "generating the dataset ($(basename "$workload"), $ranks ranks) into $export_dir"
run_bench "$bench" generate "$workload" --set dataset.data_folder="$export_dir" --no-progress |
  tail -1
shape=(--rate "$rate")
[[ -n $delay ]] && shape+=(--delay "$delay")
pfs_id=$("$pfs" up --export "$export_dir" --mount "$mnt" "${shape[@]}")
say "shaped file system: $mnt (sshfs through $rate${delay:+, $delay each way})"

ran=()
reports=()
for mode in $modes; do
  args=("$bench" train "$workload" --set dataset.data_folder="$mnt" --io "$mode"
        --output "$out/$mode")
  env=()
  case $mode in
    posix) ;;
    larder) env=(-genv LARDER_PREFIX "$mnt") ;;
    told)
      env=(-genv LARDER_PREFIX "$mnt")
      args=("$bench" train "$workload" --set dataset.data_folder="$mnt" --io larder --prefetch
            --output "$out/$mode") ;;
    preload)
      lib=$build/lib/liblarder_preload.so
      if [[ ! -f $lib ]]; then
        say "preload: skipped ($lib is not built)"
        continue
      fi
      env=(-genv LD_PRELOAD "$lib" -genv LARDER_PREFIX "$mnt") ;;
    steps)
      lib=$build/lib/liblarder_preload.so
      [[ -f $lib ]] || { say "steps: skipped ($lib is not built)"; continue; }
      steps_shm=$(mktemp -d /dev/shm/lbp-steps-XXXXXX)
      env=(-genv LD_PRELOAD "$lib" -genv LARDER_PREFIX "$mnt" -genv LARDER_KEEP report
           -genv LARDER_SHM_DIR "$steps_shm")
      say "training with the preload, job step 1 of 2 (LARDER_KEEP)"
      rm -rf "$out/steps-1"
      run_bench "${env[@]}" "$bench" train "$workload" --set dataset.data_folder="$mnt" \
        --io preload --output "$out/steps-1" >"$out/steps-1.log" 2>&1 ||
        { tail -20 "$out/steps-1.log" >&2; die "step 1 failed (log: $out/steps-1.log)"; }
      args=("$bench" train "$workload" --set dataset.data_folder="$mnt" --io preload
            --output "$out/$mode") ;;
    *) die "unknown mode $mode: accepted posix, larder, preload, told, steps" ;;
  esac
  # Larder's runs write their stats; their job report (larder-report) goes next to them.
  [[ $mode == posix ]] || env+=(-genv LARDER_STATS "$out/$mode.stats.json" "${larder_env[@]}")
  say "training with --io $mode"
  rm -rf "$out/$mode" "$out/$mode.stats.json"
  run_bench "${env[@]}" "${args[@]}" >"$out/$mode.log" 2>&1 ||
    { tail -20 "$out/$mode.log" >&2; die "the $mode run failed (log: $out/$mode.log)"; }
  grep -E '\[METRIC\] Training Accelerator|train_au_meet' "$out/$mode.log" | sed 's/^/   /'
  if [[ -f $out/$mode.stats.json && -x $build/bin/larder-report ]]; then
    "$build/bin/larder-report" "$out/$mode.stats.json" -o "$out/$mode.report.html" >/dev/null &&
      reports+=("$out/$mode.report.html")
  fi
  if [[ $mode == steps ]]; then
    rm -rf --one-file-system "$steps_shm"
    steps_shm=""
  fi
  ran+=("$mode")
done
[[ ${#ran[@]} -gt 0 ]] || die "no mode ran"

say "results ($rate link, $ranks ranks)"
"$python" "$here/report_table.py" "$out" "$rate" "${ran[@]}"
title="$(basename "$workload" .yaml) on sshfs shaped to $rate, $ranks ranks"
gnuplot -e "datafile='$out/report.dat'; outfile='$out/report.png'; title='$title'" \
  -e "load '$out/report.vars'" "$here/report.gp"
say "plot: $out/report.png"
for r in "${reports[@]}"; do say "job report (open in a browser): $r"; done
