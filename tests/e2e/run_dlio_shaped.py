"""e2e_dlio_shaped: a DLIO-shaped mpi4py training job under the preload ends by itself and its
stats are exact.

2 ranks: mpi4py bcast/allgather at start, a PyTorch DataLoader with 2 persistent forked workers
over npz files for 3 epochs (DistributedSampler), MPI.Finalize() at the end with the workers
still alive. The job must exit; app.bytes_read must be 3 x the bytes one epoch reads (counted in
a plain process reading every file the way np.load does), the latency histogram must hold every
read call, and pfs.bytes_read must be the dataset's size (read once). Before the fix the job hung
in MPI_Finalize, and app.bytes_read was 2.49 x the dataset for 3 epochs (workers sent their
counters every 256 reads).

Then the job restarted as the next steps of one allocation (LARDER_KEEP, as after a failure and
a restart from a checkpoint), 4 ranks on 2 emulated nodes, one epoch each: the first step reads
the dataset from the PFS once, the restarted step's epoch reads no byte from it, and every
sample each rank's loader returns equals the file's own array."""
import argparse
import hashlib
import io
import os
import subprocess

import numpy as np

from e2e_util import PYTHON, Job, check, common_args, fail, read_stats

FILES = 16  # divisible by the 2 ranks: DistributedSampler pads nothing
EPOCHS = 3

TRAIN = """
import hashlib, os, sys
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from mpi4py import MPI

class Npz(Dataset):
    def __init__(self, root):
        self.files = [os.path.join(root, n) for n in sorted(os.listdir(root))]
    def __len__(self):
        return len(self.files)
    def __getitem__(self, i):
        with np.load(self.files[i]) as z:
            return i, torch.from_numpy(z['x'].copy())

def main():
    comm = MPI.COMM_WORLD
    comm.bcast({'config': 'unet3d-like'}, root=0)
    comm.allgather(comm.Get_rank())
    data = Npz(sys.argv[1])
    sampler = DistributedSampler(data, num_replicas=comm.Get_size(), rank=comm.Get_rank(),
                                 shuffle=True, seed=3)
    loader = DataLoader(data, batch_size=2, sampler=sampler, num_workers=2,
                        persistent_workers=True, multiprocessing_context='fork')
    seen = {}
    for epoch in range(int(sys.argv[2])):
        sampler.set_epoch(epoch)
        for index, batch in loader:
            for i, x in zip(index.tolist(), batch):
                seen[i] = hashlib.sha1(x.numpy().tobytes()).hexdigest()
        comm.barrier()
    if len(sys.argv) > 3:  # the samples this rank was given, for the test to compare
        with open(sys.argv[3] + '.' + str(comm.Get_rank()), 'w') as f:
            f.write(''.join(f'{i} {h}\\n' for i, h in sorted(seen.items())))
    MPI.Finalize()  # the persistent workers are still alive here

if __name__ == '__main__':
    main()
"""

COUNT = """
import io, os, sys
import numpy as np

class Counting(io.FileIO):
    total = 0
    def readinto(self, b):
        n = super().readinto(b)
        Counting.total += n or 0
        return n
    def readall(self):
        data = super().readall()
        Counting.total += len(data)
        return data

root = sys.argv[1]
for n in sorted(os.listdir(root)):
    path = os.path.join(root, n)
    size = os.stat(path).st_blksize
    raw = Counting(path, 'r')
    with io.BufferedReader(raw, buffer_size=size if size > 1 else io.DEFAULT_BUFFER_SIZE) as f:
        with np.load(f) as z:
            z['x'].copy()
print(Counting.total)
"""


def restart(job, train, size):
    """The job as two steps of one allocation: the restarted step's epoch reads nothing from the
    PFS, and every sample equals the file's own array."""
    want = {}
    for i, name in enumerate(sorted(os.listdir(job.data))):
        with np.load(os.path.join(job.data, name)) as z:
            want[i] = hashlib.sha1(z["x"].tobytes()).hexdigest()
    ranks = 4
    for step in (1, 2):
        stats = os.path.join(job.root, f"restart-{step}.json")
        out = os.path.join(job.root, f"samples-{step}")
        env = job.env(stats=stats, extra={"OMP_NUM_THREADS": "1", "LARDER_KEEP": "restart",
                                          "LARDER_NODE_SIZE": "2"})
        proc = job.mpiexec(ranks, [PYTHON, train, job.data, "1", out], env, timeout=120,
                           check=False)
        check(proc.returncode == 0, f"restart step {step} ended by itself ({proc.returncode})")
        seen = {}
        for r in range(ranks):
            with open(f"{out}.{r}") as f:
                for line in f:
                    i, h = line.split()
                    if h != want[int(i)]:
                        fail(f"restart step {step}: rank {r} got other bytes for sample {i}")
                    seen[int(i)] = h
        check(len(seen) == FILES, f"restart step {step}: every sample, each equal to its file's")
        s = read_stats(stats)
        kept = s.get("kept", {})
        print(f"restart step {step}: pfs {s['pfs']['bytes_read']} B, from earlier steps "
              f"{kept.get('bytes_adopted')} B, kept {kept.get('bytes_kept')} B", flush=True)
        if step == 1:
            check(s["pfs"]["bytes_read"] == size,
                  f"restart step 1 read the dataset from the PFS once ({size} B)")
        else:
            check(s["pfs"]["bytes_read"] == 0 and kept.get("bytes_adopted", 0) >= size,
                  "the restarted step's epoch read no byte from the PFS "
                  f"({s['pfs']['bytes_read']} B; {kept.get('bytes_adopted')} B from step 1)")


def main():
    args = common_args(argparse.ArgumentParser()).parse_args()
    job = Job(args, "dlio")
    try:
        rng = np.random.default_rng(5)
        for i in range(FILES):
            np.savez(os.path.join(job.data, f"img_{i:03d}.npz"),
                     x=rng.standard_normal((64, 100)).astype(np.float32))
        size = sum(os.path.getsize(os.path.join(job.data, n)) for n in os.listdir(job.data))
        counter = os.path.join(job.root, "count.py")
        with open(counter, "w") as f:
            f.write(COUNT)
        per_epoch = int(subprocess.run([PYTHON, counter, job.data], env=job.env(preload=False),
                                       stdout=subprocess.PIPE, text=True, check=True,
                                       timeout=60).stdout)
        train = os.path.join(job.root, "train.py")
        with open(train, "w") as f:
            f.write(TRAIN)
        stats = os.path.join(job.root, "stats.json")
        env = job.env(stats=stats, extra={"OMP_NUM_THREADS": "1"})
        proc = job.mpiexec(2, [PYTHON, train, job.data, str(EPOCHS)], env, timeout=120,
                           check=False)
        check(proc.returncode == 0, f"the job ended by itself ({proc.returncode})")
        s = read_stats(stats)
        check(s["app"]["bytes_read"] == EPOCHS * per_epoch,
              f"app.bytes_read {s['app']['bytes_read']} == {EPOCHS} x {per_epoch} "
              f"({s['app']['bytes_read'] / per_epoch:.2f} epochs)")
        check(s["latency"]["reads"] == s["app"]["read_calls"] > 0,
              f"the latency histogram holds every read ({s['latency']['reads']} of "
              f"{s['app']['read_calls']})")
        check(s["pfs"]["bytes_read"] == size,
              f"pfs.bytes_read {s['pfs']['bytes_read']} == the dataset ({size})")
        print(f"figures: {FILES} files, {size} bytes; per epoch {per_epoch} bytes read; "
              f"app {s['app']['bytes_read']}, pfs {s['pfs']['bytes_read']}, hits self/node "
              f"{s['hits']['self']}/{s['hits']['node']}, reads {s['app']['read_calls']}")
        restart(job, train, size)
        job.check_clean_except_kept()
        check(True, "no processes or job files left")
    finally:
        job.close()


if __name__ == "__main__":
    main()
