"""One rank of e2e_h5py_torch_*: a PyTorch Dataset over DLIO-style HDF5 files read with h5py
(`records[i]`, `labels[i]`; each worker opens the files itself, the usual pattern),
DistributedSampler, DataLoader(num_workers=2) with the fork or spawn context, two epochs with a
barrier between them (gloo). Writes the hash of every batch, the bytes this rank's cache read
from the PFS during epoch 2 (the workers' reads are served by their rank, and count there; from
`import larder`), and the h5py driver the workers saw.

    py_h5py_loader.py <out prefix> <fork|spawn> <env|reference> [size] <file>...
'reference' runs without Larder and computes every rank's batches in one process."""
import hashlib
import json
import os
import sys

import h5py
import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class H5Samples(Dataset):
    def __init__(self, files):
        self.files = files
        self.index = []
        for n, path in enumerate(files):
            with h5py.File(path, "r") as f:  # closed again before the workers start
                self.index += [(n, i) for i in range(f["records"].shape[0])]
        self.handles = None

    def __len__(self):
        return len(self.index)

    def __getitem__(self, k):
        if self.handles is None:  # in the process that reads: each worker opens its own
            self.handles = [h5py.File(p, "r") for p in self.files]
        n, i = self.index[k]
        f = self.handles[n]
        return torch.from_numpy(f["records"][i]), int(f["labels"][i]), f.driver


def run_epochs(dataset, rank, size, make_loader, barrier, measure):
    sampler = DistributedSampler(dataset, num_replicas=size, rank=rank, shuffle=True, seed=3)
    loader = make_loader(sampler)
    seen, epoch2, drivers = [], None, set()
    for epoch in range(2):
        sampler.set_epoch(epoch)
        before = measure()
        hashes = []
        for x, y, driver in loader:
            hashes.append(hashlib.sha1(x.numpy().tobytes()).hexdigest() + ":" +
                          ",".join(str(int(v)) for v in y))
            drivers.update(driver)
        seen.append(hashes)
        barrier()
        if epoch == 1:
            epoch2 = measure() - before
    del loader
    return seen, epoch2, sorted(drivers)


def main():
    out, context, mode = sys.argv[1:4]
    if mode == "reference":
        size, files = int(sys.argv[4]), sys.argv[5:]
        dataset = H5Samples(files)
        result = {}
        for rank in range(size):
            result[rank], _, _ = run_epochs(
                dataset, rank, size,
                lambda s: DataLoader(dataset, batch_size=4, sampler=s, num_workers=0),
                lambda: None, lambda: 0)
        with open(out, "w") as f:
            json.dump(result, f)
        return
    import larder
    import torch.distributed as dist
    files = sys.argv[4:]
    dataset = H5Samples(files)
    rank = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
    size = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "1")))
    dist.init_process_group("gloo", init_method="file://" + out + ".store", rank=rank,
                            world_size=size)
    loader_for = lambda s: DataLoader(dataset, batch_size=4, sampler=s, num_workers=2,
                                      multiprocessing_context=context,
                                      persistent_workers=context == "spawn")
    seen, epoch2, drivers = run_epochs(dataset, rank, size, loader_for, dist.barrier,
                                       lambda: larder.stats()["pfs"]["bytes_read"])
    with open(f"{out}.{rank}", "w") as f:
        json.dump({"epochs": seen, "pfs_bytes_epoch2": epoch2, "role": larder.role(),
                   "worker_drivers": drivers}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
