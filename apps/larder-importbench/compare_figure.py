#!/usr/bin/env python3
"""Larder against what users pick instead for the `import torch` storm (issue 26; as root).

One environment tree (scripts/build-env-tree.py) on an emulated PFS, imported by 1, 2, 4, 8 ranks
on emulated nodes of 2 ranks, six ways side by side:

  plain     every rank imports from its node's PFS mount
  larder    the preload and the loader's audit module (LD_AUDIT), LARDER_PREFIX the tree: the
            rank's import, cold (the first in the job)
  stage     larder-stage (one rank per node) copies the tree to each node's /dev/shm, then the
            ranks import from their node's copy (the time includes the staging)
  squashfs  a mksquashfs image of the tree (default compression, gzip) on the PFS; each node
            mounts it with squashfuse from its own PFS mount (the time includes the mounts)
  tarball   an uncompressed tar of the tree on the PFS; each node unpacks it with `tar -xf`
            read straight from its PFS mount (in 1 MiB records, --tar-blocking) into /dev/shm
            (the time includes the unpacking)
  later_step  Larder in a later step of the same allocation: a first step (Larder cold, with
            LARDER_KEEP set, not measured) keeps what it cached on each node; the page cache is
            dropped and the measured step imports over the kept stores (the time includes the
            step's adoption of them; node memory is the kept stores plus what the step adds)
  later_trusted  the same with LARDER_REVALIDATE=0 in the measured step (files declared not to
            change): it uses the kept stat answers and listings as they are

Every emulated node has its own PFS client, as on a cluster: one scripts/pfs/pfs.sh instance per
node (its own server and client namespaces, shaped link and sshfs mount). Each rank runs through
a wrapper that enters a private mount namespace and binds its node's directory (node = rank / 2:
the sshfs mount, the squashfuse mount, or the /dev/shm copy) onto one common path, so every rank
sees the tree at the same path, as the environment's PYTHONPATH and Larder's keys need. The page
cache is dropped (sync; echo 3 > /proc/sys/vm/drop_caches) before each way.

Figures per way and rank count: the slowest rank's time (setup, then the slowest rank's
`import torch` as import_rank.py times it), the job end to end (setup start to mpiexec's exit:
launch, Larder's MPI start and finish included), the bytes the PFS servers sent (TX bytes of each
node's server veth, summed), the PFS requests (TCP segments carrying data from each node's sftp
client to its server, TcpExt TCPOrigDataSent in the client namespaces: about one per sftp request,
fewer when requests sent together share a segment), node memory (see the table's notes) and the
1-minute load average before the way. Writes a markdown table (stdout and --out FILE.md) and, with
gnuplot, a PNG (--png): slowest-rank seconds against ranks, one line per way.

    python3 apps/larder-importbench/compare_figure.py --build build/release [--rate 1gbit]
        [--delay 250us] [--ranks 1,2,4,8]
        [--ways plain,larder,later_step,later_trusted,stage,squashfs,tarball]
        [--tree DIR] [--tar-blocking 2048] [--out FILE.md] [--png FILE.png] [--json FILE.json]

--tree reuses a tree built before (hard-linked into the export) instead of building one. Every
mount, namespace, pfs.sh instance, /dev/shm copy and temporary directory it makes is removed at
the end, also on failure, Ctrl-C or SIGTERM."""
import argparse
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from import_figure import NODE_SIZE, PYTHON, ROOT  # noqa: E402

PFS_SH = os.path.join(ROOT, "scripts", "pfs", "pfs.sh")
IMPORT_RANK = os.path.join(HERE, "import_rank.py")
JOB_TIMEOUT = 1800  # seconds
# tar reads the tarball in records of this many 512-byte blocks: 1 MiB, as a PFS client's
# readahead would fetch a sequential read. pfs.sh's sshfs (direct_io) has no readahead, so tar's
# default (20: 10 KiB) costs a round trip per 10 KiB (68 s against 10 s for 791 MB at 1gbit here).
TAR_BLOCKING = 2048

# The ways, in table order: key, label.
WAYS = [("plain", "plain (PFS)"), ("larder", "Larder cold"),
        ("later_step", "Larder in a later job step"),
        ("later_trusted", "Larder in a later job step, LARDER_REVALIDATE=0"),
        ("stage", "larder-stage + import"),
        ("squashfs", "squashfs image"), ("tarball", "tarball to /dev/shm")]

# Runs one rank's command with its node's directory bound onto the common path, in a private
# mount namespace: wrap.sh NODE_SIZE SRC_PATTERN COMMON CMD..., SRC_PATTERN's %d the node. The
# environment the command needs (LD_PRELOAD, LD_AUDIT, PYTHONPATH...) is given to it with `env`
# as the last exec, so the wrapper's own processes (sh, unshare, mount) load nothing from the
# tree and no Larder.
WRAPPER = """#!/bin/sh
set -e
size=$1 pattern=$2 common=$3
shift 3
node=$(( ${PMI_RANK:?no PMI_RANK: not started by mpiexec} / size ))
src=$(printf "$pattern" "$node")
exec unshare --mount --propagation private /bin/sh -c \\
  'mount --bind "$1" "$2" && shift 2 && exec "$@"' sh "$src" "$common" "$@"
"""


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def mounts_under(path):
    """Mount points at or below `path` in this mount namespace, deepest first."""
    out = []
    with open("/proc/self/mounts") as f:
        for line in f:
            mnt = line.split()[1].replace("\\040", " ")
            if mnt == path or mnt.startswith(path.rstrip("/") + "/"):
                out.append(mnt)
    return sorted(out, key=len, reverse=True)


def wait_for_mount(path, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while not mounts_under(path):
        if proc.poll() is not None:
            raise RuntimeError(f"squashfuse for {path} exited with status {proc.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"squashfuse did not mount {path} within {timeout} s")
        time.sleep(0.002)


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def tmpfs_used(path):
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


class PeakSampler:
    """The largest tmpfs_used(path) seen while it runs (every 20 ms)."""

    def __init__(self, path):
        self.path, self.peak = path, tmpfs_used(path)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, tmpfs_used(self.path))

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, tmpfs_used(self.path))


class Pfs:
    """One pfs.sh instance per emulated node, each serving `export` at mnt/node<k>."""

    def __init__(self, export, mnt_root, rate, delay):
        self.export, self.mnt_root, self.rate, self.delay = export, mnt_root, rate, delay
        self.ids = []

    def up(self, nodes):
        for k in range(nodes):
            cmd = [PFS_SH, "up", "--export", self.export, "--mount", self.mount(k),
                   "--rate", self.rate]
            if self.delay:
                cmd += ["--delay", self.delay]
            done = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True)
            self.ids.append(done.stdout.strip())
            log(f"node {k}: PFS client {self.ids[-1]} at {self.mount(k)}")

    def mount(self, k):
        return os.path.join(self.mnt_root, f"node{k}")

    def number_inodes(self, nodes):
        """Gives every file the same inode number through every node's mount, as a parallel file
        system's clients do. sftp carries no inode numbers: sshfs numbers files in the order it
        first looks them up (and keeps the numbers: pfs.sh mounts with noforget). Looking up the
        whole export in one order on every mount, before anything else, numbers them alike; a
        file's version (inode, size, times) is then the same on every node, which a later job
        step's use of another node's kept copy needs. Returns how many files were looked up."""
        def walk(root):
            n = 0
            stack = [root]
            while stack:
                d = stack.pop()
                for name in sorted(os.listdir(d)):
                    path = os.path.join(d, name)
                    st = os.lstat(path)
                    n += 1
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(path)
            return n

        counts = [0] * nodes
        def run(k):
            counts[k] = walk(self.mount(k))
        threads = [threading.Thread(target=run, args=(k,)) for k in range(nodes)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # Checked on a sample: the same numbers everywhere, or the run says so.
        sample = []
        for dirpath, _, files in os.walk(os.path.join(self.mount(0), "env")):
            sample += [os.path.relpath(os.path.join(dirpath, f), self.mount(0)) for f in files[:2]]
            if len(sample) >= 50:
                break
        for rel in sample:
            inos = {os.lstat(os.path.join(self.mount(k), rel)).st_ino for k in range(nodes)}
            if len(inos) != 1:
                raise RuntimeError(f"{rel} has inode numbers {sorted(inos)} on the nodes' mounts")
        return counts[0]

    def down(self):
        while self.ids:  # the reverse order: the first instance may own /run/sshd
            subprocess.run([PFS_SH, "down", self.ids.pop()], check=False)

    def counters(self):
        """(bytes the servers sent, data segments the clients sent), summed over the nodes."""
        sent = segs = 0
        for pid in self.ids:
            dev = "lbps" + pid.rsplit("-", 1)[1]
            link = json.loads(subprocess.run(
                ["ip", "-j", "-s", "-n", f"{pid}-srv", "link", "show", "dev", dev],
                check=True, capture_output=True, text=True).stdout)[0]
            sent += link["stats64"]["tx"]["bytes"]
            text = subprocess.run(["ip", "netns", "exec", f"{pid}-cli", "cat", "/proc/net/netstat"],
                                  check=True, capture_output=True, text=True).stdout.splitlines()
            for head, vals in zip(text[::2], text[1::2]):
                if head.startswith("TcpExt:"):
                    segs += int(dict(zip(head.split(), vals.split()))["TCPOrigDataSent"])
        return sent, segs


def stat_round_trip(mount, count=400):
    """Median and 90th percentile seconds of one stat() of a file not seen before through
    `mount` (page cache dropped first): the PFS's metadata round trip as a rank sees it."""
    paths = []
    for dirpath, _, files in os.walk(os.path.join(mount, "env", "site")):
        paths += [os.path.join(dirpath, f) for f in files]
        if len(paths) >= count:
            break
    drop_caches()
    times = []
    for p in paths[:count]:
        t = time.perf_counter()
        os.stat(p)
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2], times[len(times) * 9 // 10]


class Bench:
    def __init__(self, args, work, shm, pfs):
        self.args, self.work, self.shm, self.pfs = args, work, shm, pfs
        self.common = os.path.join(work, "root")  # every rank's view: <common>/env
        self.tree = os.path.join(self.common, "env")
        self.wrapper = os.path.join(work, "wrap.sh")
        self.out = os.path.join(work, "rank")
        self.fuse = []  # (mountpoint, Popen) of squashfuse mounts alive
        self.job_end = None  # when the last import job's mpiexec exited
        self.base = {k: v for k, v in os.environ.items() if not k.startswith(("LARDER_", "LD_"))}
        self.base["PYTHONDONTWRITEBYTECODE"] = "1"
        os.makedirs(self.common)
        with open(self.wrapper, "w") as f:
            f.write(WRAPPER)
        os.chmod(self.wrapper, 0o755)

    def tree_env(self):
        t = self.tree
        return {"PYTHONPATH": f"{t}/site", "LD_LIBRARY_PATH": f"{t}/lib:{t}/site/torch/lib"}

    def mpiexec(self, n, node_size, src_pattern, env, argv):
        """Runs argv in n ranks, each with its node's src_pattern % node at the common path."""
        cmd = (["mpiexec.mpich", "-n", str(n), "-bind-to", "none", self.wrapper, str(node_size),
                src_pattern, self.common, "env"] + [f"{k}={v}" for k, v in env.items()] + argv)
        errors = os.path.join(self.work, "job.stderr")
        with open(errors, "w") as err:
            proc = subprocess.Popen(cmd, env=self.base, stdout=subprocess.DEVNULL, stderr=err,
                                    start_new_session=True)
        try:
            status = proc.wait(timeout=JOB_TIMEOUT)
        finally:
            if proc.poll() is None:  # interrupted: end the job we started (its process group)
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        with open(errors) as f:  # what the ranks said, but larder-stage's progress lines
            for line in f:
                if "of its share copied" not in line:
                    print("  | " + line.rstrip(), flush=True)
        if status != 0:
            raise RuntimeError(f"job failed (status {status}): {' '.join(cmd)}")

    def import_job(self, n, src_pattern, extra_env=None):
        """Every rank imports torch from <common>/env; the slowest rank's import, seconds."""
        for f in os.listdir(self.work):
            if f.startswith("rank."):
                os.unlink(os.path.join(self.work, f))
        env = dict(self.tree_env(), **(extra_env or {}))
        self.mpiexec(n, NODE_SIZE, src_pattern, env, [PYTHON, IMPORT_RANK, self.out])
        self.job_end = time.monotonic()
        cold = []
        for r in range(n):
            with open(f"{self.out}.{r}") as f:
                cold.append(json.load(f)["cold"])
        return max(cold)

    def pfs_pattern(self):
        return os.path.join(self.pfs.mnt_root, "node%d")

    # ---- the ways: each returns (setup s, slowest import s, node bytes, note) ----
    def way_plain(self, n, nodes):
        return 0.0, self.import_job(n, self.pfs_pattern()), 0, ""

    def larder_env(self, shm, stats, keep=None):
        return {"LD_PRELOAD": f"{self.args.build}/lib/liblarder_preload.so",
                "LD_AUDIT": f"{self.args.build}/lib/liblarder_audit.so",
                "LARDER_PREFIX": self.tree, "LARDER_LOCAL_FS": "cache", "LARDER_NODE_SIZE": str(NODE_SIZE),
                "LARDER_MEM": "4G", "LARDER_LOG": "error", "LARDER_SHM_DIR": shm,
                "LARDER_STATS": stats, "LARDER_KEEP": keep or "off",
                **dict(kv.split("=", 1) for kv in self.args.larder_env)}

    def larder_job(self, n, shm, env, stats):
        """One Larder import job: (slowest import s, peak bytes of Larder's files in shm (kept
        stores of earlier steps included), note from its stats)."""
        base = tmpfs_used(self.shm) - du(shm)
        with PeakSampler(self.shm) as peak:
            t = self.import_job(n, self.pfs_pattern(), env)
        with open(stats) as f:
            s = json.load(f)
        os.unlink(stats)
        note = (f"LARDER_STATS: cache.bytes {s['cache']['bytes'] / 1e6:.0f} MB, "
                f"node.file_bytes {s['node']['file_bytes'] / 1e6:.0f} MB, pfs.bytes_read "
                f"{s['pfs']['bytes_read'] / 1e6:.0f} MB, kept.bytes_adopted "
                f"{s['kept']['bytes_adopted'] / 1e6:.0f} MB, kept.answers_adopted "
                f"{s['kept'].get('answers_adopted', 0)}, pfs.stat_ops {s['pfs']['stat_ops']} "
                f"(job totals)")
        return t, peak.peak - base, note

    def larder_way(self, n, nodes, keep=None, fresh=True, extra=None):
        """One measured Larder job in <shm>/larder (made here when `fresh`), removed after it."""
        shm = os.path.join(self.shm, "larder")
        if fresh:
            os.makedirs(shm)
        stats = os.path.join(self.work, "larder-stats.json")
        try:
            env = dict(self.larder_env(shm, stats, keep), **(extra or {}))
            t, mem, note = self.larder_job(n, shm, env, stats)
            return 0.0, t, mem / nodes, note
        finally:
            shutil.rmtree(shm, ignore_errors=True)

    def way_larder(self, n, nodes):
        return self.larder_way(n, nodes)

    # The later step: prepare_ runs before the page cache is dropped and the PFS counters are
    # read, so only the measured step counts; the measured step starts from what it kept.
    def prepare_later_step(self, n, nodes):
        shm = os.path.join(self.shm, "larder")
        os.makedirs(shm)
        stats = os.path.join(self.work, "larder-stats.json")
        self.larder_job(n, shm, self.larder_env(shm, stats, keep="figure"), stats)

    def way_later_step(self, n, nodes):
        return self.larder_way(n, nodes, keep="figure", fresh=False)

    # The same, where the environment is declared unchanging (LARDER_REVALIDATE=0): the step uses
    # the kept stat answers and listings as they are, asking the PFS nothing.
    def prepare_later_trusted(self, n, nodes):
        self.prepare_later_step(n, nodes)

    def way_later_trusted(self, n, nodes):
        return self.larder_way(n, nodes, keep="figure", fresh=False,
                               extra={"LARDER_REVALIDATE": "0"})

    def way_stage(self, n, nodes):
        dest = os.path.join(self.shm, "stage")
        os.makedirs(dest)
        try:
            # LD_LIBRARY_PATH: the --build's liblarder, whatever larder-stage's RUNPATH says.
            env = {"LARDER_NODE_SIZE": "1", "LARDER_LOG": "error",
                   "LARDER_SHM_DIR": os.path.join(self.shm, "stage-larder"),
                   "LD_LIBRARY_PATH": f"{self.args.build}/lib"}
            os.makedirs(env["LARDER_SHM_DIR"])
            t0 = time.monotonic()
            self.mpiexec(nodes, 1, self.pfs_pattern(), env,
                         [f"{self.args.build}/bin/larder-stage", "--to", f"{dest}/{{node}}",
                          self.tree])
            setup = time.monotonic() - t0
            shutil.rmtree(env["LARDER_SHM_DIR"], ignore_errors=True)
            t = self.import_job(n, os.path.join(dest, "%d"))
            return setup, t, du(dest) / nodes, ""
        finally:
            shutil.rmtree(dest, ignore_errors=True)

    def way_squashfs(self, n, nodes):
        root = os.path.join(self.work, "sqfs")
        try:
            t0 = time.monotonic()
            for k in range(nodes):
                mnt = os.path.join(root, f"node{k}")
                os.makedirs(mnt)
                image = os.path.join(self.pfs.mount(k), "env.sqfs")
                self.fuse.append((mnt, subprocess.Popen(["squashfuse", "-f", image, mnt])))
            for mnt, proc in self.fuse:
                wait_for_mount(mnt, proc)
            setup = time.monotonic() - t0
            t = self.import_job(n, os.path.join(root, "node%d"))
            rss = sum(vm_rss(proc.pid) for _, proc in self.fuse)
            return setup, t, rss / nodes, ""
        finally:
            self.unmount_fuse()
            shutil.rmtree(root, ignore_errors=True)

    def way_tarball(self, n, nodes):
        dest = os.path.join(self.shm, "tar")
        procs = []
        try:
            t0 = time.monotonic()
            for k in range(nodes):
                os.makedirs(os.path.join(dest, str(k)))
                procs.append(subprocess.Popen(
                    ["tar", "-b", str(self.args.tar_blocking), "-xf",
                     os.path.join(self.pfs.mount(k), "env.tar"), "-C", os.path.join(dest, str(k))]))
            failed = [p.args for p in procs if p.wait(timeout=JOB_TIMEOUT) != 0]
            if failed:
                raise RuntimeError(f"tar failed: {failed}")
            setup = time.monotonic() - t0
            t = self.import_job(n, os.path.join(dest, "%d"))
            return setup, t, du(dest) / nodes, ""
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            shutil.rmtree(dest, ignore_errors=True)

    def unmount_fuse(self):
        while self.fuse:
            mnt, proc = self.fuse.pop()
            if mounts_under(mnt):
                subprocess.run(["fusermount3", "-u", mnt], check=False)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                subprocess.run(["fusermount3", "-uz", mnt], check=False)
                proc.kill()
                proc.wait()

    def measure(self, key, n, nodes):
        prepare = getattr(self, "prepare_" + key, None)
        if prepare is not None:
            prepare(n, nodes)
        drop_caches()
        load = os.getloadavg()[0]
        b0, s0 = self.pfs.counters()
        t0 = time.monotonic()
        setup, imp, mem, note = getattr(self, "way_" + key)(n, nodes)
        end_to_end = self.job_end - t0
        b1, s1 = self.pfs.counters()
        return {"ranks": n, "nodes": nodes, "way": key, "seconds": setup + imp, "setup_s": setup,
                "import_s": imp, "end_to_end_s": end_to_end, "pfs_mb": (b1 - b0) / 1e6,
                "pfs_requests": s1 - s0, "node_mb": mem / 1e6, "load": load, "note": note}


def du(path):
    """Bytes allocated under path."""
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            st = os.lstat(os.path.join(dirpath, f))
            total += st.st_blocks * 512
    return total


def vm_rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def setting_name(args):
    return f"{args.rate}, " + (f"{args.delay} one-way delay" if args.delay else "no added delay")


def table(rows, args, wall):
    label = dict(WAYS)
    lines = [f"`import torch` from one PFS client per emulated node ({setting_name(args)}), "
             f"{NODE_SIZE} ranks per node; page cache dropped before each way. Slowest rank: "
             "setup (staging, mounts, unpacking) + the slowest rank's import, seconds.", "",
             "| ranks (nodes) | way | slowest rank s | of which setup s | end to end s | PFS MB | "
             "PFS requests | node MB | load |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['ranks']} ({r['nodes']}) | {label[r['way']]} | {r['seconds']:.1f} | "
                     f"{r['setup_s']:.1f} | {r['end_to_end_s']:.1f} | {r['pfs_mb']:.0f} | "
                     f"{r['pfs_requests']} | {r['node_mb']:.0f} | {r['load']:.1f} |")
    lines += [
        "",
        "* Larder in a later job step: the same job run before it in the allocation "
        "(LARDER_KEEP=figure, not measured) kept what it cached on each node; this step adopts "
        "it. Its PFS figures are this step's own (stat answers are asked again every step: that "
        "is what keeps a kept chunk from being stale).",
        "* end to end: from before the setup to mpiexec's exit (launch, interpreter start, "
        "Larder's MPI start and finish included).",
        "* PFS MB: bytes the PFS servers sent (TX of each node's server veth, summed). PFS "
        "requests: TCP segments carrying data from the nodes' sftp clients to their servers "
        "(TcpExt TCPOrigDataSent of each client namespace, summed): about one per sftp request "
        "(stat, open, read, readdir, close), fewer when requests sent together share a segment "
        "(sshfs sends a large read as several sftp reads at once).",
        "* node MB, per node: Larder, the peak of its shared-memory files (arenas and node files) "
        "during the job; larder-stage and tarball, the tree's copy left in /dev/shm; squashfs, "
        "squashfuse's resident memory (RSS) after the job; plain, 0. The kernel's page cache "
        "(each way's mapped objects) is not counted for any way.",
        "* squashfs: mksquashfs defaults (gzip, 128 KiB blocks); tarball: an uncompressed tar, "
        f"unpacked with `tar -b {args.tar_blocking} -xf` straight from the node's PFS mount "
        f"(records of {args.tar_blocking * 512 // 1024} KiB: this PFS has no client readahead).",
        "* A stat() of a new file through node 0's PFS mount, measured before the ways: "
        f"{args.rtt} (400 files; it includes the FUSE and sftp costs, and the delay relay's "
        "wake-ups, which a loaded machine makes later).",
        "* load: the 1-minute load average before the way (2 cores).",
        f"* Run of {time.strftime('%Y-%m-%d %H:%M')}: {wall / 60:.1f} min in all."]
    return "\n".join(lines) + "\n"


def plot(rows, args, png):
    if shutil.which("gnuplot") is None:
        print("no gnuplot: no plot")
        return
    ways = [(k, l) for k, l in WAYS if any(r["way"] == k for r in rows)]
    data = png + ".dat"
    with open(data, "w") as f:
        for n in sorted({r["ranks"] for r in rows}):
            by = {r["way"]: r["seconds"] for r in rows if r["ranks"] == n}
            f.write(f"{n} " + " ".join(f"{by[k]:.3f}" if k in by else "NaN" for k, _ in ways)
                    + "\n")
    curves = ", ".join(f"'{data}' u 1:{i + 2} w lp lw 2 t '{l}'" for i, (_, l) in enumerate(ways))
    ranks = sorted({r["ranks"] for r in rows})
    script = (f"set terminal png size 900,500; set output '{png}'; set logscale x 2;"
              f"set xtics ({','.join(map(str, ranks))});"
              f"set xrange [{ranks[0] * 0.8}:{ranks[-1] * 1.25}];"
              f"set xlabel 'ranks ({NODE_SIZE} per emulated node)'; set ylabel 'slowest rank, s';"
              "set yrange [0:*]; set key top left;"
              f"set title 'import torch, one PFS client per node ({setting_name(args)})';"
              f"plot {curves}")
    try:
        subprocess.run(["gnuplot", "-e", script], check=True)
    finally:
        os.unlink(data)
    print(f"plot: {png}")


def prepare_export(args, export, ways):
    env = os.path.join(export, "env")
    if args.tree:
        log(f"linking {args.tree} into the export...")
        subprocess.run(["cp", "-al", args.tree, env], check=True)
    else:
        log("building the environment tree...")
        subprocess.run([PYTHON, os.path.join(ROOT, "scripts", "build-env-tree.py"), env],
                       check=True, stdout=subprocess.DEVNULL)
    if "squashfs" in ways:
        log("mksquashfs of the tree (default compression)...")
        subprocess.run(["mksquashfs", env, os.path.join(export, "env.sqfs"), "-keep-as-directory",
                        "-noappend", "-quiet", "-no-progress"], check=True,
                       stdout=subprocess.DEVNULL)
    if "tarball" in ways:
        log("tar of the tree (uncompressed)...")
        subprocess.run(["tar", "-C", export, "-cf", os.path.join(export, "env.tar"), "env"],
                       check=True)
    for f in ("env.sqfs", "env.tar"):
        if os.path.exists(os.path.join(export, f)):
            log(f"{f}: {os.path.getsize(os.path.join(export, f)) / 1e6:.0f} MB")


def cleanup(work, shm, pfs, bench):
    if bench is not None:
        bench.unmount_fuse()
    if pfs is not None:
        pfs.down()
    if shm is not None:
        for mnt in mounts_under(shm):
            subprocess.run(["umount", "-l", mnt], check=False)
        if not mounts_under(shm):
            shutil.rmtree(shm, ignore_errors=True)
    left = mounts_under(work)
    for mnt in left:
        subprocess.run(["umount", "-l", mnt], check=False)
    if mounts_under(work):
        print(f"compare_figure: mounts left under {work}; not removing it", file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)


def run(args):
    ranks = [int(x) for x in args.ranks.split(",")]
    ways = args.ways.split(",")
    unknown = set(ways) - {k for k, _ in WAYS}
    if unknown:
        sys.exit(f"unknown ways {sorted(unknown)}: choose from {[k for k, _ in WAYS]}")
    ways = [k for k, _ in WAYS if k in ways]
    max_nodes = max(max(1, n // NODE_SIZE) for n in ranks)
    start = time.monotonic()
    work = tempfile.mkdtemp(prefix="compare-figure-", dir="/tmp")
    shm = pfs = bench = None
    try:
        # Our own tmpfs under /dev/shm for the node copies and Larder's files: its use is the
        # node memory, and unmounting it removes everything.
        shm = tempfile.mkdtemp(prefix="compare-figure-", dir="/dev/shm")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=90%,mode=0700", "compare-figure", shm],
                       check=True)
        export = os.path.join(work, "export")
        os.makedirs(export)
        prepare_export(args, export, ways)
        pfs = Pfs(export, os.path.join(work, "mnt"), args.rate, args.delay)
        pfs.up(max_nodes)
        n = pfs.number_inodes(max_nodes)
        log(f"every file has one inode number on all {max_nodes} nodes' mounts ({n} looked up)")
        rtt = stat_round_trip(pfs.mount(0))
        args.rtt = f"{rtt[0] * 1e3:.2f} ms median, {rtt[1] * 1e3:.2f} ms 90th percentile"
        log(f"a stat() through node 0's PFS mount: {args.rtt} (load {os.getloadavg()[0]:.1f})")
        bench = Bench(args, work, shm, pfs)
        rows = []
        for n in ranks:
            nodes = max(1, n // NODE_SIZE)
            for key in ways:
                log(f"{setting_name(args)}: {n} ranks ({nodes} nodes), {key}...")
                r = bench.measure(key, n, nodes)
                log(f"  {r['seconds']:.2f} s (setup {r['setup_s']:.2f}, import {r['import_s']:.2f},"
                    f" end to end {r['end_to_end_s']:.2f}), PFS {r['pfs_mb']:.0f} MB in "
                    f"{r['pfs_requests']} requests, node {r['node_mb']:.0f} MB, load "
                    f"{r['load']:.1f}" + (f"; {r['note']}" if r["note"] else ""))
                rows.append(r)
    finally:
        log("cleaning up...")
        cleanup(work, shm, pfs, bench)
    text = table(rows, args, time.monotonic() - start)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"setting": setting_name(args), "rows": rows}, f, indent=1)
    if args.png:
        plot(rows, args, os.path.abspath(args.png))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, help="Larder build (lib/, bin/), e.g. build/release")
    ap.add_argument("--rate", default="1gbit", help="PFS link rate (pfs.sh --rate)")
    ap.add_argument("--delay", help="one-way PFS latency (pfs.sh --delay), e.g. 250us")
    ap.add_argument("--ranks", default="1,2,4,8", help="rank counts, comma-separated")
    ap.add_argument("--ways", default=",".join(k for k, _ in WAYS),
                    help="which ways, comma-separated (default: all six)")
    ap.add_argument("--tree", help="an environment tree built before (build-env-tree.py)")
    ap.add_argument("--larder-env", action="append", default=[], metavar="LARDER_X=VALUE",
                    help="a setting for every Larder job (repeatable)")
    ap.add_argument("--tar-blocking", type=int, default=TAR_BLOCKING,
                    help="tar's blocking factor for the unpacking (512-byte blocks per read)")
    ap.add_argument("--out", help="the markdown table")
    ap.add_argument("--png", help="the plot")
    ap.add_argument("--json", help="the rows")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    if args.tree:
        args.tree = os.path.abspath(args.tree)
    if os.geteuid() != 0:
        sys.exit("compare_figure: needs root (network namespaces, mounts, drop_caches)")
    for tool in ("mpiexec.mpich", "mksquashfs", "squashfuse", "unshare", "fusermount3"):
        if shutil.which(tool) is None:
            sys.exit(f"compare_figure: {tool} is missing (scripts/setup.sh installs it)")

    def on_term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    try:
        run(args)
    except KeyboardInterrupt as e:
        print(f"compare_figure: interrupted ({e or 'Ctrl-C'}); everything it made is removed",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
