"""e2e_list_ahead_exit: list-ahead resolves listed directories in the background
(LARDER_LIST_AHEAD_DIRS), so a job can end while they are being resolved. 4 ranks on 2 emulated
nodes list 48 directories of 100 small files one after another and end at once (the background
still has directories queued and in flight), three jobs in a row; then a job lists them and reads
every file. Asserted: every job ends (a hang is the test's timeout), without a warning; the
directories went to the background; the reading job's bytes are the files' and the PFS served
each file at most once per job; nothing fell back. `--transport mpi` runs it with the directory as
messages over MPI (the MPI transport), whose messages finalize must not cut off either."""
import argparse
import hashlib
import os

from e2e_util import PYTHON, Job, check, common_args, fail, read_stats

RANKS = 4
DIRS = 48
FILES = 100

LISTER = """
import hashlib, os, sys
data, out, read = sys.argv[1], sys.argv[2], sys.argv[3] == 'read'
rank = int(os.environ.get('PMI_RANK', os.environ.get('OMPI_COMM_WORLD_RANK', '0')))
dirs = sorted(os.listdir(data))
listed = {d: sorted(os.listdir(os.path.join(data, d))) for d in dirs}
if read:  # every rank every file, each starting at another directory
    order = dirs[rank * len(dirs) // 4:] + dirs[:rank * len(dirs) // 4]
    digests = {}
    for d in order:
        for n in listed[d]:
            with open(os.path.join(data, d, n), 'rb') as f:
                digests[d + '/' + n] = hashlib.sha1(f.read()).hexdigest()
    with open(out + '.' + str(rank), 'w') as f:
        f.write('\\n'.join(k + ' ' + digests[k] for k in sorted(digests)))
"""


def main():
    parser = common_args(argparse.ArgumentParser())
    parser.add_argument("--transport", default="ucx", choices=["ucx", "mpi"])
    args = parser.parse_args()
    job = Job(args, "listexit")
    try:
        want = {}
        for d in range(DIRS):
            path = os.path.join(job.data, f"class{d:02d}")
            os.mkdir(path)
            for i in range(FILES):
                blob = os.urandom(200 + (d * FILES + i) % 1800)
                with open(os.path.join(path, f"f{i:03d}"), "wb") as f:
                    f.write(blob)
                want[f"class{d:02d}/f{i:03d}"] = hashlib.sha1(blob).hexdigest()
        lister = os.path.join(job.root, "lister.py")
        with open(lister, "w") as f:
            f.write(LISTER)
        env_extra = {"LARDER_NODE_SIZE": "2", "LARDER_TRANSPORT": args.transport}
        for run in range(3):
            stats = os.path.join(job.root, f"stats-list{run}.json")
            env = job.env(stats=stats, extra=env_extra)
            proc = job.mpiexec(RANKS, [PYTHON, lister, job.data, "-", "list"], env, timeout=120)
            s = read_stats(stats)
            background = s["list_ahead"]["background"]
            check(background > 0, f"job {run} (lists and ends): {background} directories went "
                  f"to the background, {s['list_ahead']['inline']} resolved in the call; "
                  f"PFS {s['pfs']['read_ops']} reads, {s['pfs']['stat_ops']} stats")
            if s["pfs"]["read_ops"] > DIRS * FILES:
                fail(f"job {run}: {s['pfs']['read_ops']} PFS reads for {DIRS * FILES} files")
            noise = [l for l in proc.stderr.splitlines() if " warn: " in l or " error: " in l]
            if noise:
                fail(f"job {run}: the job printed {noise}")
        stats = os.path.join(job.root, "stats-read.json")
        out = os.path.join(job.root, "digests")
        proc = job.mpiexec(RANKS, [PYTHON, lister, job.data, out, "read"],
                           job.env(stats=stats, extra=env_extra), timeout=180)
        expected = "\n".join(k + " " + want[k] for k in sorted(want))
        for r in range(RANKS):
            if open(f"{out}.{r}").read() != expected:
                fail(f"rank {r} read other bytes than the files'")
        s = read_stats(stats)
        check(s["pfs"]["read_ops"] == DIRS * FILES and s["fallbacks"] == 0,
              f"the reading job: every rank read every file right; the PFS read "
              f"{s['pfs']['read_ops']} times for {DIRS * FILES} files, "
              f"{s['list_ahead']['background']} directories in the background, "
              f"{s['fallbacks']} fallbacks")
        noise = [l for l in proc.stderr.splitlines() if " warn: " in l or " error: " in l]
        if noise:
            fail(f"the reading job printed {noise}")
        job.finish()
    finally:
        job.close()


if __name__ == "__main__":
    main()
