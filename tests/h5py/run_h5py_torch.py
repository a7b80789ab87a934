"""e2e_h5py_torch_{fork,spawn}: a PyTorch job of 2 ranks under the preload library, with the VOL
connector set, whose DataLoader workers (fork or spawn) read DLIO-style HDF5 files with h5py
(contiguous, and chunked with gzip): every batch of both epochs equals a run without Larder;
epoch 2 reads zero bytes from the PFS on every rank; the job read each byte of the files from
the PFS once; every process exits and nothing is left behind. In the workers the connector starts
no cache of its own (h5py sees its native driver there) and the preload library serves the reads
from their rank. Skipped (77) when h5py was not built."""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from e2e_util import PYTHON, Job, check, common_args, read_stats  # noqa: E402
from h5py_support import h5py_env_or_skip  # noqa: E402

WRITE = """
import sys, h5py, numpy as np
root = sys.argv[1]
rng = np.random.default_rng(17)
for name, kw in (("train_contig.h5", {}),
                 ("train_gzip.h5", {"chunks": (1, 32, 48), "compression": "gzip"})):
    with h5py.File(f"{root}/{name}", "w") as f:
        f.create_dataset("records", data=rng.integers(0, 256, (40, 32, 48), dtype="u1"), **kw)
        f.create_dataset("labels", data=np.arange(40, dtype="<i8") % 10)
"""


def main():
    parser = common_args(argparse.ArgumentParser())
    parser.add_argument("--context", choices=["fork", "spawn"], required=True)
    parser.add_argument("--h5py-dir", required=True)
    parser.add_argument("--plugin-dir", required=True)
    parser.add_argument("--pythonpath", required=True, help="the directory of `import larder`")
    args = parser.parse_args()
    pythonpath = h5py_env_or_skip(args.h5py_dir, HERE) + os.pathsep + args.pythonpath
    job = Job(args, f"h5py-torch-{args.context}")
    try:
        native_env = job.env(preload=False, extra={"PYTHONPATH": pythonpath})
        subprocess.run([PYTHON, "-c", WRITE, job.data], env=native_env, check=True, timeout=60)
        files = [os.path.join(job.data, n) for n in ("train_contig.h5", "train_gzip.h5")]
        total = sum(os.path.getsize(p) for p in files)
        script = os.path.join(HERE, "py_h5py_loader.py")
        ref = os.path.join(job.root, "ref.json")
        subprocess.run([PYTHON, script, ref, args.context, "reference", "2", *files],
                       env=native_env, check=True, timeout=120)
        expected = json.load(open(ref))

        stats = os.path.join(job.root, "stats.json")
        out = os.path.join(job.root, "out")
        env = job.env(stats=stats, extra={
            "PYTHONPATH": pythonpath, "HDF5_PLUGIN_PATH": args.plugin_dir,
            "HDF5_VOL_CONNECTOR": "larder under_vol=0;under_info={}",
            "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"})
        job.mpiexec(2, [PYTHON, script, out, args.context, "env", *files], env, timeout=150)
        results = [json.load(open(f"{out}.{r}")) for r in range(2)]
        check(all(results[r]["epochs"] == expected[str(r)] for r in range(2)),
              f"2 ranks, {args.context} workers: every batch of both epochs equals the run "
              "without Larder")
        check(all(len(e) > 0 for r in results for e in r["epochs"]), "every rank read batches")
        check(all(r["role"] == "rank" and r["worker_drivers"] == ["sec2"] for r in results),
              "the workers' h5py saw its native driver (the connector started no cache there)")
        check(all(r["pfs_bytes_epoch2"] == 0 for r in results),
              "epoch 2 read zero bytes from the PFS on every rank "
              f"({[r['pfs_bytes_epoch2'] for r in results]})")
        s = read_stats(stats)
        check(s["pfs"]["bytes_read"] == total and s["fallbacks"] == 0,
              f"the job read each byte of the files from the PFS once ({s['pfs']['bytes_read']} "
              f"of {total} B)")
        job.finish()
    finally:
        job.close()


if __name__ == "__main__":
    main()
