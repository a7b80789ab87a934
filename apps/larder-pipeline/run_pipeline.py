#!/usr/bin/python3
"""The producer-consumer pipeline (pipeline.py: simulation ranks write samples, training ranks
read them as they appear) three ways, side by side:

  plain           no Larder: producers write to the shared directory (temporary file, then
                  rename), consumers poll for each name, then read it from there
  larder-through  the preload with LARDER_PRODUCE: a consumer's open waits until the sample is
                  published, reads come from the producer's node, and every sample is also
                  written to the shared directory
  larder-local    the same, but samples stay on their node: nothing is written to the shared
                  directory, and they are gone at the end of the job

Ranks sit on emulated nodes of NODE_SIZE ranks; even nodes produce, odd nodes consume, and every
consumer trains on every sample. Prints, per mode:

  wall s                the job, mpiexec's start to its exit
  pipeline s            the first producer's start to the last consumer's end (imports excluded)
  PFS MiB written       bytes in the shared directory after the job (larder-local:
                        produce.pfs_bytes of Larder's stats)
  PFS MiB read          plain: what the consumers read; Larder: pfs.bytes_read
  MiB between nodes     transport.bytes (each sample crosses at most once per consumer node)
  MiB consumers read    what the consumers' reads returned, all nodes together
  consumer read wait s  summed over the consumers' samples: from asking for a sample to having
                        its bytes (mostly waiting for it to be produced)
  mismatches            samples whose bytes differ from the seed's (must be 0)

Everything is made in scratch directories (under /tmp and /dev/shm) that are removed at the end.

    apps/larder-pipeline/run_pipeline.py [--build build/release] [--ranks 4] [--node-size 2]
        [--samples 32] [--sample-kib 256] [--delay 0.1] [--mpi mpich|openmpi]
        [--modes plain,larder-through,larder-local] [--json FILE] [--check]

--check exits non-zero unless the figures are as they must be (the ctest smoke test); exit 77
means torch is missing (skipped).
"""
import argparse
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

sys.dont_write_bytecode = True  # importing pipeline.py must leave no __pycache__ in the sources
from pipeline import roles  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODES = {"plain": None, "larder-through": "through", "larder-local": "local"}
SKIPPED = 77  # ctest's SKIP_RETURN_CODE
MIB = 1 << 20


class Scratch:
    """The run's directories (/tmp for the shared directory and results, /dev/shm for Larder's
    node memory) and the tag that finds its processes; all of it goes at close()."""

    def __init__(self):
        self.tag = uuid.uuid4().hex
        self.work = tempfile.mkdtemp(prefix="larder-pipeline-")
        self.shm = tempfile.mkdtemp(prefix="larder-pipeline-", dir="/dev/shm")

    def mode_dirs(self, mode):
        dirs = {"out": os.path.join(self.work, mode, "out"),
                "results": os.path.join(self.work, mode, "results"),
                "local": os.path.join(self.work, mode, "local"),
                "shm": os.path.join(self.shm, mode)}
        for d in dirs.values():
            os.makedirs(d)
        return dirs

    def processes(self):
        """Processes still carrying this run's tag in their environment (launcher, ranks and
        DataLoader workers all inherit it)."""
        needle = f"PIPELINE_RUN_TAG={self.tag}".encode()
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if needle in f.read().split(b"\0"):
                        found.append(int(pid))
            except OSError:
                pass  # gone meanwhile, or not ours to read
        return found

    def close(self):
        for pid in self.processes():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.work, ignore_errors=True)
        shutil.rmtree(self.shm, ignore_errors=True)


def files_under(*dirs):
    return [os.path.join(d, f) for top in dirs for d, _, fs in os.walk(top) for f in fs]


def launch_line(args, env_vars, program):
    """mpiexec for args.ranks ranks, each with env_vars."""
    if args.mpi == "openmpi":
        cmd = ["mpiexec.openmpi", "-n", str(args.ranks), "--oversubscribe", "--bind-to", "none"]
        for k, v in env_vars.items():
            cmd += ["-x", f"{k}={v}"]
    else:
        cmd = ["mpiexec.mpich", "-n", str(args.ranks), "-bind-to", "none"]
        for k, v in env_vars.items():
            cmd += ["-genv", k, v]
    return cmd + program


def launcher_env(scratch, mpi):
    """The caller's environment without any Larder setting of its own (the launcher itself runs
    without the preload); the ranks get theirs on the launch line."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LARDER_") and k != "LD_PRELOAD"}
    env.update(PIPELINE_RUN_TAG=scratch.tag, PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS="1")
    if mpi == "openmpi":
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def larder_env(args, dirs, produce_mode, stats):
    return {"LD_PRELOAD": args.preload, "LARDER_PRODUCE": dirs["out"],
            "LARDER_PRODUCE_MODE": produce_mode, "LARDER_SHM_DIR": dirs["shm"],
            "LARDER_DIR": dirs["local"], "LARDER_NODE_SIZE": str(args.node_size),
            "LARDER_STATS": stats, "LARDER_LOG": "error",
            # a consumer may wait for a sample as long as the job may run
            "LARDER_TIMEOUT": str(args.timeout)}


def run_job(cmd, env, timeout):
    """Runs the job in its own session, so that a job past its time is ended whole."""
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, start_new_session=True)
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise SystemExit(f"the job ran past {timeout} s: {' '.join(cmd)}")
    if rc != 0:
        raise SystemExit(f"the job exited with {rc}: {' '.join(cmd)}")
    return time.monotonic() - t0


def run_mode(args, scratch, mode):
    dirs = scratch.mode_dirs(mode)
    stats_path = os.path.join(scratch.work, mode, "stats.json")
    # The ranks run this interpreter (the shebang's: Debian's, with numpy and torch).
    program = [sys.executable, os.path.join(HERE, "pipeline.py"),
               "--mode", "plain" if MODES[mode] is None else "larder",
               "--out", dirs["out"], "--results", dirs["results"], "--samples", str(args.samples),
               "--sample-kib", str(args.sample_kib), "--delay", str(args.delay),
               "--node-size", str(args.node_size)]
    env_vars = {} if MODES[mode] is None else larder_env(args, dirs, MODES[mode], stats_path)
    wall = run_job(launch_line(args, env_vars, program), launcher_env(scratch, args.mpi),
                   args.timeout)
    ranks = [json.load(open(os.path.join(dirs["results"], f)))
             for f in sorted(os.listdir(dirs["results"]))]
    stats = json.load(open(stats_path)) if MODES[mode] else None
    row = summarize(mode, wall, ranks, stats, dirs)
    row["left_behind"] = {"processes": scratch.processes(),
                          "files": files_under(dirs["shm"], dirs["local"])}
    return row


def summarize(mode, wall, ranks, stats, dirs):
    """The table's row for one mode, from the ranks' JSON, Larder's stats and the shared dir."""
    producers = [r for r in ranks if r["role"] == "producer"]
    consumers = [r for r in ranks if r["role"] == "consumer"]
    consumed = sum(r["bytes_read"] for r in consumers)
    shared_files = files_under(dirs["out"])
    shared = sum(os.path.getsize(f) for f in shared_files)
    row = {"mode": mode, "ranks": len(ranks), "wall_s": wall,
           "pipeline_s": max(r["end"] for r in ranks) - min(r["start"] for r in ranks),
           "produced": sum(r["samples"] for r in producers),
           "produced_bytes": sum(r["bytes_written"] for r in producers),
           "consumed": sum(r["samples"] for r in consumers), "consumed_bytes": consumed,
           "consumers": len(consumers), "shared_dir_files": len(shared_files),
           "shared_dir_bytes": shared,
           "read_wait_s": sum(r["read_wait_s"] for r in consumers),
           "stall_s": sum(r["stall_s"] for r in consumers),
           "mismatches": sum(r["mismatches"] for r in consumers), "rank_results": ranks}
    if stats is None:
        # Without Larder every byte a consumer reads comes from the shared directory.
        row.update(pfs_written=shared, pfs_read=consumed, between_nodes=None)
    else:
        written = stats["produce"]["pfs_bytes"] if mode == "larder-local" else shared
        row.update(pfs_written=written, pfs_read=stats["pfs"]["bytes_read"],
                   between_nodes=stats["transport"]["bytes"], produce=stats["produce"])
    return row


def mib(n):
    return "-" if n is None else f"{n / MIB:.2f}"


def table(rows):
    lines = ["| mode | wall s | pipeline s | samples produced / consumed | PFS MiB written "
             "| PFS MiB read | MiB between nodes | MiB consumers read | consumer read wait s "
             "| mismatches |", "|---" * 10 + "|"]
    for r in rows:
        lines.append(f"| {r['mode']} | {r['wall_s']:.1f} | {r['pipeline_s']:.1f} "
                     f"| {r['produced']} / {r['consumed']} | {mib(r['pfs_written'])} "
                     f"| {mib(r['pfs_read'])} | {mib(r['between_nodes'])} "
                     f"| {mib(r['consumed_bytes'])} | {r['read_wait_s']:.1f} | {r['mismatches']} |")
    return "\n".join(lines)


def problems(args, row):
    """What is wrong with one mode's figures (--check); empty when all is as it must be."""
    consumer_nodes = len({r["rank"] // args.node_size for r in row["rank_results"]
                          if r["role"] == "consumer"})
    found = []

    def expect(ok, what):
        if not ok:
            found.append(f"{row['mode']}: {what}")

    expect(row["mismatches"] == 0, f"{row['mismatches']} mismatched samples")
    expect(row["consumed"] == row["produced"] * row["consumers"],
           f"consumers read {row['consumed']} samples of {row['produced']} x {row['consumers']}")
    expect(not row["left_behind"]["processes"], f"processes left: {row['left_behind']}")
    expect(not row["left_behind"]["files"], f"Larder files left: {row['left_behind']}")
    if row["mode"] == "plain":
        return found
    produce = row["produce"]
    expect(produce["files"] == row["produced"],
           f"produce.files {produce['files']}, {row['produced']} samples written")
    expect(produce["bytes"] == row["produced_bytes"],
           f"produce.bytes {produce['bytes']}, {row['produced_bytes']} bytes written")
    expect(0 < row["between_nodes"] <= produce["bytes"] * consumer_nodes,
           f"transport.bytes {row['between_nodes']}: not in (0, {consumer_nodes} consumer "
           f"node(s) x produce.bytes {produce['bytes']}]")
    expect(row["pfs_read"] == 0, f"pfs.bytes_read {row['pfs_read']}")
    if row["mode"] == "larder-local":
        expect(produce["pfs_bytes"] == 0, f"produce.pfs_bytes {produce['pfs_bytes']}")
        expect(row["shared_dir_files"] == 0, f"{row['shared_dir_files']} files in the shared dir")
    else:
        expect(produce["pfs_bytes"] == produce["bytes"] == row["shared_dir_bytes"],
               f"produce.pfs_bytes {produce['pfs_bytes']}, produce.bytes {produce['bytes']}, "
               f"shared dir {row['shared_dir_bytes']} bytes")
    return found


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build/release"))
    ap.add_argument("--preload", help="the preload library (default: BUILD/lib/...)")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--node-size", type=int, default=2, help="ranks per emulated node")
    ap.add_argument("--samples", type=int, default=32, help="samples per producer")
    ap.add_argument("--sample-kib", type=int, default=256)
    ap.add_argument("--delay", type=float, default=0.1, help="producer compute per sample, s")
    ap.add_argument("--mpi", default="mpich", choices=["mpich", "openmpi"])
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--timeout", type=int, default=600, help="per job, s")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless every figure is as it must be")
    args = ap.parse_args()
    args.modes = args.modes.split(",")
    unknown = [m for m in args.modes if m not in MODES]
    if unknown:
        ap.error(f"unknown modes {unknown}; known: {', '.join(MODES)}")
    try:
        roles(args.ranks, args.node_size)
    except ValueError as e:
        ap.error(str(e))
    args.preload = os.path.abspath(args.preload or os.path.join(args.build,
                                                                "lib/liblarder_preload.so"))
    if not os.path.exists(args.preload):
        ap.error(f"no {args.preload}: build Larder first (--build, --preload)")
    return args


def main():
    args = parse_args()
    if importlib.util.find_spec("torch") is None:
        print("skipped: torch is not installed")
        return SKIPPED
    producers, consumers = roles(args.ranks, args.node_size)
    print(f"{args.ranks} ranks on emulated nodes of {args.node_size} ({args.mpi}): "
          f"{len(producers)} producers x {args.samples} samples of {args.sample_kib} KiB, "
          f"{len(consumers)} consumers reading every sample", flush=True)
    scratch = Scratch()
    try:
        rows = []
        for i, mode in enumerate(args.modes, 1):
            print(f"[{i}/{len(args.modes)}] {mode}", flush=True)
            rows.append(run_mode(args, scratch, mode))
            print(f"[{i}/{len(args.modes)}] {mode}: {rows[-1]['wall_s']:.1f} s", flush=True)
    finally:
        scratch.close()
    print(table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ranks": args.ranks, "node_size": args.node_size, "samples": args.samples,
                       "sample_kib": args.sample_kib, "delay": args.delay, "mpi": args.mpi,
                       "rows": rows}, f, indent=1)
    found = [p for row in rows for p in problems(args, row)] if args.check else []
    for p in found:
        print("FAIL: " + p)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
