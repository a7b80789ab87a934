"""e2e_python_numpy_import: Python under mpiexec with the preload and no MPI calls of its own
imports a package tree and numpy.load()s npz files placed under the managed prefix. Results must
equal a run without the preload, and the file system must see one operation per path or chunk
for the job: the same pfs.stat_ops, pfs.read_ops and pfs.list_ops with 2 ranks as with 1, and
pfs.read_ops equal to the number of chunks of the files read."""
import argparse
import json
import os
import subprocess

import numpy as np

from e2e_util import PYTHON, Job, check, common_args, read_stats

CHUNK = 64 << 10
HERE = os.path.dirname(os.path.abspath(__file__))


def make_data(data):
    pkg = os.path.join(data, "pkgs", "lplpkg")
    os.makedirs(os.path.join(pkg, "sub"))
    with open(os.path.join(pkg, "__init__.py"), "w") as f:
        f.write("VALUE = 'larder package tree'\n")
    with open(os.path.join(pkg, "sub", "__init__.py"), "w") as f:
        f.write("")
    with open(os.path.join(pkg, "sub", "mod2.py"), "w") as f:  # more than one chunk of source
        f.write("TABLE = [\n")
        for i in range(6000):
            f.write(f"    ({i}, 'row {i:05d} of a table that makes this module large'),\n")
        f.write("]\n\ndef checksum():\n    return sum(i for i, _ in TABLE)\n")
    rng = np.random.default_rng(5)
    os.makedirs(os.path.join(data, "npz"))
    for i in range(5):
        np.savez(os.path.join(data, "npz", f"sample_{i}.npz"),
                 x=rng.standard_normal((100 + 13 * i, 160)), y=rng.integers(0, 10, 500 + i))
    read = [os.path.join(pkg, "__init__.py"), os.path.join(pkg, "sub", "__init__.py"),
            os.path.join(pkg, "sub", "mod2.py")]
    read += [os.path.join(data, "npz", n) for n in os.listdir(os.path.join(data, "npz"))]
    return sum(-(-os.path.getsize(p) // CHUNK) for p in read)


def outputs(prefix, n):
    return [json.load(open(f"{prefix}.{r}")) for r in range(n)]


def main():
    args = common_args(argparse.ArgumentParser()).parse_args()
    job = Job(args, "numpy")
    try:
        chunks = make_data(job.data)
        script = os.path.join(HERE, "py_numpy_import.py")
        ref = os.path.join(job.root, "ref")
        subprocess.run([PYTHON, script, job.data, ref], env=job.env(preload=False), check=True,
                       timeout=60)
        expected = outputs(ref, 1)[0]
        stats = {}
        for n in (1, 2):
            out = os.path.join(job.root, f"out{n}")
            stats[n] = os.path.join(job.root, f"stats{n}.json")
            job.mpiexec(n, [PYTHON, script, job.data, out], job.env(stats=stats[n]))
            check(all(o == expected for o in outputs(out, n)),
                  f"{n} rank(s): imports and numpy.load results equal the run without preload")
            job.check_clean()
        one, two = read_stats(stats[1])["pfs"], read_stats(stats[2])["pfs"]
        print("pfs counters, 1 rank:", one, "2 ranks:", two)
        check(two["read_ops"] == chunks and one["read_ops"] == chunks,
              f"one file-system read per chunk for the job ({two['read_ops']} == {chunks})")
        check(two["stat_ops"] == one["stat_ops"] > 0,
              f"one stat per path for the job ({two['stat_ops']} with 2 ranks and 1)")
        check(two["list_ops"] == one["list_ops"] > 0,
              f"one listing per directory for the job ({two['list_ops']} with 2 ranks and 1)")
        check(read_stats(stats[2])["app"]["read_calls"] > 0, "reads were served by the cache")
    finally:
        job.close()


if __name__ == "__main__":
    main()
