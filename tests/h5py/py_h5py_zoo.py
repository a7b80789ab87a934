"""One rank of e2e_h5py_zoo_np*: digests every file twice with h5py (through the connector and
the cache in the job, natively in the reference run) and writes them as JSON.

    py_h5py_zoo.py <out> <file>...       (out: <out>.<rank> in a job, <out> in the reference)"""
import json
import os
import sys

import h5py

from h5py_files import digest


def main():
    out, files = sys.argv[1], sys.argv[2:]
    rank = os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK"))
    epochs = [{os.path.basename(p): digest(p) for p in files} for _ in range(2)]
    with h5py.File(files[0], "r") as f:
        driver = f.driver  # "unknown": the connector's cache driver; "sec2" natively
    with open(out if rank is None else f"{out}.{rank}", "w") as f:
        json.dump({"epochs": epochs, "driver": driver}, f)


if __name__ == "__main__":
    main()
