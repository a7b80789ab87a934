"""One rank of import_figure.py: times `import torch` (cold: the first in the job), then, with
--warm, the same import in a child process (warm: a second process of the node, as a DataLoader
worker or a later step would), and writes both to <out>.<rank> as JSON."""
import json
import os
import subprocess
import sys
import time

CHILD = "import time; t = time.monotonic(); import torch; print(time.monotonic() - t)"

start = time.monotonic()
import torch  # noqa: E402,F401

cold = time.monotonic() - start
warm = None
if "--warm" in sys.argv:
    done = subprocess.run([sys.executable, "-c", CHILD], check=True, capture_output=True, text=True)
    warm = float(done.stdout.strip().splitlines()[-1])
rank = os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
with open(f"{sys.argv[1]}.{rank}", "w") as f:
    json.dump({"cold": cold, "warm": warm}, f)
