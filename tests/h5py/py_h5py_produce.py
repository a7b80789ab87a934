"""One rank of e2e_h5py_produce: rank 0 writes the h5py zoo (h5py_files.py) into the produce
directory through h5py; every other rank digests it through the VOL connector, waiting for it
until it is published, and writes the digests as JSON.

    py_h5py_produce.py <out dir> <result prefix>       (writes <result prefix>.<rank>)"""
import json
import os
import sys

import h5py

from h5py_files import digest, write_h5py_zoo


def main():
    out, prefix = sys.argv[1:3]
    rank = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
    zoo = os.path.join(out, "h5py_zoo.h5")
    result = {"rank": rank}
    if rank == 0:
        write_h5py_zoo(zoo, os.path.join(out, "h5py_ext.h5"))
    else:
        result["digest"] = digest(zoo)  # opens it before it exists: waits for rank 0
        with h5py.File(zoo, "r") as f:
            result["driver"] = f.driver
    with open(f"{prefix}.{rank}", "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
