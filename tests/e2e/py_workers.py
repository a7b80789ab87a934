"""One rank of e2e_workers: a dataset of small files (an ImageFolder's shape: class directories
listed by the rank), a DistributedSampler and a DataLoader whose workers open and read each file
(fork, spawn or forkserver; not persistent, so every epoch starts new workers, which know
nothing). Writes, per epoch, the sha1 of every file the workers read, and how many requests the
rank's agent served its workers in that epoch (stat answers, chunk places, reads): the node's
answers are in its table, so a warm epoch should need none.

    py_workers.py <data dir> <out prefix> <fork|spawn|forkserver> <epochs> [persistent]

With LPL_SAMPLER=larder the sampler is larder.torch.DistributedSampler, shuffled (e2e_told_order):
the same files for the ranks as torch's, each epoch's order handed to Larder at set_epoch.
"""
import hashlib
import json
import os
import sys
import time

import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

import larder


class Files(Dataset):
    def __init__(self, root):
        self.files = []
        for d in sorted(os.listdir(root)):
            sub = os.path.join(root, d)
            self.files += [os.path.join(sub, n) for n in sorted(os.listdir(sub))]

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        with open(self.files[i], "rb") as f:
            data = f.read()
        return os.path.relpath(self.files[i], os.path.dirname(os.path.dirname(self.files[i]))), \
            hashlib.sha1(data).hexdigest()


def collate(batch):
    return batch


def requests():
    w = larder.stats().get("workers", {})
    return {k: w.get(k, 0) for k in ("lookups", "places", "reads", "answers_found",
                                     "places_found")}


def main():
    data, out, context, epochs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    persistent = len(sys.argv) > 5 and sys.argv[5] == "persistent"
    rank = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
    size = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "1")))
    dist.init_process_group("gloo", init_method="file://" + out + ".store", rank=rank,
                            world_size=size)
    dataset = Files(data)
    if os.environ.get("LPL_SAMPLER") == "larder":
        from larder.torch import DistributedSampler as Told  # the one changed line

        sampler = Told(dataset, num_replicas=size, rank=rank, shuffle=True, seed=49,
                       paths=dataset.files)
    else:
        # The same files for a rank every epoch (no shuffle): from the second epoch on, every
        # file a node's workers read is one the node read before.
        sampler = DistributedSampler(dataset, num_replicas=size, rank=rank, shuffle=False)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler, num_workers=2,
                        multiprocessing_context=context, persistent_workers=persistent,
                        collate_fn=collate)
    result = {"epochs": [], "requests": []}
    pause = float(os.environ.get("LPL_EPOCH_PAUSE", "0"))
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        if epoch > 0 and pause > 0:
            time.sleep(pause)  # answers age past LARDER_REVALIDATE (the test of renewals)
        dist.barrier()
        before = requests()
        seen = {}
        for batch in loader:
            seen.update(dict(batch))
        dist.barrier()  # every rank's workers are done before the counters are read
        after = requests()
        result["epochs"].append(seen)
        result["requests"].append({k: after[k] - before[k] for k in after})
    del loader
    with open(f"{out}.{rank}", "w") as f:
        json.dump(result, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
