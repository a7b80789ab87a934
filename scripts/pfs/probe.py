#!/usr/bin/env python3
"""probe.py: what a small-file read costs on the shaped PFS (pfs.sh), plain and through Larder.

Run inside `pfs.sh run` (it finds the instance's server namespace and veth itself):

  scripts/pfs/pfs.sh run --export /var/tmp/pfsexp --mount /var/tmp/pfsmnt --rate 10gbit \\
      --delay 250us -- python3 scripts/pfs/probe.py --tree /var/tmp/pfsmnt/dataset-1000 \\
      --preload $PWD/build/release/lib/liblarder_preload.so

The tree is a dataset in ImageFolder's shape (larder-treebench generate --dataset), generated in
the export beforehand. Two measurements, the page cache dropped before each run:

1. Packets through the server's veth (both directions) per file, for one process that lists the
   class directories (os.scandir, as ImageFolder does) and reads every file (open, read, close):
   plain, and through Larder (1 rank, every setting at its default, which lists ahead: each
   directory's stats and small files loaded LARDER_LOAD_PARALLEL at a time). Fewer packets is
   fewer requests to the PFS.
2. Milliseconds per file when THREADS threads open and read the tree's files, in directory order
   (consecutive files in one directory, as list-ahead loads a directory's batch) and interleaved
   (consecutive files from different directories, as shuffled epochs read them).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

READER = r"""
import os, sys
n = 0
for c in sorted(os.scandir(sys.argv[1]), key=lambda e: e.name):
    if c.is_dir():
        for e in os.scandir(c.path):
            if e.is_file():
                with open(e.path, "rb") as f:
                    n += len(f.read())
"""


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def server_veth():
    spaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                            check=True).stdout.split()
    srv = [s for s in spaces if s.startswith("lbp-pfs-") and s.endswith("-srv")]
    if len(srv) != 1:
        sys.exit(f"probe.py: expected one pfs.sh instance, found {len(srv)} (run it inside "
                 "`pfs.sh run`)")
    links = subprocess.run(["ip", "netns", "exec", srv[0], "ip", "-o", "link"],
                           capture_output=True, text=True, check=True).stdout
    veth = [w.split("@")[0] for w in links.split() if w.startswith("lbps")]
    return srv[0], veth[0]


def packets(ns, veth):
    out = subprocess.run(["ip", "netns", "exec", ns, "cat",
                          f"/sys/class/net/{veth}/statistics/rx_packets",
                          f"/sys/class/net/{veth}/statistics/tx_packets"],
                         capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]) + int(out[1])


def files_of(tree):
    dirs = sorted(c.path for c in os.scandir(tree) if c.is_dir())
    return [sorted(e.path for e in os.scandir(d) if e.is_file()) for d in dirs]


def read_one(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.pread(fd, 1 << 20, 0)
    finally:
        os.close(fd)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", required=True)
    ap.add_argument("--preload", required=True)
    ap.add_argument("--mpiexec", default="mpiexec.mpich")
    ap.add_argument("--threads", type=int, default=8)
    args = ap.parse_args()
    ns, veth = server_veth()
    per_dir = files_of(args.tree)
    nfiles = sum(len(d) for d in per_dir)

    print(f"{nfiles} files in {len(per_dir)} directories; packets through the PFS server's link "
          "per file (both directions):")
    for side in ("plain", "Larder"):
        drop_caches()
        cmd = ["/usr/bin/python3", "-c", READER, args.tree]
        env = {k: v for k, v in os.environ.items() if not k.startswith("LARDER_")}
        scratch = tempfile.mkdtemp(prefix="larder-probe-")
        if side == "Larder":
            shm = tempfile.mkdtemp(prefix="larder-probe-", dir="/dev/shm")
            env.update(LARDER_PREFIX=args.tree, LARDER_LOCAL_FS="cache", LARDER_SHM_DIR=shm, LARDER_DIR=scratch)
            cmd = [args.mpiexec, "-n", "1", "-genv", "LD_PRELOAD", args.preload] + cmd
        before = packets(ns, veth)
        start = time.monotonic()
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        seconds = time.monotonic() - start
        used = packets(ns, veth) - before
        if side == "Larder":
            shutil.rmtree(shm, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
        print(f"  {side}: {used / nfiles:.1f} packets a file, {seconds:.2f} s in all")

    print(f"{args.threads} threads opening and reading every file, ms per file:")
    orders = {
        "directory order": [p for d in per_dir for p in d],
        "interleaved": [p for group in zip(*per_dir) for p in group],
    }
    for name, paths in orders.items():
        drop_caches()
        start = time.monotonic()
        with ThreadPoolExecutor(args.threads) as pool:
            list(pool.map(read_one, paths))
        print(f"  {name}: {(time.monotonic() - start) / len(paths) * 1000:.2f} ms "
              f"({len(paths)} files)")


if __name__ == "__main__":
    main()
