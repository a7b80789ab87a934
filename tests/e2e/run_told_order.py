"""e2e_told_order: larder.torch.DistributedSampler end to end. 4 ranks on 2 emulated nodes read a
tree of small files (and a few of several chunks) through a DataLoader of 2 workers (fork, then
spawn), 2 epochs, shuffled, with the sampler that hands each epoch's order to Larder at
set_epoch (larder_schedule). Checks: every file the workers read has the bytes a direct read
gives, in every epoch; the ranks read every file (the sampler's indices cover the dataset); the
PFS served each byte once for the job; every rank handed its epochs' orders (prefetch.entries:
this epoch's and the next one's, at each set_epoch) and the schedule made chunks ready on their
node (prefetch.chunks) and reads found them ready there (prefetch.ready); nothing fell back to
the PFS; the bytes made ready that no read of their node used (prefetch.unused_bytes, marked by
the workers' reads) are at most those only the never-read next epoch names. Every process exits
and no Larder file is left.

The context `fork-half` runs fork workers with the job's memory half the dataset (LARDER_MEM a
quarter of it per node, no disk tier): the schedule fills the budget, and the chunks no rank has
room for are read ahead into the ranks' stages (LARDER_PREFETCH_STAGE) and handed to the
workers' reads through their rank. Checks: the bytes, every file read; reads took chunks from the
stages (prefetch.staged_reads); the PFS served at most the dataset per epoch, plus what was
fetched ahead and never read (prefetch.unused_bytes: the next epoch's order).

With --pfs-script (scripts/pfs/pfs.sh) and root, the tree is served over the shaped PFS: an sshfs
mount through a 1 Gbit/s link with 0.25 ms each way (--delay), so every stat, open and read is a
network round trip; the mount, its server and its namespaces are removed at the end, also on
failure. Without root or sshfs the tree stays on the local disk, and the test says so. (The
ImageFolder benchmark measures the same path for time: benchmarks.md.)"""
import argparse
import json
import os
import shutil
import subprocess

from e2e_util import PYTHON, Job, check, common_args, read_stats
from run_workers import RANKS, make_data

HERE = os.path.dirname(os.path.abspath(__file__))
EPOCHS = 2


def never_read_bytes(root, digests):
    """The bytes, summed over the nodes, of the files the sampler hands a node for epoch
    EPOCHS (the next, never read) that none of its ranks read in epochs 0 .. EPOCHS - 1: what
    the schedules may fetch and no read uses (prefetch.unused_bytes). Torch's own sampler gives
    the indices, over py_workers.py's dataset (the files, sorted)."""
    from torch.utils.data.distributed import DistributedSampler

    names = sorted(digests)
    sizes = [os.path.getsize(os.path.join(root, n)) for n in names]

    def share(rank, epoch):
        sampler = DistributedSampler(range(len(names)), num_replicas=RANKS, rank=rank,
                                     shuffle=True, seed=49)
        sampler.set_epoch(epoch)
        return set(sampler)

    total = 0
    for node in range(RANKS // 2):
        ranks = (2 * node, 2 * node + 1)
        read = set().union(*(share(r, e) for r in ranks for e in range(EPOCHS)))
        after = set().union(*(share(r, EPOCHS) for r in ranks))
        total += sum(sizes[i] for i in after - read)
    return total


def main():
    parser = common_args(argparse.ArgumentParser())
    parser.add_argument("--pythonpath", required=True)
    parser.add_argument("--contexts", default="fork,spawn,fork-half")
    parser.add_argument("--pfs-script", default="",
                        help="scripts/pfs/pfs.sh: serve the tree over the shaped PFS")
    args = parser.parse_args()
    job = Job(args, "told")
    pfs_id = None
    try:
        if args.pfs_script and shaped_pfs_usable():
            export = os.path.join(job.root, "export")
            os.makedirs(export)
            digests = make_data(export)  # the direct reads: of the served files themselves
            pfs_id = subprocess.run(
                [args.pfs_script, "up", "--export", export, "--mount", job.data, "--rate", "1gbit",
                 "--delay", "250us"], check=True, capture_output=True, text=True,
                timeout=120).stdout.strip()
            print(f"the tree is served over the shaped PFS ({pfs_id}: 1gbit, 250us each way)",
                  flush=True)
        else:
            if args.pfs_script:
                print("the shaped PFS needs root, sshfs and sshd: the tree stays on the local disk",
                      flush=True)
            digests = make_data(job.data)
        files = len(digests)
        size = sum(os.path.getsize(os.path.join(job.data, p)) for p in digests)
        for context in args.contexts.split(","):
            out = os.path.join(job.root, f"out-{context}")
            stats = os.path.join(job.root, f"stats-{context}.json")
            extra = {"GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1",
                     "PYTHONPATH": args.pythonpath, "LARDER_NODE_SIZE": "2",
                     "LARDER_REVALIDATE": "off", "LPL_SAMPLER": "larder"}
            half = context == "fork-half"
            if half:  # 2 nodes of a quarter each: the job holds half the dataset
                extra.update({"LARDER_MEM": str(size // 4), "LARDER_DISK": "0"})
            env = job.python_env(job.env(stats=stats, extra=extra))
            job.mpiexec(RANKS, [PYTHON, os.path.join(HERE, "py_workers.py"), job.data, out,
                                "fork" if half else context, str(EPOCHS)], env, timeout=240)
            results = [json.load(open(f"{out}.{r}")) for r in range(RANKS)]
            for e in range(EPOCHS):
                seen = {}
                for r in results:
                    seen.update(r["epochs"][e])
                wrong = [p for p, h in seen.items() if digests.get(p) != h]
                check(not wrong and len(seen) == files,
                      f"{context}, epoch {e + 1}: every file the workers read has its bytes "
                      f"({len(seen)} of {files} files, {len(wrong)} wrong)")
            s = read_stats(stats)
            pf = s.get("prefetch", {})
            print(f"{context}: pfs {s['pfs']['bytes_read']} B in {s['pfs']['read_ops']} reads "
                  f"(dataset {size} B), misses {s['misses']}, prefetch {json.dumps(pf)}",
                  flush=True)
            if half:
                check(pf.get("no_room", 0) > 0 and pf.get("staged_reads", 0) > 0,
                      f"{context}: past the budget, reads took their chunks from the stages "
                      f"({pf.get('staged_reads', 0)} reads, {pf.get('staged_bytes', 0)} B staged)")
                # Each epoch's reads cost at most the dataset; what the stages read for the
                # next epoch, which nobody reads, is counted unused.
                unused = pf.get("unused_bytes", 0)
                check(s["pfs"]["bytes_read"] <= EPOCHS * size + unused,
                      f"{context}: the PFS served at most the dataset an epoch, and what was "
                      f"fetched ahead and never read ({s['pfs']['bytes_read']} B, "
                      f"{EPOCHS} x {size} B + {unused} B)")
                continue
            check(s["pfs"]["bytes_read"] == size,
                  f"{context}: the PFS served each byte once ({s['pfs']['bytes_read']} of {size})")
            # At each set_epoch a rank hands its share of that epoch and of the next.
            check(pf.get("entries") == 2 * EPOCHS * files,
                  f"{context}: every rank handed its orders ({pf.get('entries')} entries, "
                  f"{2 * EPOCHS * files} expected)")
            check(pf.get("chunks", 0) > 0 and pf.get("skipped") == 0,
                  f"{context}: the schedules made chunks ready on their node, none skipped")
            # Each epoch's order is handed a whole epoch ahead, so the reads of epoch 2 (at
            # least) find their chunks ready on their node, counted where they are served: in
            # the DataLoader workers, folded into their rank's stats.
            check(pf.get("ready", 0) > 0,
                  f"{context}: reads found their chunks made ready ahead ({pf.get('ready', 0)} "
                  f"reads, {pf.get('waited', 0)} waited for theirs, {s['misses']} misses)")
            check(s["fallbacks"] == 0, f"{context}: no read fell back to the PFS")
            # What the last set_epoch handed for the epoch after the last is fetched and never
            # read; every chunk of the epochs read was used on its node, by a rank or a worker.
            bound = never_read_bytes(job.data, digests)
            check(pf.get("unused_bytes", 0) <= bound,
                  f"{context}: the bytes made ready and never used on their node "
                  f"({pf.get('unused_bytes', 0)}) are at most those of the files only the "
                  f"unread next epoch names ({bound})")
        if pfs_id:
            subprocess.run([args.pfs_script, "down", pfs_id], check=True, timeout=120)
            pfs_id = None
            with open("/proc/mounts") as mounts:
                check(job.data not in mounts.read().split(),
                      "the shaped PFS is unmounted and removed")
        job.finish()
    finally:
        if pfs_id:
            subprocess.run([args.pfs_script, "down", pfs_id], check=False, timeout=120)
        job.close()


def shaped_pfs_usable():
    return (os.geteuid() == 0 and shutil.which("sshfs") is not None
            and os.access("/usr/sbin/sshd", os.X_OK))


if __name__ == "__main__":
    main()
