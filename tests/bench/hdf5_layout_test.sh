#!/usr/bin/env bash
# HDF5 files as DLIO writes them, checked with h5dump from the HDF5 1.14.5 install:
# mlperf_storage v2.0 ('records' uint8 (n, d1, d2) + 'labels' int64 zeros (n)), DLIO main
# ('records_0', 'records_1', ... with --layout head) and chunked + gzip; then training reads
# them through HDF5 and through Larder, and `verify` compares Larder's bytes with direct reads.
source "$(dirname "$0")/lib.sh"
[[ -x ${H5DUMP:-} ]] || skip "h5dump not found (HDF5 1.14.5 from scripts/setup.sh)"

cat >"$WORK/w.yaml" <<EOF
framework: pytorch
dataset:
  data_folder: $WORK/h5
  format: hdf5
  num_files_train: 4
  num_samples_per_file: 3
  record_length_bytes: 4096
reader:
  data_loader: pytorch
  batch_size: 2
  read_threads: 2
train:
  epochs: 2
  computation_time: 0.001
EOF
f=$WORK/h5/train/img_0_of_4.hdf5
bench 2 generate "$WORK/w.yaml"
"$H5DUMP" -H "$f" >"$WORK/h.txt"
grep -q 'DATASET "records"' "$WORK/h.txt" || fail "no records dataset"
grep -q 'H5T_STD_U8LE' "$WORK/h.txt" || fail "records is not uint8"
grep -q 'DATASPACE  SIMPLE { ( 3, 64, 64 ) / ( 3, 64, 64 ) }' "$WORK/h.txt" || fail "records shape"
grep -q 'DATASET "labels"' "$WORK/h.txt" || fail "no labels dataset"
grep -q 'H5T_STD_I64LE' "$WORK/h.txt" || fail "labels is not int64"
grep -q 'DATASPACE  SIMPLE { ( 3 ) / ( 3 ) }' "$WORK/h.txt" || fail "labels shape"
"$H5DUMP" -d labels "$f" >"$WORK/labels.txt"
grep -q '(0): 0, 0, 0' "$WORK/labels.txt" || fail "labels are not zeros"
"$H5DUMP" -p -H -d records "$f" >"$WORK/layout.txt"
grep -q 'CONTIGUOUS' "$WORK/layout.txt" || fail "records is not contiguous"

note "DLIO main layout: records_0, records_1"
bench 2 generate "$WORK/w.yaml" --layout head --set dataset.hdf5.num_dset_per_record=2
"$H5DUMP" -H "$f" >"$WORK/h.txt"
grep -q 'DATASET "records_0"' "$WORK/h.txt" && grep -q 'DATASET "records_1"' "$WORK/h.txt" ||
  fail "no records_0/records_1"

note "chunked + gzip"
bench 2 generate "$WORK/w.yaml" --set dataset.enable_chunking=True \
  --set dataset.chunk_size=1024 --set dataset.compression=gzip
"$H5DUMP" -p -H "$f" >"$WORK/h.txt"
grep -q 'CHUNKED ( 1, 32, 32 )' "$WORK/h.txt" || fail "chunks are not (1, 32, 32)"
grep -q 'COMPRESSION DEFLATE' "$WORK/h.txt" || fail "no gzip filter"

note "train through HDF5 and through Larder"
bench 2 generate "$WORK/w.yaml"
bench 2 train "$WORK/w.yaml" --output "$WORK/out-posix"
bench 2 train "$WORK/w.yaml" --io larder --output "$WORK/out-larder"
bench 2 verify "$WORK/w.yaml" --io larder
py - "$WORK" <<'EOF'
import json, sys
w = sys.argv[1]
for io in ("posix", "larder"):
    s = json.load(open(f"{w}/out-{io}/summary.json"))
    app = s["larder"]["app_bytes_per_epoch"]
    # per epoch: 2 ranks x 3 steps x 2 samples of 64 x 64 bytes
    assert app == [12 * 4096, 12 * 4096], (io, app)
pfs = json.load(open(f"{w}/out-larder/summary.json"))["larder"]["pfs_bytes_per_epoch"]
assert pfs[0] > 0 and pfs[1] == 0, pfs
print("hdf5 layout and reads ok:", pfs)
EOF
