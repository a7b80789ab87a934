"""e2e_quiet_exit: a job with traffic between emulated nodes (UCX over TCP) ends without a word:
endpoints that close while the job ends are not failures. Before the fix, 1-4 lines of "ucx
endpoint failed: Endpoint timeout" ended about 8 of 9 such jobs while nothing had failed."""
import argparse
import hashlib
import os

from e2e_util import PYTHON, Job, check, common_args, fail, read_stats

RUNS = 5
RANKS = 4

READER = """
import hashlib, os, sys
data, out = sys.argv[1:3]
rank = int(os.environ.get('PMI_RANK', os.environ.get('OMPI_COMM_WORLD_RANK', '0')))
names = sorted(os.listdir(data))
names = names[rank % len(names):] + names[:rank % len(names)]  # ranks start on different files
digests = {n: hashlib.sha1(open(os.path.join(data, n), 'rb').read()).hexdigest() for n in names}
with open(out + '.' + str(rank), 'w') as f:
    f.write('\\n'.join(digests[n] for n in sorted(digests)))
"""


def main():
    args = common_args(argparse.ArgumentParser()).parse_args()
    job = Job(args, "quiet")
    try:
        blobs = [os.urandom(400_000 + 1000 * i) for i in range(RANKS)]
        for i, b in enumerate(blobs):
            with open(os.path.join(job.data, f"part{i}.bin"), "wb") as f:
                f.write(b)
        reader = os.path.join(job.root, "reader.py")
        with open(reader, "w") as f:
            f.write(READER)
        want = "\n".join(hashlib.sha1(b).hexdigest() for b in blobs)
        for run in range(RUNS):
            stats = os.path.join(job.root, f"stats{run}.json")
            out = os.path.join(job.root, f"digest{run}")
            env = job.env(stats=stats, extra={"LARDER_NODE_SIZE": "2", "LARDER_TRANSPORT": "ucx",
                                               "LARDER_UCX_TLS": "tcp,self"})
            proc = job.mpiexec(RANKS, [PYTHON, reader, job.data, out], env, timeout=60)
            if [open(f"{out}.{r}").read() for r in range(RANKS)] != [want] * RANKS:
                fail(f"run {run}: a rank read other bytes")
            s = read_stats(stats)
            if s["transport"]["bytes"] == 0 or s["transport"]["errors"] != 0:
                fail(f"run {run}: transport bytes {s['transport']['bytes']}, "
                     f"errors {s['transport']['errors']}")
            noise = [l for l in proc.stderr.splitlines()
                     if " warn: " in l or " error: " in l or "endpoint" in l]
            if noise:
                fail(f"run {run}: the job printed {noise}")
        check(True, f"{RUNS} jobs with UCX traffic between emulated nodes ended without a warning")
        job.finish()
    finally:
        job.close()


if __name__ == "__main__":
    main()
