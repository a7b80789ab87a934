"""One rank of the producer-consumer pipeline (run_pipeline.py launches it under mpiexec).

Ranks on even emulated nodes are producers (a "simulation"): each writes SAMPLES numpy arrays,
deterministic from the seed, to OUT/sample_<rank>_<i>.npy, sleeping DELAY seconds before each
(its compute). Ranks on odd nodes are consumers (ensemble "training"): each trains its own tiny
model on every sample, in production order, through a DataLoader with 2 forked workers, and
checks every sample's bytes against the seed.

--mode larder: the program writes and reads the files as if they were complete, and Larder
(LD_PRELOAD, LARDER_PRODUCE=OUT) makes an open of a sample not yet published wait until it is.
--mode plain: no Larder; a producer writes a hidden temporary file and renames it, a consumer
polls for the name, so it never reads a partial file.

No MPI calls here: the preload starts MPI itself, and the plain run needs none. Each rank
writes RESULTS/rank_<rank>.json with its role, times and counts.
"""
import argparse
import io
import json
import os
import time

import numpy as np

FEATURES = 64  # a sample is ROWS x (FEATURES inputs + 1 target), float32


def launch_rank():
    """This process's rank and the job's size, from MPICH's or Open MPI's launcher."""
    for rank, size in (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")):
        if rank in os.environ:
            return int(os.environ[rank]), int(os.environ[size])
    raise SystemExit("pipeline.py: no PMI_RANK or OMPI_COMM_WORLD_RANK; run it under mpiexec")


def roles(size, node_size):
    """Producer and consumer ranks: even emulated nodes produce, odd ones consume."""
    if size <= node_size:
        raise ValueError(f"{size} ranks fill one node of {node_size}; the pipeline needs a "
                         "producer node and a consumer node")
    producers = [r for r in range(size) if (r // node_size) % 2 == 0]
    consumers = [r for r in range(size) if (r // node_size) % 2 == 1]
    return producers, consumers


def sample_path(out, producer, i):
    return os.path.join(out, f"sample_{producer}_{i}.npy")


def rows_for(sample_kib):
    return max(1, sample_kib * 1024 // ((FEATURES + 1) * 4))


def sample_array(seed, producer, i, rows):
    """Sample i of `producer`: inputs, and a target that a linear model can learn."""
    weights = np.random.default_rng(seed).standard_normal(FEATURES).astype(np.float32)
    x = np.random.default_rng([seed, producer, i]).standard_normal((rows, FEATURES),
                                                                   dtype=np.float32)
    return np.hstack([x, (x @ weights)[:, None]])


def npy_bytes(array):
    """The file np.save writes for `array`: what a consumer must read back, byte for byte."""
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def save(path, array, via_rename):
    """Writes `array` to `path`; returns the bytes written. Under Larder the file is published at
    its close. Without it a consumer could open a file still being written, so the plain mode
    writes a hidden name and renames it (atomic on the same file system)."""
    target = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.tmp") \
        if via_rename else path
    with open(target, "wb") as f:
        np.save(f, array)
        size = f.tell()
    if via_rename:
        os.rename(target, path)
    return size


def produce(args, rank):
    written, write_s = 0, []
    for i in range(args.samples):
        time.sleep(args.delay)
        array = sample_array(args.seed, rank, i, args.rows)
        t0 = time.monotonic()
        written += save(sample_path(args.out, rank, i), array, via_rename=args.mode == "plain")
        write_s.append(time.monotonic() - t0)
    # The first write apart: under Larder it also waits for the runtime to finish starting.
    return {"samples": args.samples, "bytes_written": written, "write_s": sum(write_s),
            "first_write_s": write_s[0] if write_s else 0.0}


def wait_for(path, poll):
    """Plain mode's wait: the name appears (atomically, by rename) once the file is complete."""
    while not os.path.exists(path):
        time.sleep(poll)


class Samples:
    """Every producer's samples, interleaved in the order they are produced: a map-style dataset
    (no torch here; the DataLoader's collate turns the arrays and numbers into tensors)."""

    def __init__(self, args, producers):
        self.args, self.producers = args, producers

    def __len__(self):
        return len(self.producers) * self.args.samples

    def __getitem__(self, k):
        args = self.args
        producer, i = self.producers[k % len(self.producers)], k // len(self.producers)
        path = sample_path(args.out, producer, i)
        t0 = time.monotonic()
        if args.mode == "plain":
            wait_for(path, args.poll)
        with open(path, "rb") as f:
            data = f.read()
        waited = time.monotonic() - t0
        expected = sample_array(args.seed, producer, i, args.rows)
        ok = data == npy_bytes(expected)
        # A damaged sample is counted and replaced by the true one, so that the run reports
        # every mismatch instead of stopping at the first.
        array = np.load(io.BytesIO(data)) if ok else expected
        return array[:, :FEATURES], array[:, FEATURES], waited, int(not ok), len(data)


def train(model, opt, x, y, steps):
    import torch

    for _ in range(steps):
        loss = torch.nn.functional.mse_loss(model(x.reshape(-1, FEATURES)).squeeze(-1),
                                            y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return float(loss)


def consume(args, rank, producers, chatty):
    import torch
    from torch.utils.data import DataLoader

    torch.set_num_threads(1)  # the ranks and their workers share the cores
    dataset = Samples(args, producers)
    loader = DataLoader(dataset, batch_size=args.batch, num_workers=2,
                        multiprocessing_context="fork")
    torch.manual_seed(rank)  # each consumer is its own ensemble member
    model = torch.nn.Linear(FEATURES, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    totals = {"samples": 0, "read_wait_s": 0.0, "stall_s": 0.0, "mismatches": 0, "bytes_read": 0,
              "final_loss": None}
    t_next = time.monotonic()
    for x, y, waited, bad, nbytes in loader:
        totals["stall_s"] += time.monotonic() - t_next
        totals["final_loss"] = train(model, opt, x, y, args.steps)
        before = totals["samples"]
        totals["samples"] += len(bad)
        totals["read_wait_s"] += float(waited.sum())
        totals["mismatches"] += int(bad.sum())
        totals["bytes_read"] += int(nbytes.sum())
        if chatty and passed_quarter(before, totals["samples"], len(dataset)):
            print(f"  consumer rank {rank}: {totals['samples']}/{len(dataset)} samples", flush=True)
        t_next = time.monotonic()
    return totals


def passed_quarter(before, after, total):
    """True when going from `before` to `after` of `total` passes a quarter (progress lines)."""
    return 4 * after // total > 4 * before // total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=["plain", "larder"], required=True)
    ap.add_argument("--out", required=True, help="the produce directory (shared file system)")
    ap.add_argument("--results", required=True, help="directory for rank_<rank>.json")
    ap.add_argument("--samples", type=int, default=32, help="samples per producer")
    ap.add_argument("--sample-kib", type=int, default=256)
    ap.add_argument("--delay", type=float, default=0.1, help="producer compute per sample, s")
    ap.add_argument("--node-size", type=int, default=2, help="ranks per emulated node")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--steps", type=int, default=3, help="training steps per batch")
    ap.add_argument("--poll", type=float, default=0.01, help="plain mode's poll interval, s")
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args()
    args.rows = rows_for(args.sample_kib)
    rank, size = launch_rank()
    try:
        producers, consumers = roles(size, args.node_size)
    except ValueError as e:
        raise SystemExit(f"pipeline.py: {e}")
    if rank in consumers:
        import torch  # noqa: F401  before the clock starts: the import is not the pipeline's time
    start = time.time()
    if rank in producers:
        result = dict(role="producer", **produce(args, rank))
    else:
        # Only the first consumer reports progress: one line per quarter is enough.
        result = dict(role="consumer", **consume(args, rank, producers, rank == consumers[0]))
    end = time.time()
    result.update(rank=rank, start=start, end=end, total_s=end - start)
    with open(os.path.join(args.results, f"rank_{rank}.json"), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
