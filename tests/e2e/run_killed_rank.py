"""e2e_killed_rank: a job in which one rank is killed (SIGKILL, after it has cached data) leaves
its node-local files behind; the next job on the node starts cleanly, removes them, reads
correct bytes, and leaves nothing behind itself."""
import argparse
import hashlib
import os

from e2e_util import PYTHON, Job, check, common_args

# Each rank writes its digest to a file of its own: the launcher may interleave the ranks' stdout.
READER = """
import hashlib, os, signal, sys
data, mode, out = sys.argv[1:4]
digest = hashlib.sha1(open(os.path.join(data, 'blob.bin'), 'rb').read()).hexdigest()
rank = int(os.environ.get('PMI_RANK', os.environ.get('OMPI_COMM_WORLD_RANK', '0')))
if mode == 'kill':
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    signal.pause()  # wait to be torn down by the launcher
with open(out + '.' + str(rank), 'w') as f:
    f.write(digest)
"""


def main():
    args = common_args(argparse.ArgumentParser()).parse_args()
    job = Job(args, "killed")
    try:
        blob = os.urandom(300_000)
        with open(os.path.join(job.data, "blob.bin"), "wb") as f:
            f.write(blob)
        script = os.path.join(job.root, "reader.py")
        with open(script, "w") as f:
            f.write(READER)
        out = os.path.join(job.root, "digest")
        first = job.mpiexec(2, [PYTHON, script, job.data, "kill", out], job.env(), timeout=60,
                            check=False)
        check(first.returncode != 0, "the job whose rank was killed failed")
        left = job.leftover_files()
        print("left behind by the killed job:", left)
        job.mpiexec(2, [PYTHON, script, job.data, "read", out], job.env(), timeout=60)
        want = hashlib.sha1(blob).hexdigest()
        got = [open(f"{out}.{r}").read() for r in range(2)]
        check(got == [want, want], f"the next job read correct bytes on both ranks ({got})")
        job.check_clean()
        check(True, "the next job removed the killed job's files and left none of its own")
    finally:
        job.close()


if __name__ == "__main__":
    main()
