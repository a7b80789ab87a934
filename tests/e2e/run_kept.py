"""e2e_kept: the cache lives for the allocation (LARDER_KEEP) and every kept chunk is checked.

Job steps of one allocation, 4 ranks on 2 emulated nodes (LARDER_NODE_SIZE=2), each rank reading
every file of a tree of awkward sizes (and mapping one of them) under the preload, every byte
compared with the file's own:

  1. a cold step keeps what it read; the next step reads no byte from the PFS and adopts it;
     its stat answers and listings are kept too: with LARDER_REVALIDATE=0 a step asks the PFS
     nothing; with checks, a kept listing holds after one stat of its unchanged directory;
  2. a file rewritten in place (same size, new mtime) is read new, a removed one is ENOENT;
  3. a step on 8 ranks over 4 nodes (2 new to the allocation) reads no byte from the PFS; nor
     does a step whose node 0 is new (its store removed) when node 0 was the origin of every
     chunk: node 1's kept copies stand in for it;
  4. LARDER_KEEP=off is cold and keeps nothing; SLURM_JOB_ID names the allocation: a new id is
     cold and its first step removes the other allocation's store;
  5. a step killed (SIGKILL of a rank) leaves nothing the next step trusts; the next is warm;
  6. a kept byte changed on node 0 between steps: the right bytes, integrity.mismatches counted;
  7. another user's directory and a symlink planted in the store are never read or followed;
  8. a smaller LARDER_MEM trims the kept store before the step starts (kept.bytes_evicted);
  9. eviction under readers: kept files in use stay, kept files nobody uses make room;
 10. demotion: a step with less memory than the store keeps in memory moves the least recently
     used kept files to the disk tier and reads nothing from the PFS;
     the disk tier kept: a step whose memory budget holds almost nothing keeps its chunks on the
     disk tier; the next step adopts them from there; a byte changed in node 0's kept disk files
     and a disk file of node 1 cut short: the right bytes, the mismatches counted;
 11. files produced in `local` mode (no PFS copy) by rank 0 (node 0) and rank 2 (node 1) in one
     step are stat'ed, read and mapped by every rank of the next step; nothing is on the PFS.
"""
import argparse
import hashlib
import os
import shutil
import signal
import time

from e2e_util import PYTHON, Job, check, common_args, fail, read_stats

RANKS = 4
CHUNK = 64 * 1024

READER = r"""
import errno, hashlib, mmap, multiprocessing, os, sys
dirs, out = sys.argv[1].split(':'), sys.argv[2]
kill = len(sys.argv) > 3 and sys.argv[3] == 'kill'
rank = int(os.environ.get('PMI_RANK', os.environ.get('OMPI_COMM_WORLD_RANK', '0')))
def digest(path):
    try:
        with open(path, 'rb') as f:
            return os.path.basename(path) + ' ' + hashlib.sha1(f.read()).hexdigest()
    except OSError as e:
        return os.path.basename(path) + ' ' + errno.errorcode[e.errno]
# LPL_READ_BY_WORKERS: the files are read by forked workers of the rank (as DataLoader's are).
pool = multiprocessing.get_context('fork').Pool(2) if os.environ.get('LPL_READ_BY_WORKERS') else None
lines = []
for data in dirs:
  paths = [os.path.join(data, n) for n in sorted(os.listdir(data)) if not n.endswith('.so')]
  lines += pool.map(digest, paths, chunksize=1) if pool else [digest(p) for p in paths]
  for name in ('gone.bin', 'mapped.bin', 'lib.so'):
    path = os.path.join(data, name)
    try:
        with open(path, 'rb') as f:
            if name in ('mapped.bin', 'lib.so'):
                with mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
                    lines.append('map ' + name + ' ' + hashlib.sha1(m[:]).hexdigest())
            else:
                lines.append(name + ' ' + hashlib.sha1(f.read()).hexdigest())
    except OSError as e:
        lines.append(name + ' ' + errno.errorcode[e.errno])
if pool:
    pool.close()
    pool.join()
with open(out + '.' + str(rank), 'w') as f:
    f.write('\n'.join(lines) + '\n')
if kill and rank == 1:
    os.kill(os.getpid(), 9)
"""


PRODUCE = r"""
import hashlib, mmap, os, sys
out_dir, role, result = sys.argv[1], sys.argv[2], sys.argv[3]
rank = int(os.environ.get('PMI_RANK', os.environ.get('OMPI_COMM_WORLD_RANK', '0')))
def content(name, size):
    return bytes((len(name) * 13 + k * 11) % 253 for k in range(size))
files = {'made-by-0.bin': 5 * 65536 + 333, 'made-by-2.bin': 70000}
lines = []
if role == 'write':
    for name, size in files.items():
        if name == 'made-by-%d.bin' % rank:
            with open(os.path.join(out_dir, name), 'wb') as f:
                f.write(content(name, size))
else:
    for name, size in sorted(files.items()):
        path = os.path.join(out_dir, name)
        st = os.stat(path)
        with open(path, 'rb') as f:
            data = f.read()
        with open(path, 'rb') as f:
            with mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
                mapped = m[:]
        good = data == content(name, size) and mapped == data and st.st_size == size
        lines.append('%s %s' % (name, 'ok' if good else 'bad %d %d' % (st.st_size, len(data))))
with open(result + '.' + str(rank), 'w') as f:
    f.write('\n'.join(lines) + '\n')
"""


def make_tree(data):
    sizes = [1, 4095, 4096, 65535, 65536, 65537, 3 * CHUNK + 17, 200 * 1024, 12345, 777777]
    for i, size in enumerate(sizes):
        with open(os.path.join(data, f"f{i:02d}.bin"), "wb") as f:
            f.write(bytes((i * 31 + k * 7) % 251 for k in range(size)))
    with open(os.path.join(data, "gone.bin"), "wb") as f:
        f.write(os.urandom(100000))
    with open(os.path.join(data, "mapped.bin"), "wb") as f:
        f.write(os.urandom(5 * CHUNK + 99))
    # Only mapped, never read first (as the loader maps a shared object): its node file holds
    # its chunks as loaded, so a later step can take the kept node file whole.
    with open(os.path.join(data, "lib.so"), "wb") as f:
        f.write(os.urandom(4 * CHUNK + 4321))


def expected(dirs):
    lines = []
    for data in dirs:
        for name in sorted(os.listdir(data)):
            if name.endswith(".so"):
                continue
            with open(os.path.join(data, name), "rb") as f:
                lines.append(name + " " + hashlib.sha1(f.read()).hexdigest())
        for name in ("gone.bin", "mapped.bin", "lib.so"):
            path = os.path.join(data, name)
            if not os.path.exists(path):
                lines.append(name + " ENOENT")
                continue
            with open(path, "rb") as f:
                digest = hashlib.sha1(f.read()).hexdigest()
            mapped = name in ("mapped.bin", "lib.so")
            lines.append(("map " if mapped else "") + name + " " + digest)
    return "\n".join(lines) + "\n"


def tree_bytes(data):
    return sum(os.path.getsize(os.path.join(data, n)) for n in os.listdir(data))


class Steps:
    def __init__(self, args, job, reader):
        self.args, self.job, self.reader = args, job, reader
        self.count = 0

    def run(self, what, extra, ranks=RANKS, kill=False, dirs=None):
        dirs = dirs or [self.job.data]
        self.count += 1
        stats = os.path.join(self.job.root, f"stats-{self.count}.json")
        out = os.path.join(self.job.root, f"out-{self.count}")
        env = self.job.python_env(self.job.env(stats=stats, extra=dict(
            {"LARDER_NODE_SIZE": "2", "LARDER_MEM": "64M", "LARDER_DISK": "0", "LARDER_LOG": os.environ.get("KEPT_LOG", "warn")}, **extra)))
        argv = [PYTHON, self.reader, ":".join(dirs), out] + (["kill"] if kill else [])
        proc = self.job.mpiexec(ranks, argv, env, timeout=120, check=not kill)
        if kill:
            check(proc.returncode != 0, f"{what}: the killed step failed ({proc.returncode})")
            return None
        # Every rank's part of every step is kept (a failed move of one file loses the rank's
        # whole part: an arena listed twice did, in steps with a tight LARDER_MEM).
        if "part of the step is not kept" in proc.stderr or "the step is not kept" in proc.stderr:
            fail(f"{what}: a part of the step was not kept (stderr above)")
        want = expected(dirs)
        for r in range(ranks):
            with open(f"{out}.{r}") as f:
                got = f.read()
            if got != want:
                fail(f"{what}: rank {r} read other bytes:\n{got}\nexpected:\n{want}")
        s = read_stats(stats)
        kept = s.get("kept", {})
        integrity = s.get("integrity", {})
        print(f"{what}: pfs {s['pfs']['bytes_read']} B in {s['pfs']['read_ops']} reads, adopted "
              f"{kept.get('bytes_adopted')} B ({kept.get('chunks_adopted')} chunks, "
              f"{kept.get('files_adopted')} files), kept {kept.get('bytes_kept')} B, evicted "
              f"{kept.get('bytes_evicted')}, changed {kept.get('bytes_dropped_changed')}, "
              f"unfinished {kept.get('bytes_dropped_unfinished')}, integrity {integrity}, "
              f"fallbacks {s['fallbacks']}", flush=True)
        check(True, f"{what}: every rank read the right bytes")
        return s


def flip_every_page(path):
    """One byte changed in every page of `path` that holds data (kept files are sparse)."""
    fd = os.open(path, os.O_RDWR)
    try:
        for at in range(100, os.path.getsize(path), 4096):
            try:
                if os.lseek(fd, at, os.SEEK_DATA) != at:
                    continue
            except OSError:  # ENXIO: no data past `at`
                break
            b = os.pread(fd, 1, at)
            os.pwrite(fd, bytes([b[0] ^ 0x5A]), at)
    finally:
        os.close(fd)


def kept_files(node_dir, suffix):
    """The kept files named *suffix of every step directory under node_dir, with data in them."""
    found = []
    for step in sorted(os.listdir(node_dir)):
        d = os.path.join(node_dir, step)
        if not os.path.isdir(d) or os.path.islink(d):
            continue
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            if name.endswith(suffix) and os.path.getsize(path) > 0:
                found.append(path)
    return found


def stores(job):
    base = os.path.join(job.shm, f"larder-{os.geteuid()}")
    return sorted(n for n in os.listdir(base) if n.startswith("keep-") and "." not in n)


def main():
    args = common_args(argparse.ArgumentParser()).parse_args()
    job = Job(args, "kept")
    try:
        reader = os.path.join(job.root, "reader.py")
        with open(reader, "w") as f:
            f.write(READER)
        make_tree(job.data)
        total = tree_bytes(job.data)
        steps = Steps(args, job, reader)
        named = {"LARDER_KEEP": "steps"}

        s = steps.run("step 1 (cold)", named)
        cold_stats, cold_lists = s["pfs"]["stat_ops"], s["pfs"]["list_ops"]
        check(s["pfs"]["bytes_read"] == total, f"step 1 read the tree from the PFS once ({total} B)")
        check(s["kept"]["bytes_kept"] > 0, "step 1 kept what it read")
        # A kept listing carries its directory's version only from a stat answer taken in a
        # later second than the directory's last change (a PFS may keep whole seconds).
        changed_ns = os.stat(job.data).st_ctime_ns
        while time.time_ns() < changed_ns + 2_000_000_000:
            time.sleep(0.05)
        s = steps.run("step 2 (warm)", named)
        check(s["pfs"]["bytes_read"] == 0, "step 2 read no byte from the PFS")
        check(s["kept"]["bytes_adopted"] > 0, "step 2 adopted kept chunks")
        # lib.so's node file on each of the 2 nodes is the file step 1 kept, linked, not a copy of
        # its chunks (mapped.bin's chunks were read into the arenas before it was mapped: its
        # node file is made again from them).
        check(s["kept"]["node_files"] == 2,
              f"step 2's node files of lib.so are the kept files ({s['kept']['node_files']})")
        check(s["kept"]["answers_kept"] > 0, "step 2 kept its stat answers and listings")

        # Kept stat answers and listings. LARDER_REVALIDATE=0 (answers never checked again):
        # the step asks the PFS nothing. Step 2 took the directory's stat answer a second or
        # more after the directory last changed (step 1 lasts longer; waited for otherwise),
        # so its kept listing carries the directory's version.
        s = steps.run("step 2b (LARDER_REVALIDATE=0)", dict(named, LARDER_REVALIDATE="0"))
        pfs = s["pfs"]
        check(pfs["bytes_read"] == 0 and pfs["stat_ops"] == 0 and pfs["list_ops"] == 0 and
              pfs["open_ops"] == 0,
              f"with LARDER_REVALIDATE=0 the step asked the PFS nothing ({pfs})")
        check(s["kept"]["answers_adopted"] > 0,
              f"its answers came from earlier steps ({s['kept']['answers_adopted']})")
        # DataLoader-style workers of a later step: they copy kept chunks themselves once their
        # rank has marked each kept file used (one request per kept file, not per chunk).
        s = steps.run("step 2w (read by forked workers)", dict(named, LPL_READ_BY_WORKERS="1"))
        w = s.get("workers", {})
        check(s["pfs"]["bytes_read"] == 0 and w.get("places_found", 0) > 0,
              f"workers read the kept chunks from the node, finding most places themselves ({w})")
        s = steps.run("step 2c (answers checked)", named)
        pfs = s["pfs"]
        check(pfs["bytes_read"] == 0 and pfs["list_ops"] == 0 and pfs["stat_ops"] > 0,
              f"checked answers: the kept listing held after one stat of the directory, no "
              f"listing ({pfs})")
        # The kept path answers were checked ahead, from the step's start, by the ranks of both
        # nodes (each node kept the same paths): still each path once for the job.
        check(s["kept"]["paths_checked_ahead"] > 0,
              f"the kept path answers were checked ahead ({s['kept']['paths_checked_ahead']})")
        # (A kept listing costs one stat of its directory where step 1 listed it.)
        check(pfs["stat_ops"] <= cold_stats + cold_lists,
              f"each path checked once for the job: {pfs['stat_ops']} stats, {cold_stats} stats "
              f"and {cold_lists} listings cold")

        # A file rewritten in place (same size, new bytes, new mtime) and a removed one.
        changed = os.path.join(job.data, "f07.bin")
        size = os.path.getsize(changed)
        with open(changed, "r+b") as f:
            f.write(os.urandom(size))
        st = os.stat(changed)
        os.utime(changed, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        os.unlink(os.path.join(job.data, "gone.bin"))
        s = steps.run("step 3 (one file rewritten, one removed)", named)
        check(s["pfs"]["list_ops"] >= 1, "the directory changed: its kept listing was not used")
        check(s["pfs"]["bytes_read"] == size,
              f"step 3 read only the rewritten file from the PFS ({size} B)")
        check(s["kept"]["bytes_dropped_changed"] >= size, "the rewritten file's kept bytes dropped")

        s = steps.run("step 4 (8 ranks over 4 nodes, 2 new)", named, ranks=8)
        check(s["pfs"]["bytes_read"] == 0, "step 4 read no byte from the PFS")

        # The origin's node gone: a store whose chunks node 0 alone read from the PFS (a first
        # step on node 0 only), copied by node 1 in the next step; then node 0 is replaced by a
        # new node (its store removed). Node 1's copies stand in for the origin
        # (KeptRecord::kStandIn): the new node 0 copies from node 1, nothing from the PFS.
        stand_in = {"LARDER_KEEP": "standin"}
        s = steps.run("stand-in: step 1 (node 0 only)", stand_in, ranks=2)
        check(s["pfs"]["bytes_read"] == tree_bytes(job.data), "stand-in step 1 is cold")
        s = steps.run("stand-in: step 2 (node 1 new)", stand_in)
        check(s["pfs"]["bytes_read"] == 0, "stand-in step 2 read no byte from the PFS")
        shutil.rmtree(os.path.join(job.shm, f"larder-{os.geteuid()}", "keep-name-standin",
                                   "node-0"))
        s = steps.run("stand-in: step 3 (node 0 new, its store gone)", stand_in)
        check(s["pfs"]["bytes_read"] == 0,
              "stand-in step 3 read no byte from the PFS (node 1's copies stood in)")
        check(s["kept"]["bytes_adopted"] >= tree_bytes(job.data),
              f"stand-in step 3 adopted the whole tree ({s['kept']['bytes_adopted']} B)")

        s = steps.run("LARDER_KEEP=off", {"LARDER_KEEP": "off"})
        check(s["pfs"]["bytes_read"] == tree_bytes(job.data), "LARDER_KEEP=off is cold")
        check(s["kept"]["bytes_adopted"] == 0 and s["kept"]["bytes_kept"] == 0,
              "LARDER_KEEP=off adopts and keeps nothing")

        alloc_a = {"SLURM_JOB_ID": "4242", "LARDER_KEEP": "auto"}
        s = steps.run("allocation 4242, step 1", alloc_a)
        check(s["pfs"]["bytes_read"] == tree_bytes(job.data), "a new allocation is cold")
        s = steps.run("allocation 4242, step 2", alloc_a)
        check(s["pfs"]["bytes_read"] == 0, "its next step is warm")
        check("keep-alloc-4242" in stores(job), "the allocation's store is keep-alloc-4242")
        s = steps.run("allocation 4343, step 1", {"SLURM_JOB_ID": "4343", "LARDER_KEEP": "auto"})
        check(s["pfs"]["bytes_read"] == tree_bytes(job.data), "another allocation is cold")
        check("keep-alloc-4242" not in stores(job),
              f"its first step removed the other allocation's store ({stores(job)})")

        steps.run("a step killed (SIGKILL of rank 1)", named, kill=True)
        s = steps.run("the step after the killed one", named)
        check(s["pfs"]["bytes_read"] == 0, "the step after a killed step is warm")

        # One byte of every page of every kept file of node 0 changed between steps.
        node0 = os.path.join(job.shm, f"larder-{os.geteuid()}", "keep-name-steps", "node-0")
        flipped = 0
        for path in kept_files(node0, ""):
            if os.path.basename(path).startswith(("arena-", "seg-")):
                flip_every_page(path)  # every chunk kept in the file is hit
                flipped += 1
        check(flipped > 0, f"changed a byte in {flipped} kept files of node 0")
        s = steps.run("after a kept byte changed on node 0", named)
        check(s["integrity"]["mismatches"] >= 1,
              f"the changed bytes were caught ({s['integrity']['mismatches']} mismatches)")

        # Planted: another user's step directory, and a symlink in place of a step.
        planted = os.path.join(node0, "0123456789abcdef")
        os.makedirs(planted, mode=0o700)
        with open(os.path.join(planted, "complete"), "w"):
            pass
        os.chown(planted, 65534, 65534)
        os.symlink("/etc", os.path.join(node0, "fedcba9876543210"))
        steps.run("with a foreign directory and a symlink planted", named)
        check(os.path.exists(os.path.join(planted, "complete")) and
              os.path.islink(os.path.join(node0, "fedcba9876543210")),
              "neither was read, followed or removed")
        os.unlink(os.path.join(node0, "fedcba9876543210"))
        os.unlink(os.path.join(planted, "complete"))
        os.rmdir(planted)

        s = steps.run("LARDER_MEM smaller than the kept store", dict(named, LARDER_MEM="1M"))
        check(s["kept"]["bytes_evicted"] > 0, "the kept store was trimmed to the budget")

        # Eviction during a step, under readers: a store holds two trees kept by two steps (b1
        # with a file every rank maps, b2). A step with a budget that holds them but not what it
        # reads next reads b1 (adopting and mapping its kept files), then a new tree (room is
        # needed: b2's kept files, which nobody uses, are evicted), then b1 again. Per node: b1
        # and b2 keep 3.0 MB, c needs 1.8 MB, and 4 MiB leaves 1.2 MB, 0.6 MB per rank: every
        # rank that loads more than 0.6 MB of c must evict, however the node's two ranks share
        # its loads (with 5 MiB, an even share fitted without eviction in one run of ten).
        trees = {}
        for tree, count, size in (("b1", 8, 100_000), ("b2", 10, 200_000), ("c", 12, 150_000)):
            d = os.path.join(job.data, "..", "extra", tree)
            os.makedirs(d)
            for k in range(count):
                with open(os.path.join(d, f"x{k}.bin"), "wb") as f:
                    f.write(os.urandom(size))
            trees[tree] = os.path.abspath(d)
        with open(os.path.join(trees["b1"], "mapped.bin"), "wb") as f:
            f.write(os.urandom(3 * CHUNK + 5))
        extra_prefix = os.path.abspath(os.path.join(job.data, "..", "extra"))
        evict = {"LARDER_KEEP": "evict", "LARDER_PREFIX": job.data + ":" + extra_prefix}
        steps.run("eviction: b1 kept", evict, dirs=[trees["b1"]])
        steps.run("eviction: b2 kept", evict, dirs=[trees["b2"]])
        s = steps.run("eviction: b1, then a new tree that needs room, then b1 again",
                      dict(evict, LARDER_MEM="4M"), dirs=[trees["b1"], trees["c"], trees["b1"]])
        c_bytes = sum(os.path.getsize(os.path.join(trees["c"], n)) for n in os.listdir(trees["c"]))
        check(s["kept"]["bytes_evicted"] > 0,
              f"kept files nobody used were evicted for room ({s['kept']['bytes_evicted']} B)")
        # b1's kept files were in use: none evicted, so none of b1 came from the PFS. The room a
        # rank frees by evicting is its own; each rank evicts its share of the node's kept files
        # first (make_room), so both ranks of a node get room (before that, one rank took every
        # file in about one run of three, and the other read much of c from the PFS). Any read
        # still short of room is a counted fallback for room (`no_room` on the rank short of it,
        # `directory` on the node's ranks that waited for it), never below plain.
        from_pfs = [f["path"] for f in s.get("top_files", {}).get("by_bytes", [])
                    if f["bytes"] > 0]
        fallbacks = s.get("fallback_files", [])
        check(not any(p.startswith(trees["b1"] + "/") for p in from_pfs) and
              all(f["cause"] in ("no_room", "directory") and
                  not f["path"].startswith(trees["b1"] + "/") for f in fallbacks),
              f"the kept files in use were not evicted: nothing of b1 from the PFS ({from_pfs}; "
              f"fallbacks {fallbacks})")
        check(s["pfs"]["bytes_read"] <= 2 * c_bytes,
              f"the new tree came from the PFS, at most twice ({s['pfs']['bytes_read']} of "
              f"{c_bytes} B)")

        # Eviction to the disk tier: the same three steps in a store of their own, with a disk
        # tier. b2's kept files, which nobody uses, leave memory for c's room by going to the
        # disk tier (kept.bytes_demoted), not dropped; a later step reads b2 from there.
        to_disk = dict(evict, LARDER_KEEP="evict-disk", LARDER_DISK="64M")
        steps.run("eviction to disk: b1 kept", to_disk, dirs=[trees["b1"]])
        steps.run("eviction to disk: b2 kept", to_disk, dirs=[trees["b2"]])
        s = steps.run("eviction to disk: b1, then c, which needs room, then b1 again",
                      dict(to_disk, LARDER_MEM="4M"), dirs=[trees["b1"], trees["c"], trees["b1"]])
        check(s["kept"]["bytes_demoted"] > 0 and s["kept"]["bytes_evicted"] == 0,
              f"kept files nobody used went to the disk tier for room, none dropped "
              f"({s['kept']['bytes_demoted']} B; dropped {s['kept']['bytes_evicted']} B)")
        s = steps.run("eviction to disk: b2 again", dict(to_disk, LARDER_MEM="4M"),
                      dirs=[trees["b2"]])
        check(s["pfs"]["bytes_read"] == 0 and s["kept"]["bytes_adopted"] > 0,
              f"b2 came from the kept files moved to the disk tier, no PFS byte "
              f"({s['pfs']['bytes_read']} B from the PFS, {s['kept']['bytes_adopted']} B adopted)")

        # The disk tier kept: no memory tier and 64 MiB of disk, so the
        # chunks go to the disk tier and are kept there.
        on_disk = {"LARDER_KEEP": "disk", "LARDER_MEM": "0", "LARDER_DISK": "64M"}
        now = tree_bytes(job.data)
        # Demotion: a step started with less memory than its store keeps in memory moves the
        # least recently used kept files to the disk tier (room there) instead of dropping them.
        demote = {"LARDER_KEEP": "demote", "LARDER_DISK": "64M"}
        steps.run("demotion: step 1 (kept in memory)", demote)
        s = steps.run("demotion: step 2 (LARDER_MEM=1M, a disk tier)",
                      dict(demote, LARDER_MEM="1M"))
        check(s["kept"]["bytes_demoted"] > 0 and s["kept"]["bytes_evicted"] == 0,
              f"kept memory files went to the disk tier ({s['kept']['bytes_demoted']} B), none "
              f"dropped ({s['kept']['bytes_evicted']} B)")
        check(s["pfs"]["bytes_read"] == 0,
              "demotion: step 2 read no byte from the PFS (what left memory came from disk)")

        s = steps.run("disk tier: step 1 (cold)", on_disk)
        check(s["pfs"]["bytes_read"] == now, f"disk step 1 read the tree from the PFS once ({now} B)")
        disk_root = os.path.join(job.local, f"larder-{os.geteuid()}", "keep-name-disk")
        disk0 = kept_files(os.path.join(disk_root, "node-0"), ".disk")
        disk1 = kept_files(os.path.join(disk_root, "node-1"), ".disk")
        check(disk0 and disk1, f"both nodes kept disk-tier files ({len(disk0)}, {len(disk1)})")
        s = steps.run("disk tier: step 2 (warm)", on_disk)
        check(s["pfs"]["bytes_read"] == 0, "disk step 2 read no byte from the PFS")
        check(s["kept"]["bytes_adopted"] > 0 and s["integrity"]["mismatches"] == 0,
              f"disk step 2 adopted kept disk chunks ({s['kept']['bytes_adopted']} B), no mismatch")
        for path in disk0:
            flip_every_page(path)
        # Node 1's disk files cut inside their data, as a step killed while writing would leave
        # them (arenas are sparse: cut at half the end of their first data extent).
        for path in disk1:
            with open(path, "rb") as f:
                end = os.lseek(f.fileno(), 0, os.SEEK_HOLE)
            os.truncate(path, end // 2)
        s = steps.run("disk tier: a byte changed in node 0's disk files, node 1's cut short",
                      on_disk)
        check(s["integrity"]["mismatches"] >= 1,
              f"the changed disk bytes were caught ({s['integrity']['mismatches']} mismatches)")
        # Never more than plain (every rank reading the tree itself); how much depends on which
        # node resolves a chunk first (a good copy of the other node, or the PFS).
        check(s["pfs"]["bytes_read"] <= RANKS * now,
              f"no more from the PFS than plain ({s['pfs']['bytes_read']} of {RANKS} x {now} B)")

        # Files produced in local mode by one step, read by the next (the PFS has no copy).
        produce = os.path.join(job.root, "produce.py")
        with open(produce, "w") as f:
            f.write(PRODUCE)
        out_dir = os.path.join(job.data, "out")
        os.makedirs(out_dir)
        made = {"LARDER_KEEP": "made", "LARDER_PRODUCE": out_dir, "LARDER_PRODUCE_MODE": "local",
                "LARDER_NODE_SIZE": "2", "LARDER_LOG": os.environ.get("KEPT_LOG", "warn")}
        for role in ("write", "read"):
            stats = os.path.join(job.root, f"made-{role}.json")
            result = os.path.join(job.root, f"made-{role}")
            env = job.python_env(job.env(stats=stats, extra=made))
            job.mpiexec(RANKS, [PYTHON, produce, out_dir, role, result], env, timeout=120)
            s = read_stats(stats)
            print(f"local mode, {role}: pfs {s['pfs']['bytes_read']} B, produced "
                  f"{s.get('produce', {})}, adopted {s['kept']['bytes_adopted']} B", flush=True)
        check(os.listdir(out_dir) == [], "local mode wrote nothing to the PFS")
        for r in range(RANKS):
            with open(f"{result}.{r}") as f:
                got = f.read().split()
            check(got == ["made-by-0.bin", "ok", "made-by-2.bin", "ok"],
                  f"rank {r} of the next step read, stat'ed and mapped both produced files: {got}")
        check(s["pfs"]["bytes_read"] == 0 and s["kept"]["bytes_adopted"] > 0,
              "the next step read them from what step 1 kept, no PFS byte")

        # The test's stores go with its scratch directories; nothing of any job is left.
        job.check_clean_except_kept()
        check(True, "no processes or job files left")
    finally:
        job.close()


if __name__ == "__main__":
    main()
