"""e2e_told_order: larder.torch.DistributedSampler end to end. 4 ranks on 2 emulated nodes read a
tree of small files (and a few of several chunks) through a DataLoader of 2 workers (fork, then
spawn), 2 epochs, shuffled, with the sampler that hands each epoch's order to Larder at
set_epoch (larder_schedule). Checks: every file the workers read has the bytes a direct read
gives, in every epoch; the ranks read every file (the sampler's indices cover the dataset); the
PFS served each byte once for the job; every rank handed its epochs' orders (prefetch.entries:
this epoch's and the next one's, at each set_epoch) and the schedule made chunks ready on their
node (prefetch.chunks); nothing fell back to the PFS. Every process exits and no Larder file is
left. (The ImageFolder benchmark measures the same path on the shaped PFS: benchmarks.md.)"""
import argparse
import json
import os

from e2e_util import PYTHON, Job, check, common_args, read_stats
from run_workers import RANKS, make_data

HERE = os.path.dirname(os.path.abspath(__file__))
EPOCHS = 2


def main():
    parser = common_args(argparse.ArgumentParser())
    parser.add_argument("--pythonpath", required=True)
    parser.add_argument("--contexts", default="fork,spawn")
    args = parser.parse_args()
    job = Job(args, "told")
    try:
        digests = make_data(job.data)
        files = len(digests)
        size = sum(os.path.getsize(os.path.join(job.data, p)) for p in digests)
        for context in args.contexts.split(","):
            out = os.path.join(job.root, f"out-{context}")
            stats = os.path.join(job.root, f"stats-{context}.json")
            extra = {"GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1",
                     "PYTHONPATH": args.pythonpath, "LARDER_NODE_SIZE": "2",
                     "LARDER_REVALIDATE": "off", "LPL_SAMPLER": "larder"}
            env = job.python_env(job.env(stats=stats, extra=extra))
            job.mpiexec(RANKS, [PYTHON, os.path.join(HERE, "py_workers.py"), job.data, out,
                                context, str(EPOCHS)], env, timeout=240)
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
            check(s["pfs"]["bytes_read"] == size,
                  f"{context}: the PFS served each byte once ({s['pfs']['bytes_read']} of {size})")
            # At each set_epoch a rank hands its share of that epoch and of the next.
            check(pf.get("entries") == 2 * EPOCHS * files,
                  f"{context}: every rank handed its orders ({pf.get('entries')} entries, "
                  f"{2 * EPOCHS * files} expected)")
            check(pf.get("chunks", 0) > 0 and pf.get("skipped") == 0,
                  f"{context}: the schedules made chunks ready on their node, none skipped")
            check(s["fallbacks"] == 0, f"{context}: no read fell back to the PFS")
        job.finish()
    finally:
        job.close()


if __name__ == "__main__":
    main()
