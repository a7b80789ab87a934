#!/usr/bin/env python3
"""Datasets of real size, side by side: for each size, a dataset in ImageFolder's shape
(larder-treebench generate --dataset: files of 1-2 KiB, 1,000 to a class directory; 1.28 million
files in 1,000 classes of 1,281, ImageNet's shape) is read by a training job's epochs (larder-
treebench read --share: every rank lists every directory, then reads its share of the files in a
shuffled order), plain and through the preload, with every Larder setting at its default, the
page cache dropped before each side. Prints a Markdown table: the listing and each epoch (slowest
rank), plain, Larder and their ratio; the directory's overflow entries; Larder's memory per file
(the ranks' proportional set size at the end, shared pages split between the processes mapping
them, above the plain run's, per file; and the same without the cached bytes themselves: the
metadata: node tables, directory shards and overflow, memos, listings, arena slack).

  size_table.py --treebench build/release/bin/larder-treebench \\
      --preload build/release/lib/liblarder_preload.so --root /var/tmp/larder-sizes \\
      --files 20000,100000,300000,1280000 [--ranks 2] [--node-size N] [--epochs 2] \\
      [--larder-env LARDER_TRANSPORT=mpi ...] [--json out.json]

--node-size N emulates nodes of N ranks (LARDER_NODE_SIZE; default: one node); --larder-env sets
a Larder setting for the Larder side (repeatable; every other setting stays at its default).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def drop_caches():
    try:
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def per_dir(files):
    return 1281 if files >= 1_000_000 else 1000


def run(args, tree, larder, scratch):
    out = os.path.join(scratch, "run.json")
    stats = os.path.join(scratch, "stats.json")
    cmd = [args.mpiexec, "-n", str(args.ranks), "-bind-to", "none"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LARDER_")}
    if larder:
        shm = os.path.join("/dev/shm", "larder-size-table")
        local = os.path.join(scratch, "local")
        for d in (shm, local):
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
        cmd += ["-genv", "LD_PRELOAD", args.preload]
        env.update(LARDER_PREFIX=tree, LARDER_LOCAL_FS="cache", LARDER_SHM_DIR=shm, LARDER_DIR=local, LARDER_STATS=stats)
        if args.node_size:
            env["LARDER_NODE_SIZE"] = str(args.node_size)
        for setting in args.larder_env:
            name, _, value = setting.partition("=")
            env[name] = value
    cmd += [args.treebench, "read", tree, "--share", "--passes", str(args.epochs), "--json", out]
    start = time.monotonic()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    got = json.load(open(out))
    got["wall"] = time.monotonic() - start
    if larder:
        got["stats"] = json.load(open(stats))
        shutil.rmtree(os.path.join("/dev/shm", "larder-size-table"), ignore_errors=True)
    return got


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--treebench", required=True)
    ap.add_argument("--preload", required=True)
    ap.add_argument("--mpiexec", default="mpiexec.mpich")
    ap.add_argument("--root", required=True, help="where the datasets are generated (kept)")
    ap.add_argument("--files", default="20000,100000,300000,1280000")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--node-size", type=int, default=0, help="LARDER_NODE_SIZE (0: one node)")
    ap.add_argument("--larder-env", action="append", default=[], metavar="NAME=VALUE",
                    help="a Larder setting for the Larder side (repeatable)")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--json", help="write every figure here")
    args = ap.parse_args()
    sizes = [int(x) for x in args.files.split(",")]
    os.makedirs(args.root, exist_ok=True)
    scratch = os.path.join(args.root, "scratch")
    os.makedirs(scratch, exist_ok=True)
    rows = []
    dropped = True
    for files in sizes:
        tree = os.path.join(args.root, f"dataset-{files}")
        if not os.path.exists(os.path.join(tree, ".complete")):
            log(f"generating {files} files in {tree}")
            shutil.rmtree(tree, ignore_errors=True)
            subprocess.run([args.treebench, "generate", tree, "--dataset", "--files", str(files),
                            "--per-dir", str(per_dir(files))], check=True,
                           stdout=subprocess.DEVNULL)
            open(os.path.join(tree, ".complete"), "w").close()
        log(f"{files} files: plain")
        dropped = drop_caches() and dropped
        plain = run(args, tree, False, scratch)
        log(f"{files} files: Larder")
        dropped = drop_caches() and dropped
        larder = run(args, tree, True, scratch)
        if plain["hash"] != larder["hash"]:
            sys.exit(f"{files} files: Larder's bytes differ from plain's")
        s = larder["stats"]
        extra = larder["pss_bytes_sum"] - plain["pss_bytes_sum"]
        row = {
            "files": files, "plain": plain, "larder": larder,
            "overflow_entries": s["directory"]["overflow_entries"],
            "pfs_reads": s["pfs"]["read_ops"], "fallbacks": s["fallbacks"],
            "memory_per_file": extra / files,
            "metadata_per_file": (extra - s["cache"]["bytes"]) / files,
        }
        rows.append(row)
        log(f"{files} files: listing {plain['listing_seconds']:.1f} / "
            f"{larder['listing_seconds']:.1f} s, epochs {plain['slowest_seconds']} / "
            f"{larder['slowest_seconds']}")
    where = (f"{args.ranks} ranks on {args.ranks // args.node_size} emulated nodes"
             if args.node_size else f"{args.ranks} ranks of one node")
    settings = ", ".join(args.larder_env) if args.larder_env else "every Larder setting at its default"
    print(f"{where}, {args.epochs} epochs, {settings}; page cache dropped before each side: "
          f"{'yes' if dropped else 'NO (not root)'}")
    print()
    head = "| files | listing: plain / Larder |"
    rule = "|---|---|"
    for e in range(args.epochs):
        head += f" epoch {e + 1}: plain / Larder |"
        rule += "---|"
    head += " listing + epoch 1: Larder ÷ plain | overflow entries | PFS reads | memory per file (metadata) |"
    rule += "---|---|---|---|"
    print(head)
    print(rule)
    for r in rows:
        p, l = r["plain"], r["larder"]
        line = f"| {r['files']:,} | {p['listing_seconds']:.1f} / {l['listing_seconds']:.1f} s |"
        for e in range(args.epochs):
            line += f" {p['slowest_seconds'][e]:.1f} / {l['slowest_seconds'][e]:.1f} s |"
        first = (l["listing_seconds"] + l["slowest_seconds"][0]) / \
            (p["listing_seconds"] + p["slowest_seconds"][0])
        line += (f" {first:.2f} × | {r['overflow_entries']:,} | {r['pfs_reads']:,} |"
                 f" {r['memory_per_file']:.0f} B ({r['metadata_per_file']:.0f} B) |")
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
