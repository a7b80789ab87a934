#!/usr/bin/env bash
# Generator compatibility with numpy: npz and npy files written by `larder-bench generate` under
# mpiexec -n 2 load with numpy, have DLIO's seeded shapes and sizes, and are byte for byte what
# np.savez writes for the same arrays (with the zip headers of the Python running the test).
source "$(dirname "$0")/lib.sh"
have_numpy || skip "python3-numpy is not installed"

cat >"$WORK/w.yaml" <<EOF
framework: pytorch
dataset:
  data_folder: $WORK/npz
  format: npz
  num_files_train: 6
  num_files_eval: 2
  num_samples_per_file: 3
  record_length_bytes: 40000
  record_length_bytes_stdev: 9000
reader:
  data_loader: pytorch
EOF
style=$(py -c 'import sys; print("modern" if sys.version_info >= (3, 11, 4) else "legacy")')
note "generate npz (zip headers: $style), npy"
bench 2 generate "$WORK/w.yaml" --npz-zip "$style"
bench 2 generate "$WORK/w.yaml" --set dataset.format=npy --set dataset.data_folder="$WORK/npy"

py - "$WORK" <<'EOF'
import io, math, os, sys
import numpy as np

work = sys.argv[1]
L, sd, n, files = 40000, 9000, 3, 8
dim = int(math.sqrt(L))
np.random.seed(10)
dims = [max(int(d), 1) for d in np.random.normal(dim, sd / 2 / math.sqrt(L), 2 * files)]
names = [f"train/img_{i}_of_6" for i in range(6)] + [f"valid/img_{i}_of_2" for i in range(2)]
for i, name in enumerate(names):
    shape = (dims[2 * i], dims[2 * i + 1], n)
    path = f"{work}/npz/{name}.npz"
    with np.load(path) as z:
        x, y = z["x"], z["y"]
    assert x.shape == shape and x.dtype == np.uint8, (path, x.shape, shape)
    assert y.dtype == np.int64 and y.shape == (n,) and not y.any(), (path, y)
    size = os.path.getsize(path)
    assert size == shape[0] * shape[1] * n + 8 * n + 490, (path, size)
    again = io.BytesIO()
    np.savez(again, x=x, y=y)
    assert again.getvalue() == open(path, "rb").read(), f"{path} differs from np.savez"
    npy = np.load(f"{work}/npy/{name}.npy")
    assert npy.shape == shape and npy.dtype == np.uint8, (name, npy.shape)
    assert open(f"{work}/npy/{name}.npy", "rb").read()[128:] == x.tobytes(), name
print("numpy loads all", len(names), "files; np.savez bytes identical")
EOF
