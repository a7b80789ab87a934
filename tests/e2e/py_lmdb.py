"""One rank of e2e_lmdb: opens an LMDB environment read-only the way data loaders do
(lock=False, readonly=True, map_size = 1 TiB: far longer than the file), reads every value, and
writes the digest of all keys and values, and the count, as JSON; a forked worker does the same.

    py_lmdb.py <env dir> <out prefix>        (writes <out prefix>.<rank>)"""
import hashlib
import json
import multiprocessing
import os
import sys

import lmdb


def digest(env_dir):
    env = lmdb.open(env_dir, readonly=True, lock=False, map_size=1 << 40, readahead=False)
    h = hashlib.sha256()
    n = 0
    with env.begin(buffers=True) as txn:
        for key, value in txn.cursor():
            h.update(bytes(key))
            h.update(bytes(value))
            n += 1
    env.close()
    return {"sha256": h.hexdigest(), "entries": n}


def worker(env_dir, queue):
    queue.put(digest(env_dir))


def main():
    env_dir, out = sys.argv[1:3]
    rank = os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK"))
    result = digest(env_dir)
    queue = multiprocessing.get_context("fork").Queue()
    p = multiprocessing.get_context("fork").Process(target=worker, args=(env_dir, queue))
    p.start()
    result["worker"] = queue.get()
    p.join()
    with open(out if rank is None else f"{out}.{rank}", "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
