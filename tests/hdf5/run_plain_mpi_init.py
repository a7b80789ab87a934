"""hdf5_vol_plain_mpi_init: an HDF5 program as users have it (plain MPI_Init, H5Fopen with the
default property list, 2 ranks) with only HDF5_PLUGIN_PATH and HDF5_VOL_CONNECTOR set reads the
right bytes without the cache, and rank 0 says once, at the default log level, exactly what to
add; with what it says added (LD_PRELOAD and LARDER_PREFIX), the same program reads through the
cache: the right bytes, no message, the file read from the PFS once for the job. A program that
calls MPI_Init_thread(MPI_THREAD_MULTIPLE) is told it may add start=world instead, and with it
the connector starts Larder itself."""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_util import Job, check, common_args, read_stats  # noqa: E402

CONNECTOR = "larder under_vol=0;under_info={}"


def main():
    parser = common_args(argparse.ArgumentParser())
    parser.add_argument("--reader", required=True)
    parser.add_argument("--make-files", required=True)
    parser.add_argument("--plugin-dir", required=True)
    args = parser.parse_args()
    job = Job(args, "plain-init")
    try:
        subprocess.run([args.make_files, job.data], check=True, timeout=60)
        dlio = os.path.join(job.data, "dlio.h5")
        specs = [dlio + ":/records", dlio + ":/labels"]
        hdf5 = {"HDF5_PLUGIN_PATH": args.plugin_dir, "HDF5_VOL_CONNECTOR": CONNECTOR}

        def run(name, env, n=2, flags=()):
            out = os.path.join(job.root, name)
            proc = job.mpiexec(n, [args.reader, *flags, out, *specs], env)
            lines = [open(f"{out}.{r}").read() for r in range(n)]
            return proc, lines

        _, (native,) = run("native", job.env(preload=False), n=1)
        check(native.count("\n") == 2, "native reads: " + native.replace("\n", "; "))

        # Only the connector: no cache, the right bytes, one message saying what to add.
        proc, lines = run("connector", job.env(preload=False, extra=hdf5))
        check(all(l == native for l in lines), "connector only: every rank read the right bytes")
        told = [l for l in proc.stderr.splitlines() if l.startswith("larder vol:")]
        check(len(told) == 1, f"rank 0 says it once at the default log level ({len(told)} lines)")
        preload = args.preload
        for piece in (f"LD_PRELOAD={preload}", f"LARDER_PREFIX={job.data}",
                      "MPI_THREAD_MULTIPLE", "start=world", "MPI_Init_thread"):
            check(piece in told[0], f"the message names {piece}")

        # What it says, added: the same program reads through the cache.
        stats = os.path.join(job.root, "stats.json")
        env = job.env(stats=stats, extra=hdf5)
        proc, lines = run("preload", env)
        check(all(l == native for l in lines), "with the preload: every rank read the right bytes")
        check(not [l for l in proc.stderr.splitlines() if l.startswith("larder vol:")],
              "with the preload: no message")
        s = read_stats(stats)
        size = os.path.getsize(dlio)
        check(s["pfs"]["bytes_read"] == size and s["app"]["read_calls"] > 0 and
              s["fallbacks"] == 0,
              f"with the preload: the file ({size} B) read from the PFS once for 2 ranks "
              f"(pfs {s['pfs']['bytes_read']} B, app {s['app']['bytes_read']} B)")

        # MPI_THREAD_MULTIPLE without the preload: told that start=world would do.
        proc, lines = run("multiple", job.env(preload=False, extra=hdf5),
                          flags=["--thread-multiple"])
        told = [l for l in proc.stderr.splitlines() if l.startswith("larder vol:")]
        check(len(told) == 1 and
              "if every rank opens its files through HDF5, add start=world" in told[0],
              "MPI_THREAD_MULTIPLE: told once that start=world would do")
        check(all(l == native for l in lines), "MPI_THREAD_MULTIPLE: the right bytes")
        # (start=world itself is tested by hdf5_vol_dlio_np4 and hdf5_vol_finalize_np4.)
        job.finish()
    finally:
        job.close()


if __name__ == "__main__":
    main()
