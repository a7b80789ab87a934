"""e2e_finalize_calls: C programs that call MPI_Finalize from the main thread, from another
thread, and while eight threads still read managed files (in 64 MiB preads, round after round,
until the process exits): each job exits 0 with every byte correct, RUNS times each. The last
case crashed with SIGSEGV in 6 of 6 runs before reads held leases on the session."""
import argparse
import os

import numpy as np

from e2e_util import Job, check, common_args

RUNS = 3
SANITIZED_RUNS = 1
SIZES = (100 << 20, (90 << 20) + 12345)


def write_pattern(path, size, k):
    with open(path, "wb") as f:
        block = 1 << 22
        for start in range(0, size, block):
            o = np.arange(start, min(size, start + block), dtype=np.uint64)
            f.write(((o * 131 + o // 4093 + k) & 0xFF).astype(np.uint8).tobytes())


def main():
    parser = common_args(argparse.ArgumentParser())
    parser.add_argument("--exe", required=True)
    args = parser.parse_args()
    # Under the sanitizers (5-10 x slower) each case runs SANITIZED_RUNS times: the release
    # and Open MPI stages repeat it RUNS times, which is what catches the rare failures.
    runs = SANITIZED_RUNS if args.asan_lib else RUNS
    job = Job(args, "finalize")
    try:
        files = []
        for k, size in enumerate(SIZES):
            path = os.path.join(job.data, f"big{k}.bin")
            write_pattern(path, size, k)
            files.append(path)
        # The default chunk size, and room for every chunk: each 64 MiB read copies 4 MiB chunks
        # out of the arenas, as in the reported crash.
        env = job.env(extra={"LARDER_CHUNK": "4M", "LARDER_MEM": "512M"})
        for mode in ("main", "thread", "readers"):
            bad = 0
            for run in range(runs):
                proc = job.mpiexec(2, [args.exe, mode] + files, env, timeout=120, check=False)
                if proc.returncode != 0 or proc.stdout.count(f"ok {mode}") != 2:
                    bad += 1
                    print(f"{mode}: run {run} exited with {proc.returncode}")
            check(bad == 0, f"MPI_Finalize ({mode}): {runs} of {runs} jobs exited 0, bytes correct")
            job.check_clean()
    finally:
        job.close()


if __name__ == "__main__":
    main()
