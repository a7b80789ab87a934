"""The train.py the user guide's sbatch script runs in e2e_slurm: PyTorch as users write it under
Slurm (rank and world size from SLURM_PROCID and SLURM_NTASKS, torch.distributed with env://,
a DistributedSampler, DataLoader workers), over npz files; two epochs. Writes the hash of every
batch to <out>.<rank>.

    train.py <data dir> <out>              (a task of the job)
    train.py <data dir> <out> reference N  (no Slurm: every rank's batches, in one process)"""
import hashlib
import json
import os
import sys

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class NpzFiles(Dataset):
    def __init__(self, root):
        self.files = [os.path.join(root, n) for n in sorted(os.listdir(root)) if n.endswith(".npz")]

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        with np.load(self.files[i]) as z:
            return torch.from_numpy(z["x"].copy()), int(z["y"][0])


def epochs(dataset, rank, world, workers, barrier):
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=5)
    loader = DataLoader(dataset, batch_size=3, sampler=sampler, num_workers=workers)
    seen = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        seen.append([hashlib.sha1(x.numpy().tobytes()).hexdigest() + ":" +
                     ",".join(str(int(v)) for v in y) for x, y in loader])
        barrier()
    return seen


def main():
    data, out = sys.argv[1:3]
    dataset = NpzFiles(data)
    if len(sys.argv) > 3 and sys.argv[3] == "reference":
        world = int(sys.argv[4])
        with open(out, "w") as f:
            json.dump({r: epochs(dataset, r, world, 0, lambda: None) for r in range(world)}, f)
        return
    import torch.distributed as dist
    rank, world = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world)
    seen = epochs(dataset, rank, world, 2, dist.barrier)
    with open(f"{out}.{rank}", "w") as f:
        json.dump({"epochs": seen, "master": os.environ["MASTER_ADDR"]}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
