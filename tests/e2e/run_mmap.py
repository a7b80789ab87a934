"""e2e_mmap: mmap of managed files under mpiexec with MPI initialised and UCX's memory hooks in
their default mode (no UCX_MEM_MMAP_HOOK_MODE in the environment): numpy.load(mmap_mode='r') of
.npy files from Python (2 ranks, the preload initialises MPI), and a C program that calls
MPI_Init and maps files shared, private at an offset, and private-then-written (2 ranks). Every
result must equal a direct read of the files; the file system is read once per chunk for the
job; UCX still sees the mappings the program makes."""
import argparse
import hashlib
import json
import os
import subprocess

import numpy as np

from e2e_util import PYTHON, Job, check, common_args, fail, fnv_hex as fnv, read_stats

CHUNK = 64 << 10
HERE = os.path.dirname(os.path.abspath(__file__))


def make_data(data):
    rng = np.random.default_rng(3)
    arrays = {"a_f32.npy": rng.standard_normal((300, 257)).astype(np.float32),
              "b_i16.npy": rng.integers(-999, 999, 1000).astype(np.int16),
              "c_f64.npy": rng.standard_normal((64, 64, 20))}
    for name, a in arrays.items():
        np.save(os.path.join(data, name), a)
    with open(os.path.join(data, "blob.bin"), "wb") as f:
        f.write(rng.integers(0, 256, 200_001).astype(np.uint8).tobytes())
    return sum(-(-os.path.getsize(os.path.join(data, n)) // CHUNK) for n in arrays)


def expected_c_lines(path):
    raw = open(path, "rb").read()
    page = os.sysconf("SC_PAGESIZE")
    off = len(raw) // 2 // page * page
    name = os.path.basename(path)
    written = b"\x5a" * min(100, len(raw)) + raw[100:]
    return [f"{name} shared-whole rc=0 errno=- hash={fnv(raw)}",
            f"{name} private-middle rc=0 errno=- hash={fnv(raw[off:])}",
            f"{name} private-written rc=0 errno=- hash={fnv(written)}"]


def main():
    parser = common_args(argparse.ArgumentParser())
    parser.add_argument("--exe", required=True)
    args = parser.parse_args()
    job = Job(args, "mmap")
    try:
        chunks = make_data(job.data)
        script = os.path.join(HERE, "py_mmap.py")
        ref = os.path.join(job.root, "ref")
        subprocess.run([PYTHON, script, job.data, ref], env=job.env(preload=False), check=True,
                       timeout=60)
        expected = json.load(open(ref + ".0"))
        check(len(expected) == 3 and all(v["memmap"] for v in expected.values()),
              "without the preload numpy maps the three .npy files")

        stats = os.path.join(job.root, "stats.json")
        env = job.env(stats=stats)
        check(not any(k.startswith("UCX_MEM_") for k in env),
              "no UCX_MEM_* setting in the job's environment")
        out = os.path.join(job.root, "out")
        job.mpiexec(2, [PYTHON, script, job.data, out], env)
        got = [json.load(open(f"{out}.{r}")) for r in range(2)]
        for r in range(2):
            for name in expected:
                if got[r].get(name) != expected[name]:
                    print(f"rank {r} {name}: {got[r].get(name)} != {expected[name]}")
        check(all(g == expected for g in got),
              "2 ranks: numpy.load(mmap_mode='r') gives memmaps with the bytes of a direct read")
        s = read_stats(stats)
        check(s["pfs"]["read_ops"] == chunks,
              f"the maps were filled from the cache: one file-system read per chunk for the job "
              f"({s['pfs']['read_ops']} == {chunks})")
        job.check_clean()

        files = [os.path.join(job.data, n) for n in ("blob.bin", "a_f32.npy")]
        want = [line for f in files for line in expected_c_lines(f)]
        c_out = os.path.join(job.root, "c_out")
        job.mpiexec(2, [args.exe, c_out] + files, job.env())
        lines = [line for r in range(2) for line in open(f"{c_out}.{r}").read().splitlines()]
        for w in want:
            if lines.count(w) != 2:
                print(f"expected twice: {w}\ngot: {[l for l in lines if l.startswith(w[:20])]}")
        check(all(lines.count(w) == 2 for w in want),
              "C program after MPI_Init, 2 ranks: shared, offset and written private maps of "
              "managed files equal a direct read")
        events = [int(l.split()[-1]) for l in lines if " ucm mmap events " in l]
        if len(events) != 2:
            fail(f"the C program did not report UCX's events: {lines}")
        check(all(e == -1 or e >= 1 for e in events),
              f"UCX's memory manager still sees the program's mappings (events {events})")
        job.finish()
    finally:
        job.close()


if __name__ == "__main__":
    main()
