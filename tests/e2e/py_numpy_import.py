"""One rank of e2e_python_numpy_import: imports a package tree that lives under the managed
prefix and numpy.load()s every npz file there, then writes what it saw (hashes) to <out>.<rank>.
It makes no MPI call: the preload library found the launcher and started the cache itself."""
import hashlib
import json
import os
import sys

import numpy as np

data, out = sys.argv[1], sys.argv[2]
rank = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
sys.path.insert(0, os.path.join(data, "pkgs"))

import lplpkg  # noqa: E402  (the package tree under the prefix)
from lplpkg.sub import mod2  # noqa: E402

result = {"pkg": lplpkg.VALUE, "mod2": mod2.checksum(), "tables": len(mod2.TABLE)}
npz = os.path.join(data, "npz")
for name in sorted(os.listdir(npz)):
    with np.load(os.path.join(npz, name)) as z:
        result[name] = {k: hashlib.sha1(z[k].tobytes()).hexdigest() for k in sorted(z.files)}
with open(f"{out}.{rank}", "w") as f:
    json.dump(result, f, sort_keys=True)
