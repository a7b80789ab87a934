#!/usr/bin/env python3
"""larder-matrix: plain against Larder where the file system is not the bottleneck, every case in
one run, side by side (issue 48, "never slower than plain").

Cases, each on one node (2 ranks) and on emulated nodes (4 ranks, LARDER_NODE_SIZE=2):
  loader-fork, loader-spawn, loader-forkserver
        a tree of small files (ImageFolder's shape) read through a DataLoader of 2 workers per
        rank with that start method, not persistent; epoch 1 cold (page cache dropped), epoch 2
        warm
  large a file read sequentially by every rank in 4 MiB reads, cold then warm
  import `import torch` from an environment tree (scripts/build-env-tree.py) with the preload
        and the loader's audit module, page cache dropped (cold)

Sides: plain (no Larder); larder (the defaults: a prefix on a node-local file system is left to
it, LARDER_LOCAL_FS=bypass); cached-ucx and cached-mpi (LARDER_LOCAL_FS=cache: the local
directory stands in for a PFS, served by the cache over each transport). Each figure is the
slowest rank's time, the median of --repeat runs (each repeat runs every side in turn); the
table gives each side's time ÷ plain's, and cached-mpi ÷ cached-ucx.
Writes the table (stdout, and --out FILE.md) and a plot (--png FILE.png, matplotlib).

    python3 apps/larder-matrix/matrix.py --build build/release --root /var/tmp/larder-matrix \\
        [--files 4000] [--large 512M] [--cases loader-fork,...] [--sides plain,larder,...] \\
        [--layouts one,nodes] [--repeat 1] [--set LARDER_NAME=VALUE ...] [--out FILE.md] \\
        [--png FILE.png]

As root (the page cache is dropped before each cold run; without root it is not, and the cold
figures say so). Takes about 10 minutes a repeat with the defaults on 2 cores."""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "apps", "larder-treebench"))
from size_table import drop_caches  # noqa: E402  (the same page-cache drop as the size table)
PYTHON = "/usr/bin/python3"
CASES = ("loader-fork", "loader-spawn", "loader-forkserver", "large", "import")
SIDES = ("plain", "larder", "cached-ucx", "cached-mpi")
LAYOUTS = {"one": (2, 0), "nodes": (4, 2)}  # ranks, LARDER_NODE_SIZE (0: the real node)
READ = 4 << 20


# ---- one rank --------------------------------------------------------------------------------

class Files:
    """The dataset: every file of the tree, read whole (at module level: spawn and forkserver
    workers unpickle it)."""

    def __init__(self, root):
        self.files = []
        for d in sorted(os.listdir(root)):
            sub = os.path.join(root, d)
            self.files += [os.path.join(sub, n) for n in sorted(os.listdir(sub))]

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        with open(self.files[i], "rb") as f:
            return len(f.read())


def rank_loader(root, context, out):
    import torch.distributed as dist
    from torch.utils.data import DataLoader, DistributedSampler

    rank, size = rank_and_size()
    dist.init_process_group("gloo", init_method="file://" + out + ".store", rank=rank,
                            world_size=size)
    ds = Files(root)
    sampler = DistributedSampler(ds, num_replicas=size, rank=rank, shuffle=True, seed=5)
    loader = DataLoader(ds, batch_size=32, sampler=sampler, num_workers=2,
                        multiprocessing_context=context, collate_fn=sum)
    times, total = [], 0
    for epoch in range(2):
        sampler.set_epoch(epoch)
        dist.barrier()
        t = time.monotonic()
        for n in loader:
            total += n
        times.append(time.monotonic() - t)
    del loader
    write(out, rank, {"times": times, "bytes": total})
    dist.barrier()
    dist.destroy_process_group()


def rank_large(path, out):
    rank, _ = rank_and_size()
    times, total = [], 0
    buf = bytearray(READ)
    for _ in range(2):
        sync(out, rank, len(times))
        t = time.monotonic()
        with open(path, "rb", buffering=0) as f:
            while True:
                n = f.readinto(buf)
                if not n:
                    break
                total += n
        times.append(time.monotonic() - t)
    write(out, rank, {"times": times, "bytes": total})


def rank_import(out):
    rank, _ = rank_and_size()
    t = time.monotonic()
    import torch  # noqa: F401
    write(out, rank, {"times": [time.monotonic() - t], "bytes": 0})


def rank_and_size():
    rank = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
    size = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "1")))
    return rank, size


def sync(out, rank, step):
    """A barrier through files (the large case runs no MPI in Python): every rank starts a pass
    together."""
    _, size = rank_and_size()
    open(f"{out}.sync{step}.{rank}", "w").close()
    while not all(os.path.exists(f"{out}.sync{step}.{r}") for r in range(size)):
        time.sleep(0.002)


def write(out, rank, result):
    with open(f"{out}.{rank}", "w") as f:
        json.dump(result, f)


# ---- the driver ------------------------------------------------------------------------------

def make_tree(tree, files):
    done = tree + ".complete"  # beside the tree: the loader lists every entry inside it
    if os.path.exists(done):
        return
    shutil.rmtree(tree, ignore_errors=True)
    rng = random.Random(48)
    per_dir = 100
    for i in range(files):
        d = os.path.join(tree, f"class{i // per_dir:03d}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"img{i:06d}.bin"), "wb") as f:
            f.write(rng.randbytes(rng.randint(8 << 10, 64 << 10)))
    open(done, "w").close()


def make_large(path, size):
    if os.path.exists(path) and os.path.getsize(path) == size:
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        block = os.urandom(1 << 20)
        for _ in range(size >> 20):
            f.write(block)


def memory_probe(path, size=256 << 20):
    """What a cold read into a cache's fresh memory costs on this machine, against plain's reused
    buffer: the large file's first `size` bytes (read once first, so both read the page cache) in
    4 MiB preads, into one reused buffer, and into fresh pages of a /dev/shm file, each range
    populated first (MADV_POPULATE_WRITE) as Larder's arenas do (runtime/tier/arena.cpp).
    Returns (seconds into the reused buffer, seconds into fresh shared memory)."""
    import mmap
    fd = os.open(path, os.O_RDONLY)
    try:
        size = min(size, os.fstat(fd).st_size) // READ * READ
        buf = bytearray(READ)
        for off in range(0, size, READ):
            os.preadv(fd, [buf], off)
        t = time.monotonic()
        for off in range(0, size, READ):
            os.preadv(fd, [buf], off)
        reused = time.monotonic() - t
        with open(f"/dev/shm/larder-matrix-probe-{os.getpid()}", "w+b") as shm:
            os.unlink(shm.name)
            shm.truncate(size)
            with mmap.mmap(shm.fileno(), size) as arena:
                view = memoryview(arena)
                t = time.monotonic()
                for off in range(0, size, READ):
                    try:
                        arena.madvise(getattr(mmap, "MADV_POPULATE_WRITE", 23), off, READ)
                    except OSError:  # before Linux 5.14: the pread's faults allocate
                        pass
                    os.preadv(fd, [view[off:off + READ]], off)
                fresh = time.monotonic() - t
                view.release()
        return reused, fresh
    finally:
        os.close(fd)


def make_env_tree(root):
    tree = os.path.join(root, "env")
    if not os.path.exists(os.path.join(tree, "manifest.json")):
        shutil.rmtree(tree, ignore_errors=True)
        subprocess.run([PYTHON, os.path.join(ROOT, "scripts", "build-env-tree.py"), tree,
                        "--modules", "torch"], check=True, stdout=subprocess.DEVNULL)
    return tree


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


class Matrix:
    def __init__(self, args):
        self.args = args
        self.scratch = os.path.join(args.root, "scratch")
        os.makedirs(self.scratch, exist_ok=True)
        self.tree = os.path.join(args.root, f"tree-{args.files}")
        # in a directory of its own: the prefix must not hold the scratch files (a prefix's files
        # are read-only for the job, and the ranks' barrier files come and go)
        self.large = os.path.join(args.root, "large", "large.bin")
        self.env_tree = None
        self.dropped = True

    def job(self, case, side, layout):
        ranks, node_size = LAYOUTS[layout]
        out = os.path.join(self.scratch, "r")
        for f in os.listdir(self.scratch):
            if f.startswith("r."):
                os.unlink(os.path.join(self.scratch, f))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LARDER_", "LD_"))}
        env.update(PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
        if case == "import":
            env.update(PYTHONPATH=f"{self.env_tree}/site",
                       LD_LIBRARY_PATH=f"{self.env_tree}/lib:{self.env_tree}/site/torch/lib")
            argv = ["--rank", "import", out]
            prefix = self.env_tree
        elif case == "large":
            argv = ["--rank", "large", self.large, out]
            prefix = os.path.dirname(self.large)
        else:
            argv = ["--rank", "loader", self.tree, case.split("-", 1)[1], out]
            prefix = self.tree
        cmd = [self.args.mpiexec, "-n", str(ranks), "-bind-to", "none"]
        shm = os.path.join("/dev/shm", "larder-matrix")
        if side != "plain":
            shutil.rmtree(shm, ignore_errors=True)
            os.makedirs(shm)
            larder = {"LD_PRELOAD": f"{self.args.build}/lib/liblarder_preload.so",
                      "LARDER_PREFIX": prefix, "LARDER_SHM_DIR": shm, "LARDER_LOG": "error",
                      "LARDER_KEEP": "off",
                      "LARDER_STATS": os.path.join(self.scratch, "stats.json")}
            if node_size:
                larder["LARDER_NODE_SIZE"] = str(node_size)
            if case == "import":
                larder["LD_AUDIT"] = f"{self.args.build}/lib/liblarder_audit.so"
            if side.startswith("cached"):
                larder.update(LARDER_LOCAL_FS="cache", LARDER_TRANSPORT=side.split("-")[1])
            larder.update(s.split("=", 1) for s in self.args.set)
            for k, v in larder.items():
                cmd += ["-genv", k, v]
        cmd += [PYTHON, os.path.abspath(__file__)] + argv
        self.dropped = drop_caches() and self.dropped
        subprocess.run(cmd, env=env, check=True, timeout=1800, stdout=subprocess.DEVNULL)
        shutil.rmtree(shm, ignore_errors=True)
        parts = [json.load(open(f"{out}.{r}")) for r in range(ranks)]
        passes = len(parts[0]["times"])
        return [max(p["times"][i] for p in parts) for i in range(passes)], \
            sum(p["bytes"] for p in parts)

    def run(self):
        a = self.args
        cases = a.cases.split(",")
        if any(c.startswith("loader") for c in cases):
            make_tree(self.tree, a.files)
        if "large" in cases:
            make_large(self.large, parse_size(a.large))
        if "import" in cases:
            self.env_tree = make_env_tree(a.root)
        rows = []
        for case in cases:
            for layout in a.layouts.split(","):
                # Each repeat runs every side once, one after another, so that a drift of the
                # machine's speed (this VM's plain epochs vary by 10-30 % over an hour) falls on
                # every side alike; each figure is the median of its side's runs.
                runs = {side: [] for side in a.sides.split(",")}
                for r in range(a.repeat):
                    for side in runs:
                        print(f"{case} {layout} {side} ({r + 1}/{a.repeat})", file=sys.stderr,
                              flush=True)
                        runs[side].append(self.job(case, side, layout))
                times = {}
                plain_bytes = None
                for side, got in runs.items():
                    sizes = {b for _, b in got}
                    if len(sizes) != 1:
                        sys.exit(f"{case} {layout} {side}: the runs read different bytes {sizes}")
                    if plain_bytes is None:
                        plain_bytes = got[0][1]
                    elif got[0][1] != plain_bytes:
                        sys.exit(f"{case} {layout} {side}: read {got[0][1]} bytes, "
                                 f"{a.sides.split(',')[0]} {plain_bytes}")
                    times[side] = [statistics.median(r[0][i] for r in got)
                                   for i in range(len(got[0][0]))]
                for i, phase in enumerate(("cold", "warm")[:len(times["plain"])]):
                    rows.append({"case": case, "layout": layout, "phase": phase,
                                 **{s: t[i] for s, t in times.items()}})
                    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        return rows


def table(rows, sides):
    head = "| case | layout | pass | plain s |" + "".join(
        f" {s} ÷ plain |" for s in sides if s != "plain")
    both = "cached-ucx" in sides and "cached-mpi" in sides
    if both:
        head += " mpi ÷ ucx |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        line = f"| {r['case']} | {r['layout']} | {r['phase']} | {r['plain']:.2f} |"
        for s in sides:
            if s != "plain":
                line += f" {r[s] / r['plain']:.2f} |"
        if both:
            line += f" {r['cached-mpi'] / r['cached-ucx']:.2f} |"
        lines.append(line)
    return "\n".join(lines)


def plot(rows, sides, png):
    try:
        import matplotlib
    except ImportError:
        if sys.executable == PYTHON:
            raise
        # python3 on the PATH may be another interpreter (a pyenv one) without matplotlib:
        # Debian's has it (scripts/setup.sh installs python3-matplotlib).
        subprocess.run([PYTHON, os.path.abspath(__file__), "--plot", json.dumps(rows),
                        ",".join(sides), png], check=True)
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    shown = [s for s in sides if s != "plain"]
    labels = [f"{r['case']}\n{r['layout']} {r['phase']}" for r in rows]
    fig, ax = plt.subplots(figsize=(max(8, len(rows) * 0.9), 4.5))
    width = 0.8 / max(1, len(shown))
    for k, s in enumerate(shown):
        xs = [i + (k - (len(shown) - 1) / 2) * width for i in range(len(rows))]
        ax.bar(xs, [r[s] / r["plain"] for r in rows], width, label=s)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(1.1, color="red", linewidth=0.8, linestyle="--", label="1.1 × plain")
    ax.set_yscale("log")  # a cold miss forced through the cache is 20 x; the rest near 1
    ratios = [r[s] / r["plain"] for r in rows for s in shown]
    # Bars start at the axis' bottom: below the smallest ratio, so that every bar shows.
    ax.set_ylim(min([0.4] + [x * 0.7 for x in ratios if x > 0]), max([2.5] + ratios) * 1.3)
    ax.set_yticks([0.1, 0.2, 0.3, 0.5, 0.8, 1, 1.25, 1.5, 2, 3, 5, 10, 20])
    ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("time ÷ plain's")
    ax.set_title("Larder against plain on a local disk (lower is faster)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--plot":
        plot(json.loads(sys.argv[2]), sys.argv[3].split(","), sys.argv[4])
        return
    if len(sys.argv) > 2 and sys.argv[1] == "--rank":
        kind, rest = sys.argv[2], sys.argv[3:]
        {"loader": rank_loader, "large": rank_large, "import": rank_import}[kind](*rest)
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--root", required=True, help="a directory on the disk to measure")
    ap.add_argument("--mpiexec", default="mpiexec.mpich")
    ap.add_argument("--files", type=int, default=4000)
    ap.add_argument("--large", default="512M")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--sides", default=",".join(SIDES))
    ap.add_argument("--layouts", default="one,nodes")
    ap.add_argument("--repeat", type=int, default=1, help="runs per figure (their median)")
    ap.add_argument("--set", action="append", default=[], metavar="LARDER_NAME=VALUE",
                    help="a Larder setting for every side but plain (repeatable), e.g. "
                         "LARDER_READAHEAD=0 to measure without read-ahead")
    ap.add_argument("--probe-memory", action="store_true",
                    help="print what 256 MiB of the large file cost read into one reused buffer "
                         "and into fresh shared memory (a cache's floor for a cold read), and "
                         "stop")
    ap.add_argument("--out")
    ap.add_argument("--png")
    args = ap.parse_args()
    if args.probe_memory:
        large = os.path.join(args.root, "large", "large.bin")
        make_large(large, parse_size(args.large))
        reused, fresh = memory_probe(large)
        print(f"256 MiB in 4 MiB preads from the page cache: {reused:.3f} s into one reused "
              f"buffer, {fresh:.3f} s into fresh shared memory ({fresh / reused:.1f} x)")
        return
    for setting in args.set:
        name, eq, _ = setting.partition("=")
        if not eq or not name.startswith("LARDER_"):
            ap.error(f"--set takes LARDER_NAME=VALUE (got '{setting}')")
    if "plain" not in args.sides.split(","):
        ap.error("--sides must include plain: every figure is a ratio to it")
    args.build = os.path.abspath(args.build)
    os.makedirs(args.root, exist_ok=True)
    m = Matrix(args)
    rows = m.run()
    sides = args.sides.split(",")
    text = table(rows, sides)
    note = "" if m.dropped else "\n(the page cache was NOT dropped: run as root for cold figures)"
    print(text + note)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + note + "\n")
    if args.png:
        plot(rows, sides, args.png)


if __name__ == "__main__":
    main()
