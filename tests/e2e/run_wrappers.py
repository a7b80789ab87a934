"""e2e_wrappers: ranks started through launcher wrappers start cleanly under the preload.

Each case runs a 4-rank job RUNS times in a row: a bash wrapper with and without work (child
commands) before `exec`, two wrappers nested, `env`, a pyenv-style shim script, the machine's
real pyenv shim (`python3` on the PATH, when there is one), numactl and taskset where installed,
a wrapper that execs a program that never calls MPI and never touches a managed file, and one
whose final program reads managed files (the stats must show the reads served by the cache, the
bytes identical to the files). Before the fix the bash wrapper failed 3-7 runs of 8 (MPICH) and
6 of 6 (Open MPI). After the matrix: no file of Larder's, of MPICH's or of UCX's from these jobs
left in /dev/shm."""
import argparse
import hashlib
import os
import shutil
import stat

from e2e_util import PYTHON, Job, check, common_args, fail, read_stats

RUNS = 4
SANITIZED_RUNS = 2
RANKS = 4

READER = """
import hashlib, os, sys
data, out = sys.argv[1:3]
rank = int(os.environ.get('PMI_RANK', os.environ.get('OMPI_COMM_WORLD_RANK', '0')))
digests = [hashlib.sha1(open(os.path.join(data, n), 'rb').read()).hexdigest()
           for n in sorted(os.listdir(data))]
with open(out + '.' + str(rank), 'w') as f:
    f.write('\\n'.join(digests))
"""

SHIM = """#!/usr/bin/env bash
# pyenv-style shim: finds the interpreter with command substitutions, then execs it
set -e
version="$(echo system | head -n 1)"
program="$(command -v "$(basename "$0")" >/dev/null 2>&1; echo /usr/bin/python3)"
[ -n "$version" ] || exit 1
exec "$program" "$@"
"""


def shm_names():
    return {n for n in os.listdir("/dev/shm")
            if n.startswith(("mpich_shar_tmp", "ucx_shm_posix_", "larder-", "ucx_posix"))}


def script(root, name, text):
    path = os.path.join(root, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def cases(root):
    work = script(root, "work.sh", "#!/bin/bash\nhostname >/dev/null\nx=$(date +%s)\n"
                  "for i in 1 2 3; do true; done\nexec \"$@\"\n")
    bare = script(root, "bare.sh", "#!/bin/bash\nexec \"$@\"\n")
    outer = script(root, "outer.sh", f"#!/bin/bash\nexport LPL_OUTER=1\nexec {work} \"$@\"\n")
    shim = script(root, "python3", SHIM)
    hello = [PYTHON, "-c", "print('hello')"]
    yield "bash wrapper with work before exec", [work] + hello
    yield "bash wrapper that only execs", [bare] + hello
    yield "two wrappers nested", [outer] + hello
    yield "env", ["env", "LPL_X=1"] + hello
    yield "pyenv-style shim script", [shim, "-c", "print('hello')"]
    real_shim = shutil.which("python3")
    if real_shim and real_shim != PYTHON and open(real_shim, "rb").read(2) == b"#!":
        yield "the machine's pyenv shim", [real_shim, "-c", "print('hello')"]
    for tool, argv in (("numactl", ["numactl", "--localalloc"]), ("taskset", ["taskset", "-c", "0"])):
        if shutil.which(tool):
            yield tool, argv + hello
        else:
            print(f"skipped: {tool} is not installed")
    yield "a program that never calls MPI nor reads a managed file", [work, "/bin/true"]


def container(argv):
    """`argv` run the way a container runtime runs it: Apptainer's chain is `apptainer` (which
    execs) then its `starter` (which forks the contained program and waits); Apptainer is not in
    Debian, so bwrap, which forks the same way, stands in for the starter."""
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return None
    return [bwrap, "--dev-bind", "/", "/"] + argv  # the same files and devices (/dev/shm)


def main():
    args = common_args(argparse.ArgumentParser()).parse_args()
    # Under the sanitizers (5-10 x slower) each case runs SANITIZED_RUNS times: the release
    # and Open MPI stages repeat it RUNS times, which is what catches the rare failures.
    runs = SANITIZED_RUNS if args.asan_lib else RUNS
    job = Job(args, "wrappers")
    before = shm_names()
    try:
        blobs = {f"f{i}.bin": os.urandom(10_000 + 70_000 * i) for i in range(4)}
        for name, data in blobs.items():
            with open(os.path.join(job.data, name), "wb") as f:
                f.write(data)
        env = job.env()
        failures = {}
        for name, argv in cases(job.root):
            failures[name] = 0
            for run in range(runs):
                proc = job.mpiexec(RANKS, argv, env, timeout=60, check=False)
                if proc.returncode != 0:
                    failures[name] += 1
                    print(f"{name}: run {run} exited with {proc.returncode}")
            print(f"{name}: {failures[name]} of {runs} jobs failed", flush=True)
        for name, failed in failures.items():
            check(failed == 0, f"{name}: {runs} of {runs} jobs exited 0")
        job.check_clean()

        reader = script(job.root, "reader.py", READER)
        work = os.path.join(job.root, "work.sh")
        want = "\n".join(hashlib.sha1(blobs[n]).hexdigest() for n in sorted(blobs))
        size = sum(len(b) for b in blobs.values())
        readers = {"a wrapper exec'ing a reader": lambda out: [work, PYTHON, reader, job.data, out]}
        if container([PYTHON]):
            readers["a wrapper exec'ing a forking container runtime (bwrap) that runs a reader"] = \
                lambda out: [work] + container([PYTHON, reader, job.data, out])
        else:
            print("skipped: bwrap is not installed")
        for name, argv in readers.items():
            for run in range(runs):
                stats = os.path.join(job.root, f"stats{run}.json")
                out = os.path.join(job.root, f"digest{run}")
                proc = job.mpiexec(RANKS, argv(out), job.env(stats=stats), timeout=60,
                                   check=False)
                if proc.returncode != 0:
                    fail(f"{name}: the job exited with {proc.returncode} (run {run})")
                got = [open(f"{out}.{r}").read() for r in range(RANKS)]
                if got != [want] * RANKS:
                    fail(f"{name}, run {run}: a rank read other bytes")
                s = read_stats(stats)
                if s["pfs"]["bytes_read"] != size or s["app"]["bytes_read"] != RANKS * size:
                    fail(f"{name}, run {run}: pfs {s['pfs']['bytes_read']} (want {size}), app "
                         f"{s['app']['bytes_read']} (want {RANKS * size})")
            check(True, f"{name}: {runs} jobs, bytes identical on {RANKS} ranks, the file "
                  "system read once per job, every read served by the cache")
        job.check_clean()
        left = shm_names() - before
        check(not left, f"nothing of Larder, MPICH or UCX left in /dev/shm ({sorted(left)})")
    finally:
        job.close()


if __name__ == "__main__":
    main()
