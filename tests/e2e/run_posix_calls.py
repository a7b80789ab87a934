"""e2e_posix_calls: a C program makes every call family the preload serves (open/read/pread/
readv/lseek/fstat/fcntl/dup/mmap/sendfile/stdio/stat/access/opendir/scandir, errors included)
on a managed and an unmanaged directory; its output with the preload (a one-rank mpiexec job)
must equal its output without, line by line, and the managed reads must come from the cache."""
import argparse
import os
import shutil
import subprocess

from e2e_util import Job, check, common_args, fail, read_stats


def make_tree(d):
    os.makedirs(os.path.join(d, "sub"), exist_ok=True)
    with open(os.path.join(d, "big.bin"), "wb") as f:
        f.write(bytes((i * 7 + i // 251) & 0xFF for i in range(300_001)))
    with open(os.path.join(d, "small.txt"), "w") as f:
        for i in range(200):
            f.write(f"line {i} of the small text file\n")
    with open(os.path.join(d, "sub", "inner.txt"), "w") as f:
        f.write("inner\n")


def main():
    parser = common_args(argparse.ArgumentParser())
    parser.add_argument("--exe", required=True)
    args = parser.parse_args()
    job = Job(args, "posix")
    try:
        plain = os.path.join(job.root, "plain")
        make_tree(job.data)
        shutil.copytree(job.data, plain)
        # Same mtimes in both trees is not needed: each line compares a tree with itself.
        ref = subprocess.run([args.exe, job.data, plain], env=job.env(preload=False),
                             stdout=subprocess.PIPE, text=True, timeout=30, check=True).stdout
        stats = os.path.join(job.root, "stats.json")
        got = job.mpiexec(1, [args.exe, job.data, plain], job.env(stats=stats)).stdout
        ours = lambda text: [l for l in text.splitlines() if l.startswith(("data ", "plain "))]
        ref_lines, got_lines = ours(ref), ours(got)
        for a, b in zip(ref_lines, got_lines):
            if a != b:
                print(f"without preload: {a}\nwith preload:    {b}")
        check(ref_lines == got_lines and len(ref_lines) > 100,
              f"{len(ref_lines)} results identical with and without the preload")
        s = read_stats(stats)
        check(s["app"]["read_calls"] > 0, f"reads served by the cache ({s['app']['read_calls']})")
        chunks = -(-300_001 // 65536) + 1  # big.bin and small.txt
        check(s["pfs"]["read_ops"] == chunks,
              f"one file-system read per chunk: {s['pfs']['read_ops']} == {chunks}")
        check(s["pfs"]["list_ops"] >= 1, "directory listings went through the cache")
        job.finish()
    finally:
        job.close()


if __name__ == "__main__":
    main()
