#!/usr/bin/env python3
"""The docs figure for shared objects through the cache (docs/benchmarks.md; as root): `import
torch` from an environment tree (scripts/build-env-tree.py) served by scripts/pfs/pfs.sh's sshfs
mount shaped to RATE, by 1, 2, 4, 8 ranks on emulated nodes of 2 ranks, three ways:

  plain   every rank imports from the mount (no Larder)
  larder  the preload and the loader's audit module (LD_AUDIT), LARDER_PREFIX the mount: cold is
          the rank's import, warm a second process of the node importing afterwards; next step
          the same job run again as the allocation's next step (LARDER_KEEP: what the first
          kept on each node is used, checked, nothing read from the mount that a node kept)
  staged  larder-stage copies the tree to each node's /dev/shm first, then ranks import from the
          copy (the time includes the staging)

For each: the slowest rank's time and the bytes that crossed the shaped link for the job.
Writes a table (stdout and --out FILE.md) and, with gnuplot, a PNG (--png).

    python3 apps/larder-importbench/import_figure.py --build build/release [--rate 1gbit]
        [--ranks 1,2,4,8] [--out FILE.md] [--png FILE.png]"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
PYTHON = "/usr/bin/python3"
NODE_SIZE = 2


def link_bytes():
    """Bytes the PFS server's end of the shaped link has sent."""
    ns = [l.split()[0] for l in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                               text=True).stdout.splitlines()
          if l.startswith("lbp-pfs-") and l.split()[0].endswith("-srv")]
    out = subprocess.run(["ip", "-n", ns[0], "-s", "link", "show"], capture_output=True,
                         text=True).stdout.splitlines()
    total = 0
    for i, line in enumerate(out):
        if line.strip().startswith("TX:"):
            total += int(out[i + 1].split()[0])
    return total


def job(n, argv, env, out):
    for f in os.listdir(os.path.dirname(out)):
        if f.startswith(os.path.basename(out) + "."):
            os.unlink(os.path.join(os.path.dirname(out), f))
    cmd = ["mpiexec.mpich", "-n", str(n), "-bind-to", "none"] + argv
    subprocess.run(cmd, env=env, check=True, timeout=1800, stdout=subprocess.DEVNULL)
    rows = []
    for r in range(n):
        with open(f"{out}.{r}") as f:
            rows.append(json.load(f))
    return rows


def inner(args):
    mnt = args.mount
    tree = os.path.join(mnt, "env")
    work = args.work
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LARDER_", "LD_"))}
    base["PYTHONDONTWRITEBYTECODE"] = "1"
    rows = []
    for n in [int(x) for x in args.ranks.split(",")]:
        nodes = max(1, n // NODE_SIZE)
        out = os.path.join(work, "rank")
        row = {"ranks": n, "nodes": nodes}

        def paths(t):
            return {"PYTHONPATH": f"{t}/site", "LD_LIBRARY_PATH": f"{t}/lib:{t}/site/torch/lib"}

        env = dict(base, **paths(tree))
        b = link_bytes()
        r = job(n, [PYTHON, os.path.join(HERE, "import_rank.py"), out], env, out)
        row["plain_s"], row["plain_mb"] = max(x["cold"] for x in r), (link_bytes() - b) / 1e6

        shm = tempfile.mkdtemp(prefix="import-figure-shm-", dir="/dev/shm")
        env = dict(base, **paths(tree), LD_PRELOAD=f"{args.build}/lib/liblarder_preload.so",
                   LD_AUDIT=f"{args.build}/lib/liblarder_audit.so", LARDER_PREFIX=tree, LARDER_LOCAL_FS="cache",
                   LARDER_NODE_SIZE=str(NODE_SIZE), LARDER_MEM="4G", LARDER_LOG="error",
                   LARDER_SHM_DIR=shm, LARDER_KEEP="figure")
        try:
            b = link_bytes()
            r = job(n, [PYTHON, os.path.join(HERE, "import_rank.py"), out, "--warm"], env, out)
            row["larder_s"] = max(x["cold"] for x in r)
            row["larder_warm_s"] = max(x["warm"] for x in r)
            row["larder_mb"] = (link_bytes() - b) / 1e6
            # The allocation's next job step: the same job again, over what the first one kept.
            b = link_bytes()
            r = job(n, [PYTHON, os.path.join(HERE, "import_rank.py"), out], env, out)
            row["next_s"] = max(x["cold"] for x in r)
            row["next_mb"] = (link_bytes() - b) / 1e6
        finally:
            shutil.rmtree(shm, ignore_errors=True)

        stage = tempfile.mkdtemp(prefix="import-figure-stage-", dir="/dev/shm")
        try:
            env = dict(base, LARDER_NODE_SIZE=str(NODE_SIZE), LARDER_LOG="error")
            b = link_bytes()
            t0 = time.monotonic()
            subprocess.run(["mpiexec.mpich", "-n", str(nodes), "-bind-to", "none",
                            f"{args.build}/bin/larder-stage", "--to", f"{stage}/{{node}}", tree],
                           env=dict(env, LARDER_NODE_SIZE="1"), check=True, timeout=1800,
                           stdout=subprocess.DEVNULL)
            staged = time.monotonic() - t0
            # Every rank imports from its node's copy (ranks 2k and 2k+1 share node k's).
            env = dict(base, **paths(f"{stage}/0/env"))
            r = job(n, [PYTHON, os.path.join(HERE, "import_rank.py"), out], env, out)
            row["staged_s"] = staged + max(x["cold"] for x in r)
            row["staged_mb"] = (link_bytes() - b) / 1e6
        finally:
            shutil.rmtree(stage, ignore_errors=True)
        print(json.dumps(row), flush=True)
        rows.append(row)
    with open(os.path.join(work, "rows.json"), "w") as f:
        json.dump(rows, f)


def table(rows, rate):
    lines = [f"`import torch` from the shaped PFS ({rate}), slowest rank, seconds; MB over the link "
             "per job", "",
             "| ranks (nodes) | plain | plain MB | Larder cold | Larder warm | Larder MB | "
             "Larder next step (x plain, x warm) | next step MB | staged + import | staged MB |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['ranks']} ({r['nodes']}) | {r['plain_s']:.1f} | {r['plain_mb']:.0f} | "
                     f"{r['larder_s']:.1f} | {r['larder_warm_s']:.1f} | {r['larder_mb']:.0f} | "
                     f"{r['next_s']:.1f} ({r['next_s'] / r['plain_s']:.2f}, "
                     f"{r['next_s'] / r['larder_warm_s']:.2f}) | {r['next_mb']:.0f} | "
                     f"{r['staged_s']:.1f} | {r['staged_mb']:.0f} |")
    return "\n".join(lines) + "\n"


def plot(rows, png):
    if shutil.which("gnuplot") is None:
        print("no gnuplot: no plot")
        return
    data = png + ".dat"
    with open(data, "w") as f:
        for r in rows:
            f.write(f"{r['ranks']} {r['plain_s']} {r['larder_s']} {r['larder_warm_s']} "
                    f"{r['staged_s']} {r['next_s']}\n")
    script = (f"set terminal png size 800,450; set output '{png}'; set logscale x 2;"
              "set xlabel 'ranks (2 per emulated node)'; set ylabel 'slowest rank, s';"
              "set key top left; set title 'import torch from a shaped PFS';"
              f"plot '{data}' u 1:2 w lp t 'plain', '' u 1:3 w lp t 'Larder cold',"
              " '' u 1:4 w lp t 'Larder warm', '' u 1:5 w lp t 'larder-stage + import',"
              " '' u 1:6 w lp t 'Larder, next job step'")
    subprocess.run(["gnuplot", "-e", script], check=True)
    os.unlink(data)
    print(f"plot: {png}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--ranks", default="1,2,4,8")
    ap.add_argument("--out")
    ap.add_argument("--png")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--mount", help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    if args.inner:
        return inner(args)
    work = tempfile.mkdtemp(prefix="import-figure-")
    try:
        export, mnt = os.path.join(work, "export"), os.path.join(work, "mnt")
        os.makedirs(mnt)
        print("building the environment tree...", flush=True)
        subprocess.run([PYTHON, os.path.join(ROOT, "scripts", "build-env-tree.py"),
                        os.path.join(export, "env")], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([os.path.join(ROOT, "scripts", "pfs", "pfs.sh"), "run", "--export", export,
                        "--mount", mnt, "--rate", args.rate, "--",
                        PYTHON, os.path.abspath(__file__), "--inner", "--build", args.build,
                        "--mount", mnt, "--work", work, "--ranks", args.ranks], check=True)
        with open(os.path.join(work, "rows.json")) as f:
            rows = json.load(f)
        text = table(rows, args.rate)
        print(text)
        if args.out:
            with open(args.out, "w") as f:
                f.write(text)
        if args.png:
            plot(rows, os.path.abspath(args.png))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
