"""One rank of e2e_python_handle: `import larder` under the preload library, reads managed files,
stages a tree, and records what larder reported against what it read.

    py_larder_handle.py <data dir> <out prefix>
Writes <out prefix>.<rank> (JSON)."""
import hashlib
import json
import multiprocessing
import os
import sys

import larder


def read_whole(path, chunk=50_000):
    """Reads `path` in pieces with os.read; returns (bytes, read calls, the last one at EOF)."""
    data, calls = bytearray(), 0
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            piece = os.read(fd, chunk)
            calls += 1
            if not piece:
                break
            data += piece
    finally:
        os.close(fd)
    return bytes(data), calls


def main():
    data, out = sys.argv[1:3]
    rank = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
    size = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "1")))
    result = {"role": larder.role(), "active": larder.active(), "library": larder.library,
              "managed": larder.is_managed(os.path.join(data, "shared.bin")),
              "unmanaged": larder.is_managed("/etc/hostname")}
    before = larder.stats()
    mine = sorted(n for n in os.listdir(data) if n.startswith("part_"))[rank::size] + ["shared.bin"]
    read_bytes = read_calls = 0
    digests = {}
    for name in mine:
        blob, calls = read_whole(os.path.join(data, name))
        read_bytes += len(blob)
        read_calls += calls
        digests[name] = hashlib.sha256(blob).hexdigest()
    after = larder.stats()
    result["read_bytes"] = read_bytes
    result["read_calls"] = read_calls
    result["app_bytes"] = after["app"]["bytes_read"] - before["app"]["bytes_read"]
    result["app_calls"] = after["app"]["read_calls"] - before["app"]["read_calls"]
    result["rank_stats_ranks"] = after["ranks"]
    result["digests"] = digests
    result["stage"] = larder.stage([os.path.join(data, "tree")])
    result["job"] = larder.stats(job=True)  # collective
    result["summary_rank"] = larder.summary()
    result["summary_job"] = larder.summary(job=True)  # collective
    workers = {}
    for context in ("fork", "spawn"):
        with multiprocessing.get_context(context).Pool(1) as pool:
            workers[context] = pool.apply(worker_report, (os.path.join(data, "shared.bin"),))
    result["workers"] = workers
    with open(f"{out}.{rank}", "w") as f:
        json.dump(result, f)


def worker_report(path):
    """In a worker process of the rank (fork or spawn): its rank's cache serves its reads, and
    the counters are the rank's."""
    try:
        larder.stats()
        error = None
    except larder.LarderError as e:
        error = e.name
    with open(path, "rb") as f:
        size = len(f.read())
    return {"role": larder.role(), "active": larder.active(), "stats_error": error, "read": size}


if __name__ == "__main__":
    main()
