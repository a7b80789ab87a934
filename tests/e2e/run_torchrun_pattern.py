"""e2e_torchrun_pattern: the way torchrun jobs are cached, and what a job without any MPI
launcher is told.

1. One launcher per node under MPI: 2 launcher ranks on 2 emulated nodes, each starting 2 worker
   subprocesses the way torchrun does (subprocess.Popen with its environment plus RANK,
   LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT). Debian's torchrun (torch 1.13 on Python
   3.11) fails by itself here (AttributeError in torch.distributed.elastic), so this launcher
   stands in for it. Every worker reads the whole dataset once: bytes identical, the PFS read
   once for the job, and app.bytes_read exactly 4 x the data (it said 6.00 x before: the rank
   counted the reads it served to its workers a second time).
2. No launcher at all (a bare `python launcher.py` with LD_PRELOAD, LARDER_PREFIX and
   LARDER_STATS set, its workers included): the job runs without the cache, and one message, at
   the default log level, says so and what to do."""
import argparse
import hashlib
import os
import subprocess

from e2e_util import PYTHON, Job, check, common_args, fail, read_stats

LAUNCHER = """
import os, subprocess, sys
# Like torchrun --nproc_per_node=K: K workers, each with the launcher's environment.
k, node = int(sys.argv[1]), int(os.environ.get('PMI_RANK', os.environ.get('OMPI_COMM_WORLD_RANK', '0')))
nodes = int(os.environ.get('PMI_SIZE', os.environ.get('OMPI_COMM_WORLD_SIZE', '1')))
procs = []
for local in range(k):
    env = dict(os.environ, LOCAL_RANK=str(local), RANK=str(node * k + local),
               WORLD_SIZE=str(nodes * k), MASTER_ADDR='127.0.0.1', MASTER_PORT='29500')
    procs.append(subprocess.Popen([sys.executable, sys.argv[2]] + sys.argv[3:], env=env))
sys.exit(max(p.wait() for p in procs))
"""

WORKER = """
import hashlib, os, sys
data, out = sys.argv[1:3]
digests = [hashlib.sha1(open(os.path.join(data, n), 'rb').read()).hexdigest()
           for n in sorted(os.listdir(data))]
with open(out + '.' + os.environ['RANK'], 'w') as f:
    f.write('\\n'.join(digests))
"""

NODES = 2
PER_NODE = 2


def main():
    args = common_args(argparse.ArgumentParser()).parse_args()
    job = Job(args, "torchrun")
    try:
        blobs = {f"shard{i}.bin": os.urandom(150_000 + 33_333 * i) for i in range(5)}
        for name, b in blobs.items():
            with open(os.path.join(job.data, name), "wb") as f:
                f.write(b)
        size = sum(len(b) for b in blobs.values())
        want = "\n".join(hashlib.sha1(blobs[n]).hexdigest() for n in sorted(blobs))
        launcher = os.path.join(job.root, "launcher.py")
        worker = os.path.join(job.root, "worker.py")
        with open(launcher, "w") as f:
            f.write(LAUNCHER)
        with open(worker, "w") as f:
            f.write(WORKER)

        stats = os.path.join(job.root, "stats.json")
        out = os.path.join(job.root, "digest")
        env = job.env(stats=stats, extra={"LARDER_NODE_SIZE": "1"})
        job.mpiexec(NODES, [PYTHON, launcher, str(PER_NODE), worker, job.data, out], env,
                    timeout=120)
        got = [open(f"{out}.{r}").read() for r in range(NODES * PER_NODE)]
        check(got == [want] * (NODES * PER_NODE),
              f"{NODES * PER_NODE} workers of {NODES} launcher ranks read identical bytes")
        s = read_stats(stats)
        check(s["pfs"]["bytes_read"] == size, f"the PFS was read once ({s['pfs']['bytes_read']} "
              f"bytes of {size})")
        check(s["app"]["bytes_read"] == NODES * PER_NODE * size,
              f"app.bytes_read counts the workers' reads exactly: {s['app']['bytes_read']} == "
              f"{NODES * PER_NODE} x {size}")
        job.check_clean()

        plain_stats = os.path.join(job.root, "plain-stats.json")
        plain_out = os.path.join(job.root, "plain")
        proc = subprocess.run([PYTHON, launcher, str(PER_NODE), worker, job.data, plain_out],
                              env=job.python_env(dict(job.env(stats=plain_stats), RANK="0")),
                              timeout=120,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        print(proc.stderr)
        if proc.returncode != 0:
            fail(f"the job without a launcher exited with {proc.returncode}")
        got = [open(f"{plain_out}.{r}").read() for r in range(PER_NODE)]
        check(got == [want] * PER_NODE, "without a launcher the workers read identical bytes")
        notices = [l for l in proc.stderr.splitlines() if "not started by an MPI launcher" in l]
        check(len(notices) == 1 and "mpiexec -n NODES -ppn 1 torchrun" in notices[0],
              f"without a launcher: one message says so and what to do ({len(notices)} lines)")
        check(not os.path.exists(plain_stats), "and no stats file is written (no cache ran)")
        job.finish()
    finally:
        job.close()


if __name__ == "__main__":
    main()
