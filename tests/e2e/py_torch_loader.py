"""One rank of the PyTorch tests: a Dataset over npz files, DistributedSampler (rank and size
from the launcher's environment, or from mpi4py), DataLoader(num_workers=2) with the fork or the
spawn context, two epochs with a barrier between them (gloo, or MPI with mpi4py). Writes the
hash of every batch and the file-system bytes this rank's cache read during epoch 2 (the
workers' reads are served by their rank, so they count there).

    py_torch_loader.py <data dir> <out prefix> <fork|spawn> <env|mpi4py|reference> [size]
'reference' runs without Larder and computes every rank's batches in one process."""
import ctypes
import hashlib
import json
import os
import sys

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class NpzDataset(Dataset):
    def __init__(self, root):
        self.files = [os.path.join(root, n) for n in sorted(os.listdir(root))]

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        with np.load(self.files[i]) as z:
            return torch.from_numpy(z["x"].copy()), int(z["y"][0])


def pfs_bytes():
    class Stats(ctypes.Structure):
        _fields_ = [(n, ctypes.c_uint64) for n in (
            "pfs_bytes_read", "pfs_read_ops", "pfs_stat_ops", "pfs_list_ops", "hits_self",
            "hits_node", "hits_remote", "misses", "fallbacks", "transport_bytes")]
    lib = ctypes.CDLL(None)
    s = Stats()
    if lib.larder_stats_get(ctypes.byref(s)) != 0:
        raise SystemExit("larder is not running in this rank")
    return s.pfs_bytes_read


def run_epochs(dataset, rank, size, make_loader, barrier, measure):
    sampler = DistributedSampler(dataset, num_replicas=size, rank=rank, shuffle=True, seed=7)
    loader = make_loader(sampler)
    seen, epoch2 = [], None
    for epoch in range(2):
        sampler.set_epoch(epoch)
        before = measure()
        hashes = []
        for x, y in loader:
            hashes.append(hashlib.sha1(x.numpy().tobytes()).hexdigest() + ":" +
                          ",".join(str(int(v)) for v in y))
        seen.append(hashes)
        barrier()  # every rank has read its epoch before anyone measures or goes on
        if epoch == 1:
            epoch2 = measure() - before
    del loader  # shuts its workers down
    return seen, epoch2


def main():
    data, out, context, mode = sys.argv[1:5]
    dataset = NpzDataset(data)
    if mode == "reference":
        size = int(sys.argv[5])
        result = {}
        for rank in range(size):
            result[rank], _ = run_epochs(
                dataset, rank, size,
                lambda s: DataLoader(dataset, batch_size=4, sampler=s, num_workers=0),
                lambda: None, lambda: 0)
        with open(out, "w") as f:
            json.dump(result, f)
        return
    persistent = context == "spawn"  # spawned workers start Python and torch: keep them
    loader_for = lambda s: DataLoader(dataset, batch_size=4, sampler=s, num_workers=2,
                                      multiprocessing_context=context,
                                      persistent_workers=persistent)
    if mode == "mpi4py":
        from mpi4py import MPI  # here, not at the top: spawned workers import this module
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        barrier = comm.Barrier
    else:
        import torch.distributed as dist
        rank = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
        size = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "1")))
        dist.init_process_group("gloo", init_method="file://" + out + ".store",
                                rank=rank, world_size=size)
        barrier = dist.barrier
    seen, epoch2 = run_epochs(dataset, rank, size, loader_for, barrier, pfs_bytes)
    with open(f"{out}.{rank}", "w") as f:
        json.dump({"epochs": seen, "pfs_bytes_epoch2": epoch2}, f)
    if mode != "mpi4py":
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
