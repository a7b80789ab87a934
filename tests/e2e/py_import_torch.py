"""One rank of e2e_import_torch: `import torch` from the environment tree on PYTHONPATH, a small
tensor result, and what the import opened, as JSON in <out prefix>.<rank>:

    r:        the result
    objects:  the tree's shared objects this process maps (by their real file: /proc/self/maps)
    mapped_from_node_files: how many mappings are of node files (under LARDER_SHM_DIR)
    opened:   {path: size} of the tree's files the import used (mapped objects under the tree in
              the plain run; the Python files: the cached byte code when there is one)"""
import json
import os
import sys
import time

start = time.monotonic()
import torch  # noqa: E402

x = torch.arange(12.0).reshape(3, 4)
result = float((x @ x.T).sum())
seconds = time.monotonic() - start
tree = os.environ["LPL_TREE"]
shm = os.environ.get("LARDER_SHM_DIR", "/nonexistent")
maps = set()
with open("/proc/self/maps") as f:
    for line in f:
        p = line.split()[-1]
        if p.startswith("/"):
            maps.add(p)
opened = {p: os.path.getsize(p) for p in maps if p.startswith(tree + "/")}
for mod in list(sys.modules.values()):
    for attr in ("__cached__", "__file__"):
        p = getattr(mod, attr, None)
        if p and p.startswith(tree + "/") and os.path.exists(p):
            opened[p] = os.path.getsize(p)
            break
rank = os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
with open(f"{sys.argv[1]}.{rank}", "w") as f:
    json.dump({"r": result, "seconds": seconds, "opened": opened,
               "mapped_from_node_files": sum(p.startswith(shm) for p in maps)}, f)
