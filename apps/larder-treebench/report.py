#!/usr/bin/env python3
"""The small-file tree read by 1, 2, 4, 8, 16 ranks, plain against Larder, side by side.

For each rank count: larder-treebench reads the tree (every rank stats, opens and reads every
file, PASSES times) without the preload (plain: the page cache serves it, faster than any PFS)
and with it (emulated nodes of NODE_SIZE ranks, or real network-namespace hosts with --netns).
Prints, per rank count: the slowest rank's time per pass, the ratios to plain, the PFS operations,
the directory operations per key, the bytes that crossed between nodes against one fetch per
node, and the most any rank served; optionally a JSON file and a plot (gnuplot).

    apps/larder-treebench/report.py --build build/release [--ranks 1,2,4,8,16] [--node-size 2]
        [--files 3000] [--passes 2] [--mpi mpich] [--netns] [--larder-env LARDER_X=V]
        [--json out.json] [--plot out.png]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def first_touch_ms_per_mb(mb=64):
    """This machine's cost of writing fresh anonymous memory, first touch and second, in ms per MB.

    A cold pass writes every cached byte into fresh shared memory and plain reads come from pages
    the page cache already holds, so the cold column moves with this figure: on a VM whose every
    first touch is a hypervisor fault it is 100x the second touch (the host returns freed pages).
    """
    import ctypes
    import mmap
    import time
    buf = mmap.mmap(-1, mb << 20)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    times = []
    for value in (1, 2):
        start = time.perf_counter()
        ctypes.memset(addr, value, mb << 20)
        times.append((time.perf_counter() - start) * 1e3 / mb)
    del addr
    buf.close()
    return times


def run(cmd, env, timeout):
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return p


def mpiexec(args, n, program, env_vars):
    """The launch line for n ranks with the given LARDER_*/LD_PRELOAD variables."""
    if args.netns:
        hosts = max(1, n // args.node_size)
        ppn = n // hosts
        cmd = [os.path.join(ROOT, "scripts/netns/cluster.sh"), "run", str(hosts), "--mpi",
               args.mpi, "--ppn", str(ppn), "--"]
        return cmd + program, env_vars
    if args.mpi == "openmpi":
        cmd = ["mpiexec.openmpi", "-n", str(n), "--oversubscribe", "--bind-to", "none"]
        for k, v in env_vars.items():
            cmd += ["-x", f"{k}={v}"]
        return cmd + program, {}
    cmd = ["mpiexec.mpich", "-n", str(n), "-bind-to", "none"]
    for k, v in env_vars.items():
        cmd += ["-genv", k, v]
    return cmd + program, {}


def one(args, work, tree, n, preload):
    out = os.path.join(work, f"times-{n}-{int(preload)}.json")
    stats = os.path.join(work, f"stats-{n}.json")
    env_vars = {}
    if preload:
        env_vars = {"LD_PRELOAD": args.preload, "LARDER_PREFIX": tree, "LARDER_LOCAL_FS": "cache", "LARDER_STATS": stats,
                    "LARDER_LOG": "error", "LARDER_MEM": args.mem}
        if not args.netns:
            env_vars["LARDER_NODE_SIZE"] = str(args.node_size)
        env_vars.update(kv.split("=", 1) for kv in args.larder_env)
    program = [os.path.join(args.build, "bin/larder-treebench"), "read", tree, "--passes",
               str(args.passes), "--json", out]
    if preload and args.netns:
        # Larder's bytes cross the hosts' veths (TCP), whatever the MPI library uses.
        env_vars.setdefault("LARDER_UCX_TLS", os.environ.get("LARDER_UCX_TLS", "tcp,self"))
    cmd, extra = mpiexec(args, n, program, env_vars)
    env = dict(os.environ, **extra)
    if args.netns:
        # The MPI library's own UCX on shared memory (the namespace hosts share one machine):
        # MPICH 4.0.2 with ranks of one host over TCP (cluster.sh's default) left a rank killed
        # or hanging in MPI_Finalize at 8 ranks on 4 hosts, plain runs included.
        env.setdefault("LARDER_NETNS_UCX_TLS", "self,sysv,posix")
        env.update(env_vars)
    if args.mpi == "openmpi":
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    run(cmd, env, args.timeout)
    times = json.load(open(out))["slowest_seconds"]
    return times, (json.load(open(stats)) if preload else None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--ranks", default="1,2,4,8,16")
    ap.add_argument("--node-size", type=int, default=2)
    ap.add_argument("--files", type=int, default=3000)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--mpi", default="mpich", choices=["mpich", "openmpi"])
    ap.add_argument("--mem", default="2G", help="LARDER_MEM")
    ap.add_argument("--netns", action="store_true",
                    help="ranks on network-namespace hosts (root), node-size ranks per host")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--larder-env", action="append", default=[], metavar="LARDER_X=VALUE",
                    help="a setting for Larder's runs (repeatable), e.g. LARDER_TRANSPORT=mpi")
    ap.add_argument("--json")
    ap.add_argument("--plot")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    args.preload = os.path.join(args.build, "lib/liblarder_preload.so")
    work = tempfile.mkdtemp(prefix="larder-treebench-")
    tree = os.path.join(work, "tree")
    try:
        run([os.path.join(args.build, "bin/larder-treebench"), "generate", tree, "--files",
             str(args.files)], dict(os.environ), 600)
        # The new files written back to disk now, not under the measured passes (the PFS here
        # is the local file system, whose writeback would take CPU from whichever run is next).
        os.sync()
        data = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tree) for f in fs)
        dirs = sum(1 for _ in os.walk(tree))
        rows = []
        first, second = first_touch_ms_per_mb()
        print(f"fresh memory: first touch {first:.2f} ms/MB, second {second:.3f} ms/MB", flush=True)
        print(f"tree: {args.files} files, {data / 1e6:.1f} MB, {dirs} directories; "
              f"{'netns hosts' if args.netns else 'emulated nodes'} of {args.node_size} ranks, "
              f"{args.mpi}", flush=True)
        print("| ranks | nodes | plain pass 1 | plain pass 2 | Larder cold | Larder warm | cold/plain "
              "| warm/plain | PFS ops | dir ops per key | between nodes / one fetch per node "
              "| most served by a rank |")
        print("|---" * 12 + "|")
        for n in [int(x) for x in args.ranks.split(",")]:
            plain, _ = one(args, work, tree, n, False)
            cached, s = one(args, work, tree, n, True)
            nodes = max(1, -(-n // args.node_size))
            keys = s["pfs"]["stat_ops"] + s["pfs"]["list_ops"] + s["pfs"]["read_ops"]
            pfs_ops = s["pfs"]["stat_ops"] + s["pfs"]["list_ops"] + s["pfs"]["read_ops"]
            fetch = data * (nodes - 1)
            crossed = s["transport"]["bytes"]
            served = s.get("skew", {}).get("bytes_served", {})
            row = {
                "ranks": n, "nodes": nodes, "plain": plain, "larder": cached,
                "pfs_ops": pfs_ops, "pfs_bytes": s["pfs"]["bytes_read"],
                "directory_ops": s["directory"]["ops"],
                "dir_ops_per_key": s["directory"]["ops"] / max(1, keys),
                "between_nodes": crossed, "one_fetch_per_node": fetch,
                "most_served": served.get("max", 0), "most_served_rank": served.get("max_rank", 0),
            }
            rows.append(row)
            ratio = f"{crossed / fetch:.2f}" if fetch else "-"
            print(f"| {n} | {nodes} | {plain[0]:.2f} s | {plain[-1]:.2f} s | {cached[0]:.2f} s | "
                  f"{cached[-1]:.2f} s | {cached[0] / plain[0]:.1f} x | {cached[-1] / plain[-1]:.1f} x "
                  f"| {pfs_ops} | {row['dir_ops_per_key']:.2f} | {ratio} "
                  f"| {row['most_served'] / 1e6:.1f} MB (rank {row['most_served_rank']}) |",
                  flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"files": args.files, "bytes": data, "first_touch_ms_per_mb": first,
                       "rows": rows}, f, indent=1)
        if args.plot and shutil.which("gnuplot"):
            dat = os.path.join(work, "plot.dat")
            with open(dat, "w") as f:
                for r in rows:
                    f.write(f"{r['ranks']} {r['plain'][0]} {r['plain'][-1]} {r['larder'][0]} "
                            f"{r['larder'][-1]}\n")
            subprocess.run(["gnuplot", "-e", f"""
set terminal pngcairo size 900,500; set output '{args.plot}';
set title 'small-file tree ({args.files} files), slowest rank per pass';
set xlabel 'ranks'; set ylabel 'seconds'; set logscale x 2; set key left top; set grid;
plot '{dat}' u 1:2 w lp t 'plain, pass 1', '' u 1:3 w lp t 'plain, pass 2',
     '' u 1:4 w lp t 'Larder, cold', '' u 1:5 w lp t 'Larder, warm'"""], check=True)
            print(f"plot: {args.plot}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
