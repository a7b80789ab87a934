"""e2e_produce: files produced during the job (LARDER_PRODUCE; issue: write once, read many).
Runs py_produce.py in 4 ranks on 2 emulated nodes, once per mode (`local`, then `through`):
rank 0 and rank 1's workers produce files (awkward sizes, every write pattern, numpy, torch),
the ranks of the other node read them, half before they exist.

Checks: every byte the readers got is the producer's; readers that opened a file before it was
published got it whole after it was; a second producer gets EEXIST and a writer of a published
file EROFS; a worker that died while producing leaves the PFS's answer (ENOENT) to its readers;
inputs under LARDER_PREFIX are read from the PFS once; each produced file crosses to the other
node once (transport bytes); `local` writes nothing to the PFS (its produce directory stays
empty), `through` leaves every produced file there, whole, and no temporary names."""
import argparse
import json
import os
import zlib

from e2e_util import PYTHON, Job, check, common_args, read_stats

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
RANKS = 4
CHUNK = 64 << 10


def content(name, size):
    seed = zlib.crc32(name.encode())
    return np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8).tobytes()


def size_of(name):
    """The size in a produced file's name (<pattern>-<size>.bin)."""
    return int(name.rsplit("-", 1)[1].split(".")[0])


def run_mode(job, args, mode):
    out = os.path.join(job.data, "out")
    os.makedirs(out, exist_ok=True)
    scratch = os.path.join(job.root, "scratch-" + mode)
    os.makedirs(scratch, exist_ok=True)
    stats = os.path.join(job.root, f"stats-{mode}.json")
    prefix = os.path.join(job.root, "result-" + mode)
    env = job.env(stats=stats, extra={
        "LARDER_PRODUCE": out, "LARDER_PRODUCE_MODE": mode, "LARDER_NODE_SIZE": "2",
        "LARDER_MEM": "1G"})
    job.mpiexec(RANKS, [PYTHON, os.path.join(HERE, "py_produce.py"), job.data, scratch, prefix],
                job.python_env(env), timeout=300)
    results = {}
    for r in range(RANKS):
        with open(f"{prefix}.{r}") as f:
            results[r] = json.load(f)
    s = read_stats(stats)
    print(f"{mode}: produce {s['produce']}, pfs {s['pfs']}, transport bytes "
          f"{s['transport']['bytes']}")

    published = results[0]["published"]
    for r in (2, 3):
        checks = results[r]["checks"]
        bad = [n for n, c in checks.items() if not c["ok"]]
        check(not bad and len(checks) >= len(published) + 9,
              f"{mode}: rank {r} read {len(checks)} produced files and inputs, every byte the "
              f"producer's {bad or ''}")
        waited = [n for n, c in checks.items()
                  if "start" in c and n in published and c["start"] < published[n]]
        check(waited and all(checks[n]["end"] >= published[n] for n in waited),
              f"{mode}: rank {r} opened {len(waited)} files before they were published and got "
              f"each whole once it was")
        check(results[r]["writer_of_published"] == "EROFS",
              f"{mode}: writing a published file: {results[r]['writer_of_published']}")
        check(results[r]["dead"] == "ENOENT",
              f"{mode}: a worker that died while producing: its readers get the file system's "
              f"answer ({results[r]['dead']} after {results[r]['dead_seconds']:.1f} s)")
    check(results[1]["second_producer"] == "EEXIST",
          f"{mode}: a second producer of a file being produced: {results[1]['second_producer']}")
    check(results[1]["writer_of_published"] == "EROFS",
          f"{mode}: a second producer once it is published: {results[1]['writer_of_published']}")
    check(results[1]["dead_exit"] == -9, f"{mode}: the dying worker was killed")
    check(s["produce"]["waits"] > 0, f"{mode}: readers waited ({s['produce']['waits']} waits)")

    inputs = sum(5 * CHUNK + i for i in range(3))
    check(s["pfs"]["bytes_read"] == inputs,
          f"{mode}: the PFS was read for the inputs only, once ({s['pfs']['bytes_read']} bytes)")
    produced = s["produce"]["bytes"]
    # Files the other node read: every produced file but the sentinels and the dead one.
    check(0 < s["transport"]["bytes"] <= 1.05 * produced + inputs,
          f"{mode}: produced bytes crossed to the other node at most once "
          f"({s['transport']['bytes']} bytes for {produced} produced)")
    on_pfs = sorted(os.listdir(out))
    if mode == "local":
        check(s["produce"]["pfs_bytes"] == 0 and not on_pfs,
              f"local: nothing was written to the PFS ({on_pfs[:5]})")
    else:
        check(s["produce"]["pfs_bytes"] == produced,
              f"through: every produced byte was written to the PFS ({s['produce']['pfs_bytes']})")
        leftovers = [n for n in on_pfs if ".larder-" in n]
        check(not leftovers, f"through: no temporary names on the PFS {leftovers}")
        wrong = [n for n in published
                 if not os.path.exists(os.path.join(out, n)) or
                 open(os.path.join(out, n), "rb").read() != content(n, size_of(n))]
        check(not wrong,
              f"through: the PFS holds every produced file, whole {wrong}")
        for name in list(on_pfs):
            os.remove(os.path.join(out, name))


def main():
    args = common_args(argparse.ArgumentParser()).parse_args()
    job = Job(args, "produce")
    try:
        os.makedirs(os.path.join(job.data, "in"))
        for i in range(3):
            name = f"input-{i}.bin"
            with open(os.path.join(job.data, "in", name), "wb") as f:
                f.write(content(name, 5 * CHUNK + i))
        for mode in ("local", "through"):
            run_mode(job, args, mode)
        job.finish()
    finally:
        job.close()


if __name__ == "__main__":
    main()
