"""e2e_torch_*: the PyTorch DataLoader job (py_torch_loader.py) under mpiexec with the preload:
every batch of both epochs equals a run without the preload, epoch 2 reads zero bytes from the
file system on every rank, every process exits, and no Larder file is left behind."""
import argparse
import json
import os
import subprocess

import numpy as np

from e2e_util import PYTHON, Job, check, common_args, read_stats

HERE = os.path.dirname(os.path.abspath(__file__))


def make_data(root, files=24):
    rng = np.random.default_rng(11)
    for i in range(files):
        np.savez(os.path.join(root, f"item_{i:03d}.npz"),
                 x=rng.standard_normal((64, 96)).astype(np.float32), y=np.array([i % 10]))


def main():
    parser = common_args(argparse.ArgumentParser())
    parser.add_argument("--np", type=int, required=True)
    parser.add_argument("--context", choices=["fork", "spawn"], required=True)
    parser.add_argument("--mode", choices=["env", "mpi4py"], default="env")
    args = parser.parse_args()
    job = Job(args, f"torch-{args.context}-{args.np}")
    try:
        make_data(job.data)
        script = os.path.join(HERE, "py_torch_loader.py")
        ref = os.path.join(job.root, "ref.json")
        subprocess.run([PYTHON, script, job.data, ref, args.context, "reference", str(args.np)],
                       env=job.env(preload=False), check=True, timeout=120)
        expected = json.load(open(ref))
        out = os.path.join(job.root, "out")
        stats_path = os.path.join(job.root, "stats.json")
        env = job.env(stats=stats_path, extra={"GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"})
        job.mpiexec(args.np, [PYTHON, script, job.data, out, args.context, args.mode], env,
                    timeout=150)
        results = [json.load(open(f"{out}.{r}")) for r in range(args.np)]
        check(all(results[r]["epochs"] == expected[str(r)] for r in range(args.np)),
              f"{args.np} ranks, {args.context}: every batch of both epochs equals the run "
              "without the preload")
        check(all(len(e) > 0 for r in results for e in r["epochs"]), "every rank read batches")
        check(all(r["pfs_bytes_epoch2"] == 0 for r in results),
              "epoch 2 read zero bytes from the file system on every rank "
              f"({[r['pfs_bytes_epoch2'] for r in results]})")
        # The rank listed the directory, so every small file's stat answer and place were on its
        # node when a worker opened the file: the worker found them in the node's table (or, for
        # an answer not published yet, they came together in one request), and read the file
        # without asking for its place.
        w = read_stats(stats_path).get("workers", {})
        print(f"workers: {w}", flush=True)
        known = w.get("answers_found", 0) + w.get("places_sent", 0)
        check(known > 0 and w.get("places", 0) < known,
              f"the workers' files came with their places ({w})")
        job.check_clean()
        check(True, "all processes exited and no larder files are left")
    finally:
        job.close()


if __name__ == "__main__":
    main()
