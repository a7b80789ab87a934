#!/usr/bin/env bash
# The shaped sshfs "PFS" (scripts/pfs/pfs.sh): a served directory reads back byte for byte
# through the mount; a tiny training job through Larder reads it once; `down` removes the mount,
# sshd, namespaces and keys; a failing command under `run` and a failing `up` leave nothing.
# Needs root (network namespaces, tc, mounts): skipped otherwise.
source "$(dirname "$0")/lib.sh"
[[ $(id -u) -eq 0 ]] || skip "needs root"
command -v sshfs >/dev/null && [[ -x /usr/sbin/sshd ]] || skip "sshfs or sshd missing"

pfs=$PFS_SCRIPT
leftovers() {  # prints what an instance left behind
  local id=$1
  ip netns list | grep -- "$id" || true
  grep -- "$WORK/mnt" /proc/mounts || true
  [[ -e /run/lbp-pfs/$id ]] && echo "/run/lbp-pfs/$id" || true
}

mkdir -p "$WORK/export" "$WORK/mnt"
cat >"$WORK/w.yaml" <<EOF
framework: pytorch
dataset:
  data_folder: $WORK/export
  format: npz
  num_files_train: 8
  record_length_bytes: 131072
  record_length_bytes_stdev: 32768
reader:
  data_loader: pytorch
  batch_size: 2
  read_threads: 2
train:
  epochs: 2
  computation_time: 0.001
EOF
bench 2 generate "$WORK/w.yaml"
total=$(bytes_of "$WORK/export/train" '*.npz')

id=$("$pfs" up --export "$WORK/export" --mount "$WORK/mnt" --rate 800mbit)
trap '"$pfs" down "$id" >/dev/null 2>&1 || true; rm -rf --one-file-system "$WORK"' EXIT
grep -q "fuse.sshfs" <(grep -- "$WORK/mnt" /proc/mounts) || fail "no sshfs mount"
for f in "$WORK"/export/train/*.npz; do
  cmp "$f" "$WORK/mnt/train/$(basename "$f")" || fail "$f differs through the mount"
done
note "train through Larder on the mount"
bench 2 train "$WORK/w.yaml" --io larder --set dataset.data_folder="$WORK/mnt" \
  --output "$WORK/out"
py - "$WORK/out/summary.json" "$total" <<'EOF'
import json, sys
l = json.load(open(sys.argv[1]))["larder"]
assert l["pfs_bytes_per_epoch"] == [int(sys.argv[2]), 0], l
print("PFS bytes per epoch:", l["pfs_bytes_per_epoch"])
EOF
"$pfs" down "$id"
[[ -z $(leftovers "$id") ]] || fail "left behind: $(leftovers "$id")"

note "a failing command under run, a failing up"
snapshot() {
  ls /run/lbp-pfs 2>/dev/null || true
  ip netns list | grep lbp-pfs- || true
  grep -- "$WORK/mnt" /proc/mounts || true
}
before=$(snapshot)
if "$pfs" run --export "$WORK/export" --mount "$WORK/mnt" --rate 800mbit -- false; then
  fail "run did not report the command's failure"
fi
[[ $(snapshot) == "$before" ]] || fail "run left behind: $(snapshot)"
if "$pfs" up --export "$WORK/export" --mount "$WORK/mnt" --rate 800mbit --client-netns lbp-none \
    2>"$WORK/up.log"; then
  fail "up with a missing client namespace succeeded"
fi
grep -q "setup failed; undoing" "$WORK/up.log" || fail "up did not undo: $(cat "$WORK/up.log")"
[[ $(snapshot) == "$before" ]] || fail "up left behind: $(snapshot)"
echo "pfs ok"
