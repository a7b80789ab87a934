"""One rank of e2e_mmap: numpy.load(..., mmap_mode='r') of every .npy file under the managed
prefix (numpy maps them with Python's mmap module: open, fstat, dup, mmap of the descriptor),
and writes what it saw (type, shape, dtype, a hash of the bytes) to <out>.<rank>."""
import hashlib
import json
import os
import sys

import numpy as np

data, out = sys.argv[1], sys.argv[2]
rank = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
result = {}
for name in sorted(os.listdir(data)):
    if not name.endswith(".npy"):
        continue
    a = np.load(os.path.join(data, name), mmap_mode="r")
    result[name] = {"memmap": isinstance(a, np.memmap), "shape": list(a.shape),
                    "dtype": str(a.dtype), "sha1": hashlib.sha1(a.tobytes()).hexdigest(),
                    "tail": float(a.reshape(-1)[-1])}
    del a
with open(f"{out}.{rank}", "w") as f:
    json.dump(result, f, sort_keys=True)
