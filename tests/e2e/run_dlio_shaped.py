"""e2e_dlio_shaped: a DLIO-shaped mpi4py training job under the preload ends by itself and its
stats are exact.

2 ranks: mpi4py bcast/allgather at start, a PyTorch DataLoader with 2 persistent forked workers
over npz files for 3 epochs (DistributedSampler), MPI.Finalize() at the end with the workers
still alive. The job must exit; app.bytes_read must be 3 x the bytes one epoch reads (counted in
a plain process reading every file the way np.load does), the latency histogram must hold every
read call, and pfs.bytes_read must be the dataset's size (read once). Before the fix the job hung
in MPI_Finalize, and app.bytes_read was 2.49 x the dataset for 3 epochs (workers sent their
counters every 256 reads)."""
import argparse
import io
import os
import subprocess

import numpy as np

from e2e_util import PYTHON, Job, check, common_args, read_stats

FILES = 16  # divisible by the 2 ranks: DistributedSampler pads nothing
EPOCHS = 3

TRAIN = """
import os, sys
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
            return torch.from_numpy(z['x'].copy())

def main():
    comm = MPI.COMM_WORLD
    comm.bcast({'config': 'unet3d-like'}, root=0)
    comm.allgather(comm.Get_rank())
    data = Npz(sys.argv[1])
    sampler = DistributedSampler(data, num_replicas=comm.Get_size(), rank=comm.Get_rank(),
                                 shuffle=True, seed=3)
    loader = DataLoader(data, batch_size=2, sampler=sampler, num_workers=2,
                        persistent_workers=True, multiprocessing_context='fork')
    for epoch in range(int(sys.argv[2])):
        sampler.set_epoch(epoch)
        for batch in loader:
            pass
        comm.barrier()
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
        job.finish()
    finally:
        job.close()


if __name__ == "__main__":
    main()
