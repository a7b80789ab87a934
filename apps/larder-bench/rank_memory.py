#!/usr/bin/python3
"""The memory of a rank with Larder against the same program without it (issue "start-up at
100,000 ranks", item 3): RSS, PSS and shared memory from /proc/self/smaps_rollup, per rank, at
several job sizes, idle after start and after reading a tree; and the start-up's time, MPI_Init
apart from Larder's own (the stats' startup.mpi_init_ns and startup.larder_ns).

    apps/larder-bench/rank_memory.py --build build/release [--ranks 2,4,8,16] [--files 200]

Each job is `mpiexec.mpich -n N python3 probe.py` with and without the preload library
(LARDER_PREFIX on the tree, LARDER_MEM as given, LARDER_KEEP=off). The probe takes a sample of
its own memory once Larder is up (after its first file-system call under the prefix: a stat of
the tree's root, which Larder answers), reads every file of the tree, and takes a second sample.
Prints a table of the median rank per job size: RSS, PSS, private and shared memory with and
without Larder, and the difference, which is Larder's cost per rank beyond its cache; the cache's
own arena (LARDER_MEM's share) is shared memory that a rank maps, counted in its RSS once touched,
so the table shows it apart (the arena's pages the rank touched: its PSS share).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

PROBE = r"""
import json, os, sys
def sample():
    out = {}
    with open('/proc/self/smaps_rollup') as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[-1] == 'kB':
                out[parts[0].rstrip(':')] = int(parts[1]) * 1024
    return out
root, prefix = sys.argv[1], sys.argv[2]
os.stat(root)                      # Larder is up (it answers this under the prefix)
idle = sample()
for dirpath, _, names in os.walk(root):
    for name in names:
        with open(os.path.join(dirpath, name), 'rb') as f:
            f.read()
read = sample()
rank = os.environ.get('PMI_RANK', '0')
with open(prefix + '.' + rank, 'w') as f:
    json.dump({'idle': idle, 'read': read}, f)
"""

KEYS = ("Rss", "Pss", "Shared_Clean", "Shared_Dirty", "Private_Clean", "Private_Dirty")


def make_tree(root, files, size):
    for i in range(files):
        sub = os.path.join(root, f"d{i % 10}")
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, f"f{i:05d}.bin"), "wb") as f:
            f.write(os.urandom(size))


def run(n, probe, tree, out, preload, mem, stats=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LARDER_")}
    env.pop("LD_PRELOAD", None)
    cmd = ["mpiexec.mpich", "-n", str(n), "-bind-to", "none"]
    if preload:
        cmd += ["-genv", "LD_PRELOAD", preload, "-genv", "LARDER_PREFIX", tree, "-genv", "LARDER_LOCAL_FS", "cache",
                "-genv", "LARDER_MEM", mem, "-genv", "LARDER_KEEP", "off",
                "-genv", "LARDER_STATS", stats]
    subprocess.run(cmd + ["/usr/bin/python3", probe, tree, out], env=env, check=True,
                   stdout=subprocess.DEVNULL, timeout=600)
    samples = []
    for r in range(n):
        with open(f"{out}.{r}") as f:
            samples.append(json.load(f))
        os.unlink(f"{out}.{r}")
    return samples


def median_of(samples, when, key):
    return statistics.median(s[when].get(key, 0) for s in samples)


def mib(n):
    return f"{n / (1 << 20):.1f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build/release")
    parser.add_argument("--ranks", default="2,4,8,16")
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--size", type=int, default=64 << 10)
    parser.add_argument("--mem", default="1G", help="LARDER_MEM for the job (default 1G)")
    args = parser.parse_args()
    preload = os.path.abspath(os.path.join(args.build, "lib", "liblarder_preload.so"))
    if not os.path.exists(preload):
        sys.exit(f"rank_memory: {preload} is not built")
    scratch = tempfile.mkdtemp(prefix="larder-rank-memory-")
    try:
        tree = os.path.join(scratch, "tree")
        make_tree(tree, args.files, args.size)
        probe = os.path.join(scratch, "probe.py")
        with open(probe, "w") as f:
            f.write(PROBE)
        out = os.path.join(scratch, "out")
        print(f"tree: {args.files} files of {args.size} B; LARDER_MEM={args.mem}; median rank; MiB")
        print("| ranks | when | RSS plain | RSS Larder | PSS plain | PSS Larder | private plain "
              "| private Larder | Larder's private cost |")
        print("|---|---|---|---|---|---|---|---|---|")
        startup = []
        for n in (int(x) for x in args.ranks.split(",")):
            print(f"rank_memory: {n} ranks ...", file=sys.stderr, flush=True)
            plain = run(n, probe, tree, out, None, args.mem)
            stats_file = os.path.join(scratch, "stats.json")
            larder = run(n, probe, tree, out, preload, args.mem, stats_file)
            with open(stats_file) as f:
                stats = json.load(f)
            startup.append((n, stats["startup"]["mpi_init_ns"] / n, stats["startup"]["larder_ns"] / n))
            for when in ("idle", "read"):
                private = {
                    name: median_of(s, when, "Private_Clean") + median_of(s, when, "Private_Dirty")
                    for name, s in (("plain", plain), ("larder", larder))}
                print(f"| {n} | {when} | {mib(median_of(plain, when, 'Rss'))} "
                      f"| {mib(median_of(larder, when, 'Rss'))} "
                      f"| {mib(median_of(plain, when, 'Pss'))} "
                      f"| {mib(median_of(larder, when, 'Pss'))} "
                      f"| {mib(private['plain'])} | {mib(private['larder'])} "
                      f"| {mib(private['larder'] - private['plain'])} |", flush=True)
        print("\nstart-up, mean over the ranks (ms)")
        print("| ranks | MPI_Init | Larder's own start-up |")
        print("|---|---|---|")
        for n, mpi_init, own in startup:
            print(f"| {n} | {mpi_init / 1e6:.1f} | {own / 1e6:.1f} |")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
