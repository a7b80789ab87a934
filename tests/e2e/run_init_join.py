"""e2e_init_join: a program linked with liblarder.so, LARDER_PREFIX set, whose MPI_Init starts
Larder through the hooks and which then calls larder_init itself (2 ranks). larder_init over
MPI_COMM_WORLD or a congruent communicator joins the running cache (LARDER_OK), each matched by
a larder_finalize that leaves it running; larder_init over another communicator is
LARDER_ERR_ALREADY_INITIALIZED; a larder_finalize with no larder_init to match is refused
(LARDER_ERR_NOT_INITIALIZED) and stops nothing; MPI_Finalize stops Larder and leaves nothing."""
import argparse
import os

from e2e_util import Job, check, common_args, fnv_hex

EXPECTED = """running-after-MPI_Init 1
init-world 0
init-congruent 0
init-self 8
init-null 8
stats 0
served-by-cache 1
finalize-1 0
finalize-2 0
still-running 1
finalize-unmatched 7
still-running-after-unmatched 1
running-after-MPI_Finalize 0"""


def main():
    parser = common_args(argparse.ArgumentParser())
    parser.add_argument("--exe", required=True)
    args = parser.parse_args()
    job = Job(args, "join")
    try:
        blob = os.urandom(200_000)
        path = os.path.join(job.data, "blob.bin")
        with open(path, "wb") as f:
            f.write(blob)
        env = job.env()
        del env["LD_PRELOAD"]  # the program links liblarder.so: its MPI_Init is Larder's hook
        out = job.mpiexec(2, [args.exe, path], env).stdout.splitlines()
        steps = [l for l in out if not l.startswith(("read ", "larder:"))]
        check(steps == EXPECTED.splitlines(), "larder_init after the hooks started Larder: "
              + "; ".join(steps))
        check(f"read {len(blob)} {fnv_hex(blob)}" in out, "bytes read through the C API are right")
        job.finish()
    finally:
        job.close()


if __name__ == "__main__":
    main()
