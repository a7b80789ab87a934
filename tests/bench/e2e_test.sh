#!/usr/bin/env bash
# End to end under mpiexec -n 2: generate + train a tiny unet3d-like workload, check
# summary.json and the other result files; train again through Larder (--io larder) and check
# that the file system is read once (epoch 1) and never again; verify Larder's bytes against
# direct reads; a TFRecord workload with the TensorFlow pipeline and evaluation; clear errors.
source "$(dirname "$0")/lib.sh"

cat >"$WORK/w.yaml" <<EOF
model:
  name: tiny_unet3d
framework: pytorch
dataset:
  data_folder: $WORK/data
  format: npz
  num_files_train: 12
  num_samples_per_file: 1
  record_length_bytes: 262144
  record_length_bytes_stdev: 65536
reader:
  data_loader: pytorch
  batch_size: 2
  read_threads: 2
train:
  epochs: 3
  computation_time: 0.002
EOF
bench 2 generate "$WORK/w.yaml"
total=$(bytes_of "$WORK/data/train" '*.npz')
bench 2 train "$WORK/w.yaml" --output "$WORK/posix"
grep -q '\[METRIC\] Training Accelerator Utilization \[AU\] (%)' "$WORK/last.log" ||
  fail "no DLIO metric lines"
bench 2 train "$WORK/w.yaml" --io larder --output "$WORK/larder"
bench 2 verify "$WORK/w.yaml" --io larder

py - "$WORK" "$total" <<'EOF'
import json, sys
w, total = sys.argv[1], int(sys.argv[2])
s = json.load(open(f"{w}/posix/summary.json"))
for key in ("start", "end", "num_accelerators", "num_hosts", "hostname", "metric",
            "num_files_train", "num_files_eval", "num_samples_per_file", "host_cpu_count",
            "host_processor_name", "potential_caching", "host_cpuinfo", "host_meminfo",
            "host_memory_GB", "data_size_per_host_GB", "epochs", "larder"):
    assert key in s, key
m = s["metric"]
for key in ("train_au_percentage", "train_au_mean_percentage", "train_au_meet_expectation",
            "train_au_stdev_percentage", "train_throughput_samples_per_second",
            "train_throughput_mean_samples_per_second",
            "train_throughput_stdev_samples_per_second", "train_io_mean_MB_per_second",
            "train_io_stdev_MB_per_second"):
    assert key in m, key
assert s["num_accelerators"] == 2 and s["epochs"] == 3 and s["num_files_train"] == 12, s
assert len(m["train_au_percentage"]) == 3 and m["train_au_meet_expectation"] in ("success", "fail")
assert abs(m["train_io_mean_MB_per_second"] -
           m["train_throughput_mean_samples_per_second"] * 262144 / 1048576) < 1e-9
assert s["larder"]["pfs_bytes_per_epoch"] == [total] * 3, (s["larder"], total)
import os
# DLIO's file names: summary.json, {rank}_per_epoch_stats.json, {rank}_output.json, dlio.log
assert not os.path.exists(f"{w}/posix/per_epoch_stats.json")
for rank in (0, 1):
    epochs = json.load(open(f"{w}/posix/{rank}_per_epoch_stats.json"))
    assert sorted(epochs) == ["1", "2", "3"] and "block1" in epochs["1"], epochs
    assert set(epochs["1"]) == {"start", "block1", "end", "duration"}, epochs["1"]
log = open(f"{w}/posix/dlio.log").read()
assert "[OUTPUT]" in log and "Starting epoch 1" in log and "[METRIC] Training Accelerator" in log
for rank in (0, 1):
    out = json.load(open(f"{w}/posix/{rank}_output.json"))
    assert len(out["1"]["compute"]["block1"]) == 3 and "au" in out["1"], out["1"]
assert "workload" in open(f"{w}/posix/.hydra/config.yaml").read()

l = json.load(open(f"{w}/larder/summary.json"))["larder"]
assert l["io"] == "larder" and l["pfs_bytes_source"] == "larder pfs.bytes_read", l
assert l["app_bytes_per_epoch"] == [total] * 3, l
assert l["pfs_bytes_per_epoch"] == [total, 0, 0], l  # the PFS is read once per job
c = l["counters_per_epoch"]
assert c[0]["pfs.read_ops"] > 0 and all(e["hits.self"] + e["hits.node"] > 0 for e in c[1:]), c
print("summary ok; PFS bytes per epoch through Larder:", l["pfs_bytes_per_epoch"])
EOF

note "TFRecord, TensorFlow pipeline, evaluation"
cat >"$WORK/tf.yaml" <<EOF
framework: tensorflow
workflow:
  evaluation: True
dataset:
  data_folder: $WORK/tf
  format: tfrecord
  num_files_train: 4
  num_files_eval: 2
  num_samples_per_file: 4
  record_length_bytes: 10000
reader:
  data_loader: tensorflow
  batch_size: 2
  batch_size_eval: 2
  read_threads: 2
  file_shuffle: seed
  sample_shuffle: seed
  shuffle_size: 3
train:
  epochs: 2
  computation_time: {mean: 0.002, stdev: 0.001}
evaluation:
  eval_time: 0.001
EOF
bench 2 generate "$WORK/tf.yaml"
[[ -f $WORK/tf/index/train/img_0_of_4.tfrecord.idx ]] || fail "no DALI index file"
bench 2 train "$WORK/tf.yaml" --output "$WORK/tfout"
py - "$WORK" <<'EOF'
import json, sys
s = json.load(open(f"{sys.argv[1]}/tfout/summary.json"))
assert len(s["metric"]["eval_au_percentage"]) == 2, s["metric"]
assert "eval_throughput_mean_samples_per_second" in s["metric"]
print("tfrecord + eval ok")
EOF

note "errors"
if bench 2 train "$WORK/w.yaml" --set dataset.data_folder="$WORK/none" --output "$WORK/x"; then
  fail "training without a dataset succeeded"
fi
grep -q 'run larder-bench generate first' "$WORK/last.log" || fail "unclear missing-dataset message"
if bench 1 train "$WORK/w.yaml" --set reader.batch_size=0; then fail "batch_size 0 accepted"; fi
grep -q 'reader.batch_size' "$WORK/last.log" || fail "unclear bad-value message"
if bench 1 train "$WORK/w.yaml" --io preload; then fail "--io preload ran without LD_PRELOAD"; fi
grep -q 'LD_PRELOAD' "$WORK/last.log" || fail "unclear --io preload message"
echo "e2e ok"
