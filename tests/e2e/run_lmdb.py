"""e2e_lmdb: an LMDB environment (python3-lmdb) under a prefix, opened read-only by every rank
of 4 on 2 emulated nodes and by a forked worker of each, with map_size = 1 TiB over a file of a
few tens of MB (what data loaders pass). Under the preload the mapping is the node file's (a
mapping far longer than its file maps, as without Larder). Checks: every process reads every
key and value as the plain run does; the PFS was read once for the job; one node file per node."""
import argparse
import json
import os
import subprocess

from e2e_util import PYTHON, Job, check, common_args, read_stats

HERE = os.path.dirname(os.path.abspath(__file__))
RANKS = 4


def make_env(path):
    import lmdb
    import numpy as np
    rng = np.random.default_rng(17)
    env = lmdb.open(path, map_size=1 << 30)
    with env.begin(write=True) as txn:
        for i in range(20000):
            size = int(rng.integers(1, 4000))
            txn.put(f"sample-{i:06d}".encode(), rng.integers(0, 256, size, dtype=np.uint8).tobytes())
    env.sync()
    env.close()


def main():
    args = common_args(argparse.ArgumentParser()).parse_args()
    try:
        import lmdb  # noqa: F401
    except ImportError:
        print("python3-lmdb is not installed (scripts/setup.sh installs it): skipped")
        raise SystemExit(77)
    job = Job(args, "lmdb")
    try:
        env_dir = os.path.join(job.data, "train.lmdb")
        make_env(env_dir)
        data_bytes = sum(os.path.getsize(os.path.join(env_dir, n)) for n in os.listdir(env_dir))
        script = os.path.join(HERE, "py_lmdb.py")
        ref = os.path.join(job.root, "ref.json")
        subprocess.run([PYTHON, script, env_dir, ref], env=job.env(preload=False), check=True,
                       timeout=120)
        plain = json.load(open(ref))
        check(plain["entries"] == 20000, f"the plain run read {plain['entries']} entries")
        stats = os.path.join(job.root, "stats.json")
        out = os.path.join(job.root, "out")
        env = job.env(stats=stats, extra={"LARDER_NODE_SIZE": "2", "LARDER_MEM": "1G"})
        job.mpiexec(RANKS, [PYTHON, script, env_dir, out], job.python_env(env), timeout=180)
        for r in range(RANKS):
            got = json.load(open(f"{out}.{r}"))
            check(got["sha256"] == plain["sha256"] and got["entries"] == plain["entries"] and
                  got["worker"] == {"sha256": plain["sha256"], "entries": plain["entries"]},
                  f"rank {r} and its worker read every key and value as the plain run")
        s = read_stats(stats)
        print("node:", s["node"], "pfs:", s["pfs"])
        check(s["pfs"]["bytes_read"] <= data_bytes,
              f"the PFS was read once ({s['pfs']['bytes_read']} bytes of {data_bytes})")
        check(s["node"]["files"] == 2, f"one node file per node ({s['node']['files']})")
        job.finish()
    finally:
        job.close()


if __name__ == "__main__":
    main()
