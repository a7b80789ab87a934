#!/usr/bin/env bash
# larder-bench on tiny workloads (2 ranks, batch size 1, 0.01 s of computation per step), one
# case per run (the argument):
#   one_step      3 files: one step per epoch. AU and throughput are "n/a" with their reasons in
#                 summary.json, the rank files and the lines (DLIO reports 0 % and a negative rate)
#   two_steps     4 files: AU is a number (step 2 of 2), the throughput "n/a" (DLIO reports 0)
#   compute_time  the emulated computation is the configured 0.01 s per step: every recorded
#                 compute time is at least 0.01 s, and the "Computation time per step" line
#                 reports it (it said 0 for one-step epochs), in both workloads
# Every case also checks DLIO's result file names.
source "$(dirname "$0")/lib.sh"

case_name=${1:?usage: edge_cases_test.sh one_step|two_steps|compute_time}

workload() {  # workload FILES: the YAML for FILES npz files of 64 KiB, 2 epochs
  cat >"$WORK/w$1.yaml" <<YAML
model:
  name: tiny_$1
framework: pytorch
dataset:
  data_folder: $WORK/data$1
  format: npz
  num_files_train: $1
  num_samples_per_file: 1
  record_length_bytes: 65536
reader:
  data_loader: pytorch
  batch_size: 1
  read_threads: 1
train:
  epochs: 2
  computation_time: 0.01
YAML
  bench 2 generate "$WORK/w$1.yaml"
  bench 2 train "$WORK/w$1.yaml" --output "$WORK/out$1"
  cp "$WORK/last.log" "$WORK/out$1.log"
}

check() {  # check FILES STEPS: the Python checks below for one workload
  py - "$WORK/out$1" "$2" "$case_name" <<'PY'
import json, os, sys
out, steps, case = sys.argv[1], int(sys.argv[2]), sys.argv[3]
log = open(out + ".log").read()
s = json.load(open(f"{out}/summary.json"))
m = s["metric"]
for name in ("summary.json", "dlio.log", "0_output.json", "1_output.json",
             "0_per_epoch_stats.json", "1_per_epoch_stats.json"):
    assert os.path.isfile(f"{out}/{name}"), f"{name} missing: DLIO writes it"
assert not os.path.exists(f"{out}/per_epoch_stats.json")
ranks = [json.load(open(f"{out}/{r}_output.json")) for r in (0, 1)]

if case == "one_step":
    assert steps == 1
    assert m["train_au_percentage"] == ["n/a", "n/a"], m
    assert m["train_au_mean_percentage"] == "n/a" and m["train_au_meet_expectation"] == "n/a", m
    assert "exclude_start_steps=1" in m["train_au_na_reason"], m
    assert m["train_throughput_samples_per_second"] == ["n/a", "n/a"], m
    assert m["train_io_mean_MB_per_second"] == "n/a", m
    assert "needs 3 or more" in m["train_throughput_na_reason"], m
    for r in ranks:
        assert r["1"]["au"]["block1"] == "n/a" and r["1"]["throughput"]["block1"] == "n/a", r["1"]
    assert "[Training] Accelerator Utilization [AU] (%): n/a (no step left" in log, log
    assert "Training Throughput (samples/second): n/a (1 step(s) per epoch" in log, log
    rates = [l.split("(samples/second): ")[1].split()[0] for l in log.splitlines()
             if "(samples/second): " in l]
    assert rates == ["n/a"] * 3, rates  # two epochs and the run: no negative rate
elif case == "two_steps":
    assert steps == 2
    au = m["train_au_percentage"]
    assert all(isinstance(a, float) and 0 < a <= 100 for a in au), m
    assert isinstance(m["train_au_mean_percentage"], float), m
    assert m["train_au_meet_expectation"] in ("success", "fail"), m
    assert "train_au_na_reason" not in m, m
    assert m["train_throughput_mean_samples_per_second"] == "n/a", m
    assert "DLIO reports 0" in m["train_throughput_na_reason"], m
elif case == "compute_time":
    for r in ranks:
        for epoch in ("1", "2"):
            compute = r[epoch]["compute"]["block1"]
            assert len(compute) == steps and min(compute) >= 0.01, (epoch, compute)
    lines = [l for l in log.splitlines() if "Computation time per step (second):" in l]
    assert len(lines) == 2, log
    for l in lines:
        mean = float(l.split("(second): ")[1].split("+/-")[0])
        assert mean >= 0.01, l  # the steps of the metric window, or all of them if it is empty
        assert "set value: 0.01" in l, l
print(f"ok: {case}, {steps} step(s) per epoch")
PY
}

case $case_name in
  one_step) workload 3; check 3 1 ;;
  two_steps) workload 4; check 4 2 ;;
  compute_time) workload 3; check 3 1; workload 4; check 4 2 ;;
  *) fail "unknown case '$case_name'" ;;
esac
