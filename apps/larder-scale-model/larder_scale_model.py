#!/usr/bin/env python3
"""larder-scale-model: message counts and projected times of Larder's read protocol at scale.

The machine this project runs on has 16 ranks at most; this model projects what the read
protocol does at 64-8192 nodes of 12 ranks. It is arithmetic on the protocol as built (read from
runtime/cache, runtime/node, runtime/directory), not a simulation: counts follow from the code,
times from per-message costs (Costs below, each overridable on the command line). Four
protocols, three workloads:

  as-was  the protocol before the redesign (commit eab3ffe): every rank looks up every key itself
          (a READY lookup is 3 RMA round trips: compare-and-swap, fetch of the state, get of the
          payload), waiters poll with back-off from 20 us to 5 ms, every remote hit is a get from
          the key's one owner (reads in pieces: the first piece, then the whole chunk)
  as-is, no groups
          the current code with LARDER_GROUP=off: one resolver per node asks the key's home
          (node table), a claim is one round trip, a publication one put, waiters are notified;
          list-ahead resolves a listed directory's entries and small files in one round trip per
          phase; a chunk read on the ticket path is copied once per node down a fan-out tree of
          fan-out F rooted at the origin
  as-is   the current code (commit dab1128) with node groups (LARDER_GROUP, default auto: G =
          ceil(sqrt(N)) from 64 nodes up, no groups below): a node asks its group's entry; one
          representative per group asks the key's home and publishes its node's answer for the
          group; list-ahead in batches the same way; every tree has fan-out max(1, F/2)
  copper  a Copper-like tree of whole-file RPCs with one root (fan-out 2..7 by job size, files
          over 10 MiB read from the PFS by every rank)

  W1 torch  an `import torch`-like tree: 2,352 files, 68 MB, 431 directories; every rank lists
            every directory, then stats, opens and reads every file once
  W2 hot    every rank opens and reads the same 64 MiB file at once
  W3 torch .so  the 296 shared objects (509.8 MB) `import torch` maps, loaded by every rank
            through the loader's audit module (opened by path, never listed)
  A cold `import torch` is W1 + W3 (the tables' last section).

What comes from the runtime's own code: larder-scale-probe (scale_probe.cpp, built with the
release preset) computes with Config::group_size, the key functions of chunk_key.hpp and the
home rule, and fanout.hpp the group sizes, the trees' fan-out and shapes, and the home rank and
group-entry rank of every key of the workloads (named as key_steps() names them); the model runs
it (--probe PATH) and uses its numbers. When it is not built the model says so and computes the
same quantities itself, with a stand-in hash for the key placement (--check then compares the
two when the probe is there). Everything else (who claims, costs, queues, waits) is modelled.

Assumptions that shape the times (docs/scale.md has the whole list): nodes move in step (they
start together, and every step ends when its slowest answer arrives), so each sequential step
pays the queue of its busiest server; a key is claimed by a node drawn at random (seeded, so
every run prints the same figures), except that W2's and W3's chunks all have one origin; the
time of a run is its critical path or the busiest resource's total work, whichever is longer.
Python's own CPU time, FUSE and the PFS's behaviour under load beyond a fixed rate are not
modelled.

    larder_scale_model.py [--nodes 64,128,...,8192] [--ranks-per-node 12] [--fanout 8]
        [--group auto|off|G] [--probe PATH|none] [--COST VALUE ...] [--json FILE|-]
        [--markdown] [--plot out.png] [--check]
"""
import argparse
import collections
import dataclasses
import functools
import hashlib
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_PROBE = os.path.join(REPO, "build", "release", "bin", "larder-scale-probe")
KIB = 1024
MIB = 1024 * KIB
NODE_COUNTS = [64, 128, 256, 512, 1024, 2048, 4096, 8192]
UNGROUPED = "as-is, no groups"
PROTOCOLS = ["as-was", UNGROUPED, "as-is", "copper"]
HOT_FILE = 64 * MIB
GOAL_S = 10.0  # the goal: a cold `import torch` at 8,192 nodes (W1 + W3)


# ---- inputs ------------------------------------------------------------------------------------

@dataclasses.dataclass
class Costs:
    """Per-message costs and rates (seconds, bytes/s). Defaults: a Slingshot-class network and a
    Lustre-class PFS; docs/scale.md says where each comes from."""
    rtt: float = 2e-6             # one round trip between nodes (RMA flush or small message)
    home_svc: float = 1e-6        # a home rank's service of one directory message
    msg_cpu: float = 1e-6         # a rank's cost to handle or send one wait message
    get_svc: float = 0.5e-6       # the holder's cost to serve one get (NIC), besides the bytes
    link_bw: float = 25e9         # a node's link, each direction
    memcpy_bw: float = 10e9       # copying from a node peer's arena
    local_op: float = 1e-6        # one call answered on the node (preload, memo, node table)
    pfs_meta: float = 0.5e-3      # one metadata request (stat, listing, open)
    pfs_read: float = 1e-3        # latency of one data request
    pfs_stream_bw: float = 2e9    # one reader's bandwidth from the PFS
    pfs_meta_rate: float = 5e4    # metadata requests/s the PFS serves, all clients together
    pfs_bw: float = 6.5e11        # bytes/s the PFS serves, all clients together
    poll_first: float = 20e-6     # as-was: first back-off pause of a waiter
    poll_max: float = 5e-3        # as-was: longest pause
    copper_rpc: float = 20e-6     # Copper-like: a daemon's service of one RPC
    copper_fuse: float = 10e-6    # Copper-like: one application call through FUSE


@dataclasses.dataclass
class Settings:
    """The protocol's settings (runtime/config/config.hpp defaults) and the job's shape."""
    ranks_per_node: int = 12
    fanout: int = 8                  # LARDER_FANOUT
    chunk: int = 4 * MIB             # LARDER_CHUNK
    small_file: int = 256 * KIB      # LARDER_SMALL_FILE: loaded by list-ahead
    list_ahead: int = 4096           # LARDER_LIST_AHEAD: largest listing resolved ahead
    read_piece: int = 1 * MIB        # the application's read size (as-was: pieces of a chunk)
    copper_max_file: int = 10 * MIB  # Copper-like: larger files bypass the cache


@dataclasses.dataclass
class Dir:
    files: list          # sizes in bytes
    subdirs: int = 0
    path: str = ""       # absolute, lexically clean (the keys are hashes of names)
    names: list = dataclasses.field(default_factory=list)         # the files' names
    subdir_paths: list = dataclasses.field(default_factory=list)  # the subdirectories' paths

    def entries(self):
        return len(self.files) + self.subdirs

    def file_paths(self):
        return [f"{self.path}/{name}" for name in self.names]


def name_files(d, pattern):
    d.names = [pattern.format(j) for j in range(len(d.files))]


@dataclasses.dataclass
class Workload:
    name: str
    dirs: list           # Dir, each listed by every rank when `listed`
    listed: bool = True
    passes: int = 1      # readings of every file (memos keep the answers between passes)

    def files(self):
        return [s for d in self.dirs for s in d.files]


# Debian's torch 1.13 tree on this machine (/usr/lib/python3/dist-packages/torch): 2,352 files,
# 431 directories, 63.4 MB, by size class (count, mean size); the three largest files by size.
# Every size is scaled by 68/63.42 so the tree totals the 68 MB of the projection's brief.
TORCH_CLASSES = [(1101, 1400), (787, 8703), (365, 32010), (77, 112278), (18, 461798),
                 (1, 3258656), (1, 4946208), (1, 7141664), (1, 11041160)]
TORCH_DIRS = 431
TORCH_BYTES = 68_000_000
TORCH_ROOT = "/lus/env/lib/python3.11/site-packages/torch"
TORCH_BRANCHING = 4


def torch_like():
    """W1: sizes from TORCH_CLASSES, dealt to the 431 directories in turn, largest first (so no
    directory holds two of the largest files). The directories form a tree, breadth first: the
    root is directory 0 and directory i > 0 is a subdirectory of directory (i - 1) // 4 (depth
    5, as torch's is about). Names: pkgI for directory I, modJ.py for a directory's J-th file."""
    scale = TORCH_BYTES / sum(n * s for n, s in TORCH_CLASSES)
    sizes = sorted((round(s * scale) for n, s in TORCH_CLASSES for _ in range(n)), reverse=True)
    dirs = [Dir([]) for _ in range(TORCH_DIRS)]
    for i, size in enumerate(sizes):
        dirs[i % TORCH_DIRS].files.append(size)
    dirs[0].path = TORCH_ROOT
    for i in range(1, TORCH_DIRS):
        parent = dirs[(i - 1) // TORCH_BRANCHING]
        dirs[i].path = f"{parent.path}/pkg{i}"
        parent.subdirs += 1
        parent.subdir_paths.append(dirs[i].path)
    for d in dirs:
        name_files(d, "mod{}.py")
    return Workload("W1 torch", dirs)


# The shared objects `import torch` maps from scripts/build-env-tree.py's tree on this machine
# (Debian's torch 1.13 with its library closure): 296 objects, 509.8 MB, by size class (count,
# mean size); the six largest are kept as they are. Opened by path (the loader's candidates),
# never listed: one lookup and every chunk per object, in every rank (the audit module).
SHARED_OBJECT_CLASSES = [(9, 14175), (49, 41688), (88, 144187), (88, 510434), (42, 2303663),
                         (14, 6800000), (1, 16394944), (1, 16849840), (1, 23798344),
                         (1, 31262256), (1, 39644304), (1, 119940888)]


def torch_objects():
    """W3: the shared objects of `import torch` (through LD_AUDIT), in the tree's two library
    directories."""
    sizes = sorted((s for n, s in SHARED_OBJECT_CLASSES for _ in range(n)), reverse=True)
    dirs = [Dir([], path="/lus/env/lib"), Dir([], path=f"{TORCH_ROOT}/lib")]
    for i, size in enumerate(sizes):
        dirs[i % 2].files.append(size)
    for d in dirs:
        name_files(d, "lib{}.so")
    return Workload("W3 torch .so", dirs, listed=False)


def hot_file(size=HOT_FILE):
    """W2: one file, opened by its path (no listing)."""
    return Workload("W2 hot", [Dir([size], path="/lus/data", names=["hot.bin"])], listed=False)


def generated_tree(name, files, dirs, total_bytes, large_size, passes):
    """A larder-treebench-like tree: `dirs - 1` subdirectories of the root holding `files`
    files, one in a hundred of `large_size` bytes, the others equal, `total_bytes` in all."""
    large = files // 100
    small = (total_bytes - large * large_size) // (files - large)
    root = "/lus/treebench"
    subdirs = [Dir([], path=f"{root}/d{i}") for i in range(dirs - 1)]
    for i in range(files):
        subdirs[i % len(subdirs)].files.append(large_size if i % 100 == 99 else small)
    for d in subdirs:
        name_files(d, "f{}")
    top = Dir([], subdirs=dirs - 1, path=root, subdir_paths=[d.path for d in subdirs])
    return Workload(name, [top] + subdirs, passes=passes)


# ---- what every protocol counts ---------------------------------------------------------------

def chunks_of(size, chunk):
    return [min(chunk, size - at) for at in range(0, size, chunk)] if size > 0 else []


def listing_bytes(d):
    """A listing blob: getdents64 records of about 32 bytes, and '.' and '..'."""
    return 48 + 32 * d.entries()


class Tally:
    """Counts and time of one protocol on one workload at one node count."""

    def __init__(self, protocol, workload, nodes, settings):
        self.protocol, self.workload, self.nodes = protocol, workload, nodes
        self.ranks = nodes * settings.ranks_per_node
        self.lookups = 0           # directory lookups (the stats' directory.ops)
        self.holder_lookups = 0    # as-is: those of fan-out holder entries
        self.messages = 0          # directory round trips and wait messages, all kinds
        self.home = collections.Counter()    # directory messages received, by rank
        self.served = collections.Counter()  # bytes served to other nodes, by rank (or node)
        self.pfs_ops = 0           # metadata and data requests
        self.pfs_meta_ops = 0      # of which metadata (stat, listing, open)
        self.pfs_bytes = 0
        self.gets = 0              # transfers between nodes
        self.between_nodes = 0     # bytes between nodes
        self.depth = 0             # hops of the longest copy chain
        self.path = collections.Counter()    # critical path, seconds by component
        self.busy = {}             # total work of the busiest resources, seconds
        # as-is with node groups: messages received at group-entry homes, by the home's slot
        # among its group's ranks (every full group has the same pattern; the last group its
        # own when it is smaller), and the job's group shape (Shape, below)
        self.shape = None
        self.group_home_full = collections.Counter()
        self.group_home_last = collections.Counter()
        self.key_home_lookups = 0  # the most lookups of one key that one home receives
        self.placement = ""        # where the key homes came from: probe or python

    def pfs(self, ops, nbytes=0, meta=None):
        """`ops` requests to the PFS: metadata ones unless they read bytes (or `meta` says)."""
        self.pfs_ops += ops
        self.pfs_meta_ops += (ops if nbytes == 0 else 0) if meta is None else meta
        self.pfs_bytes += nbytes

    def max_home(self):
        """The most directory messages one rank receives: as a key's home, as a group entry's
        home (with node groups), or both."""
        most = max(self.home.values(), default=0)
        sh = self.shape
        if sh is None or not sh.group:
            return most
        per_group = sh.group * sh.ranks_per_node
        last_smaller = sh.last < sh.group

        def entries(rank):
            g = rank // per_group
            slot = rank - g * per_group
            if last_smaller and g == sh.groups - 1:
                return self.group_home_last[slot]
            return self.group_home_full[slot]

        most = max(most, max(self.group_home_full.values(), default=0),
                   max(self.group_home_last.values(), default=0))
        for rank, received in self.home.items():
            most = max(most, received + entries(rank))
        return most

    def time(self):
        return max(sum(self.path.values()), max(self.busy.values(), default=0.0))

    def row(self):
        path = sum(self.path.values())
        bound = max(self.busy, key=self.busy.get) if self.busy else ""
        return {
            "protocol": self.protocol, "workload": self.workload, "nodes": self.nodes,
            "ranks": self.ranks, "dir_lookups": self.lookups,
            "holder_lookups": self.holder_lookups, "dir_messages": self.messages,
            "max_home_messages": self.max_home(),
            "max_lookups_per_key_at_a_home": self.key_home_lookups,
            "group_size": self.shape.group if self.shape else 0,
            "groups": self.shape.groups if self.shape else 0,
            "tree_fanout": self.shape.tree_fanout if self.shape else 0,
            "placement": self.placement,
            "max_served_bytes": max(self.served.values(), default=0),
            "gets": self.gets, "between_nodes_bytes": self.between_nodes,
            "pfs_ops": self.pfs_ops, "pfs_meta_ops": self.pfs_meta_ops,
            "pfs_bytes": self.pfs_bytes, "depth": self.depth,
            "time_s": self.time(), "path_s": path,
            "path_components_s": dict(self.path),
            "busiest": {"resource": bound, "s": self.busy.get(bound, 0.0)},
        }


def add_local_reads(t, w, per_call, memcpy_bw):
    """Each rank's own calls, answered on its node (all ranks at once): a listing per
    directory, and a stat, an open and a read per file, the bytes copied at memcpy speed."""
    files = w.files()
    calls = (len(w.dirs) if w.listed else 0) + 3 * len(files)
    t.path["local"] += w.passes * (calls * per_call + sum(files) / memcpy_bw)


def add_bounds(t, c, home_svc):
    t.busy["busiest home"] = t.max_home() * home_svc
    t.busy["busiest link"] = max(t.served.values(), default=0) / c.link_bw
    t.busy["PFS metadata"] = t.pfs_meta_ops / c.pfs_meta_rate
    t.busy["PFS bandwidth"] = t.pfs_bytes / c.pfs_bw


def load_time(c, size):
    """Loading one chunk (or, size None, one metadata answer) from the PFS."""
    return c.pfs_meta if size is None else c.pfs_read + size / c.pfs_stream_bw


# ---- as-was: every rank for itself, polling waiters, one owner serves everyone ----------------

def backoff_polls(c, wait):
    """Pauses a waiter sleeps before an entry that is final `wait` seconds after its first
    look is seen final (20 us, doubling, at most 5 ms), and how long it slept."""
    polls, slept, pause = 0, 0.0, c.poll_first
    while slept < wait:
        slept += pause
        polls += 1
        pause = min(pause * 2, c.poll_max)
    return polls, slept


def as_was_key(t, c, home, load):
    """Every rank looks the key up at its home: the claimer with one compare-and-swap, then
    publishes (a put and an accumulate, two flushes); a reader that finds the entry LOADING
    re-looks after each pause (compare-and-swap, fetch of the state), then reads the payload.
    In step, the readers that arrive while the claimer loads are those the home serves first."""
    p = t.ranks
    ready = load + 2 * c.rtt
    waiters = min(p - 1, int(ready / (2 * c.home_svc)))
    polls, slept = backoff_polls(c, ready)
    msgs = 1 + 2 + 3 * (p - 1) + 2 * polls * waiters
    t.lookups += p
    t.messages += msgs
    t.home[home] += msgs
    queue = msgs * c.home_svc
    t.path["rtt"] += 3 * c.rtt
    if queue >= slept:
        t.path["home queue"] += queue
    else:
        t.path["pfs"] += load
        t.path["polling"] += slept - load


def as_was_copies(t, c, s, owner, length, passes=1):
    """The ranks of the other nodes each get the chunk from its owner: one get when the read
    takes it whole, else the first piece then the whole chunk (kept after the first pass)."""
    readers = t.ranks - s.ranks_per_node
    if length <= s.read_piece:
        gets, nbytes = passes, passes * length
    else:
        gets, nbytes = 2, s.read_piece + length
    t.gets += readers * gets
    t.between_nodes += readers * nbytes
    t.served[owner] += readers * nbytes
    t.path["rtt"] += c.rtt
    t.path["owner link"] += readers * (gets * c.get_svc + nbytes / c.link_bw)


def as_was(w, nodes, s, c):
    t = Tally("as-was", w.name, nodes, s)
    rng = random.Random(f"as-was/{w.name}/{nodes}")
    hot_owner = rng.randrange(t.ranks)  # W2: the first reader of chunk 0 is first at every chunk

    def draw():
        return rng.randrange(t.ranks)

    for d in w.dirs:
        if w.listed:
            as_was_key(t, c, draw(), c.pfs_meta)
            t.pfs(1)
            as_was_copies(t, c, s, draw(), listing_bytes(d))
            for _ in range(d.subdirs):
                as_was_key(t, c, draw(), c.pfs_meta)
                t.pfs(1)
        for size in d.files:
            as_was_key(t, c, draw(), c.pfs_meta)
            t.pfs(1)
            owner = draw() if w.listed else hot_owner
            for length in chunks_of(size, s.chunk):
                as_was_key(t, c, draw(), load_time(c, length))
                t.pfs(1, length)
                as_was_copies(t, c, s, owner, length, w.passes)
    t.depth = 1
    add_local_reads(t, w, c.local_op, c.memcpy_bw)
    add_bounds(t, c, c.home_svc)
    return t


# ---- where keys live, groups and tree shapes: the runtime's code (probe) or the model's own ----

AUTO_GROUP_NODES = 64  # Config::kAutoGroupNodes


def group_size(nodes, setting):
    """Config::group_size: nodes per group for LARDER_GROUP=`setting` (0: no groups)."""
    if setting in ("off", "0"):
        return 0
    if setting == "auto":
        if nodes < AUTO_GROUP_NODES:
            return 0
        g = 1
        while g * g < nodes:  # the ceiling of the square root
            g += 1
        return g
    g = int(setting)
    return 0 if g >= nodes else g


def fanout_depth(position, fanout):
    """fanout.hpp's depth(): hops from the origin (0) to `position`."""
    d = 0
    while position:
        position = (position - 1) // fanout
        d += 1
    return d


def holders(nodes, fanout):
    """Positions 1.. that can have children (fanout.hpp can_have_children): they claim and
    publish a holder entry; the others are leaves."""
    return max(0, (nodes - 2) // fanout) if nodes >= 2 else 0


def children(p, fanout, positions):
    """How many positions of a tree of `positions` have `p` as their parent."""
    return max(0, min(fanout, positions - 1 - p * fanout))


@functools.lru_cache(maxsize=None)
def tree_children(nholders, fanout, positions):
    """children() of the holders 1..nholders of a tree."""
    return tuple(children(p, fanout, positions) for p in range(1, nholders + 1))


@functools.lru_cache(maxsize=None)
def tree_received(nholders, fanout, positions):
    """Messages each holder entry of a tree receives: its claim, its publication and its
    children's lookups."""
    return tuple(2 + k for k in tree_children(nholders, fanout, positions))


def tree_shape(positions, f):
    """The model's own arithmetic for what the probe computes with fanout.hpp."""
    last = fanout_depth(positions - 1, f) if positions > 1 else 0
    most = min(f, positions - 1) if positions > 1 else 0
    return {"positions": positions, "fanout": f, "depth_last": last, "depth_max": last,
            "ancestors_last": last, "max_children": most, "root_children": most,
            "holders": holders(positions, f), "askers": max(0, positions - 1 - f),
            "tickets_map_to_positions": True}


TREE_FIELDS = ["positions", "fanout", "depth_last", "depth_max", "ancestors_last",
               "max_children", "root_children", "holders", "askers", "tickets_map_to_positions"]


@dataclasses.dataclass
class Shape:
    """A job's node groups and fan-out trees (from the probe, or shape_of below)."""
    nodes: int
    ranks_per_node: int
    group: int        # nodes per group; 0: no groups
    groups: int
    last: int         # nodes of the last group
    tree_fanout: int  # every tree's fan-out
    trees: dict       # "nodes" without groups; "representatives", "group", "last_group" with
    max_node_children: int

    def sizes(self):
        return [self.group] * (self.groups - 1) + [self.last] if self.group else []


def shape_of(nodes, ranks_per_node, fanout, setting):
    """The model's own version of the probe's job shape (Cache's constructor and fanout.hpp)."""
    g = group_size(nodes, setting)
    f = max(1, fanout // 2) if g else fanout
    if not g:
        trees = {"nodes": tree_shape(nodes, f)}
        return Shape(nodes, ranks_per_node, 0, 0, 0, f, trees, trees["nodes"]["max_children"])
    groups = -(-nodes // g)
    last = nodes - (groups - 1) * g
    trees = {"representatives": tree_shape(groups, f), "group": tree_shape(g, f),
             "last_group": tree_shape(last, f)}
    root = max(trees["group"]["root_children"], trees["last_group"]["root_children"])
    most = max(trees["representatives"]["max_children"] + root,
               trees["group"]["max_children"], trees["last_group"]["max_children"])
    return Shape(nodes, ranks_per_node, g, groups, last, f, trees, most)


def key_steps(w, s):
    """The directory keys of a workload, by step (keys looked up together), as the as-is
    protocol looks them up: (kind, path, chunk index). Per listed directory I: its listing (LI),
    its entries' stat answers (SI), its small files' chunk 0 (CI); per file J of directory I
    read on the ticket path: FI.J, its chunks (after its path when it is opened by path)."""
    small = min(s.small_file, s.chunk)
    steps = {}
    for i, d in enumerate(w.dirs):
        paths = d.file_paths()
        ahead = w.listed and d.entries() <= s.list_ahead
        if w.listed:
            steps[f"L{i}"] = [("listing", d.path, 0)]
            steps[f"S{i}"] = [("path", p, 0) for p in d.subdir_paths + paths]
            smalls = [p for p, size in zip(paths, d.files) if 0 < size <= small] if ahead else []
            if smalls:
                steps[f"C{i}"] = [("chunk", p, 0) for p in smalls]
        for j, (p, size) in enumerate(zip(paths, d.files)):
            if size == 0 or (ahead and size <= small):
                continue
            keys = [] if w.listed else [("path", p, 0)]
            keys += [("chunk", p, k) for k in range(len(chunks_of(size, s.chunk)))]
            steps[f"F{i}.{j}"] = keys
    return steps


def stand_in_key(kind, path, index):
    """The model's stand-in for chunk_key.hpp's XXH3 keys (home, check): another hash, the same
    structure (a path's record and chunk 0 of its file share the file's home)."""
    def h(*parts):
        d = hashlib.blake2b("\0".join(parts).encode(), digest_size=16).digest()
        return int.from_bytes(d[:8], "little"), int.from_bytes(d[8:], "little")

    file_lo = h("file", path)[0]
    if kind == "path":
        return file_lo, h("path", path)[1]
    if kind == "listing":
        return h("listing", path)
    lo, hi = h("chunk", path, str(index))
    return (file_lo if index == 0 else lo), hi


class Placement:
    """Where every key of the workloads lives (home rank; group entry's rank within its group)
    and each job's group and tree shape: from larder-scale-probe when it is built, else from
    the model's own arithmetic (shape_of, stand_in_key)."""

    def __init__(self, workloads, node_counts, s, settings, probe=None):
        self.s = s
        self.steps = {w.name: key_steps(w, s) for w in workloads}
        self.jobs = {}
        self.source = "python"
        self.probe = probe
        if probe:
            self._run_probe(probe, workloads, node_counts, settings)
            self.source = "probe"

    def _run_probe(self, probe, workloads, node_counts, settings):
        with tempfile.NamedTemporaryFile("w", suffix=".keys", delete=False) as f:
            for wi, w in enumerate(workloads):
                for step, keys in self.steps[w.name].items():
                    for kind, path, index in keys:
                        f.write(f"{wi}:{step}\t{kind}\t{path}\t{index}\n")
            keys_path = f.name
        try:
            out = subprocess.run(
                [probe, "--nodes", ",".join(map(str, node_counts)),
                 "--ranks-per-node", str(self.s.ranks_per_node), "--fanout", str(self.s.fanout),
                 "--group", ",".join(dict.fromkeys(settings)), "--keys", keys_path],
                check=True, capture_output=True, text=True).stdout
        finally:
            os.unlink(keys_path)
        doc = json.loads(out)
        index = {w.name: wi for wi, w in enumerate(workloads)}
        for job in doc["jobs"]:
            n, setting = job["nodes"], job["group_setting"]
            shape = Shape(n, self.s.ranks_per_node, job["group_size"], job["groups"],
                          job["last_group_nodes"], job["tree_fanout"], job["trees"],
                          job["max_node_children"])
            steps = {}
            for name, wi in index.items():
                prefix = f"{wi}:"
                steps[name] = {k[len(prefix):]: v for k, v in job.get("steps", {}).items()
                               if k.startswith(prefix)}
            self.jobs[(n, setting)] = (shape, steps)

    def shape(self, nodes, setting):
        if (nodes, setting) in self.jobs:
            return self.jobs[(nodes, setting)][0]
        return shape_of(nodes, self.s.ranks_per_node, self.s.fanout, setting)

    def keys(self, w, nodes, setting, step):
        """Homes, group slots (full groups) and slots in the last group of a step's keys."""
        if (nodes, setting) in self.jobs:
            shape, steps = self.jobs[(nodes, setting)]
            got = steps[w.name][step]
            return (got["homes"], got.get("group_slots", []), got.get("last_group_slots", []))
        shape = self.shape(nodes, setting)
        ranks = nodes * self.s.ranks_per_node
        raw = [stand_in_key(*k) for k in self.steps[w.name][step]]
        homes = [home % ranks for home, _ in raw]
        if not shape.group:
            return homes, [], []
        full = shape.group * self.s.ranks_per_node
        last = shape.last * self.s.ranks_per_node
        return homes, [check % full for _, check in raw], [check % last for _, check in raw]


def find_probe(path):
    """The probe's path when it is built; otherwise None, after saying so on stderr."""
    if path == "none":
        return None
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return path
    print(f"larder-scale-model: larder-scale-probe is not built ({path}): group sizes, tree "
          "shapes and key homes come from the model's own arithmetic and a stand-in hash, not "
          "from the runtime's code. Build it with: cmake --preset release && "
          "ninja -C build/release larder-scale-probe", file=sys.stderr)
    return None


# ---- as-is: node resolvers, one-round-trip directory, notifications, list-ahead, fan-out, ------
# ---- and node groups (LARDER_GROUP) ------------------------------------------------------------

class AsIs:
    """The as-is protocol on one workload at one node count. `setting` is LARDER_GROUP: "off"
    is the protocol without groups (every node asks the key's home); with groups (G > 0 in the
    job's Shape) each node asks its group's entry first and one representative per group asks
    the home (docs/protocol.md, "Node groups"). Key homes, group sizes and tree shapes come from
    the Placement (the probe, or the model's arithmetic); who claims, and the times, are
    modelled."""

    def __init__(self, label, w, nodes, s, c, place, setting, pipelined_copies=False):
        self.w, self.s, self.c, self.place, self.setting = w, s, c, place, setting
        self.t = t = Tally(label, w.name, nodes, s)
        self.sh = sh = place.shape(nodes, setting)
        t.shape, t.placement = sh, place.source
        self.rng = random.Random(f"as-is/{w.name}/{nodes}")
        self.pipelined_copies = pipelined_copies
        self.copy_batches = 0
        # The most lookups of one key at one home: every node's at the key's home without
        # groups; with groups, each representative's there and each group node's at its
        # group's entry (a holder entry gets at most 1 + F/2: its holder's and its children's).
        t.key_home_lookups = max(sh.groups, sh.group) if sh.group else nodes

    def keys(self, step, idx=None):
        homes, full, last = self.place.keys(self.w, self.t.nodes, self.setting, step)
        if idx is None:
            return homes, full, last
        pick = (lambda xs: [xs[i] for i in idx] if xs else [])
        return pick(homes), pick(full), pick(last)

    def run(self):
        w, t, c = self.w, self.t, self.c
        for i, d in enumerate(w.dirs):
            if w.listed:
                self.listed_dir(i, d)
                continue
            for j, size in enumerate(d.files):  # W2, W3: every rank opens each file by path
                if size > 0:
                    self.tree_file(f"F{i}.{j}", size, origin=0, ranked=True, with_open=True)
        t.depth = max(t.depth, 1 if t.nodes > 1 else 0)
        add_local_reads(t, w, c.local_op, c.memcpy_bw)
        add_bounds(t, c, c.home_svc)
        return t

    def listed_dir(self, i, d):
        """A directory every rank lists: its listing, then list-ahead (when the listing is short
        enough): the entries' stat answers in one batch, the small files' data in another (chunk
        0 homed with its path); files over the small limit are read on the ticket path. A
        directory too long for list-ahead is resolved an entry at a time (one batch per
        entry)."""
        s, c, t = self.s, self.c, self.t
        small = min(s.small_file, s.chunk)
        self.batch(f"L{i}", [c.pfs_meta], [listing_bytes(d)])
        t.pfs(1)
        ahead = d.entries() <= s.list_ahead
        names = d.subdirs + len(d.files)
        if ahead:
            if names:
                self.batch(f"S{i}", [c.pfs_meta] * names)
        else:
            for k in range(names):
                self.batch(f"S{i}", [c.pfs_meta], idx=[k])
        t.pfs(names)
        smalls = [size for size in d.files if 0 < size <= small] if ahead else []
        if smalls:
            self.batch(f"C{i}", [load_time(c, size) for size in smalls], smalls)
            t.pfs(len(smalls), sum(smalls))
        for j, size in enumerate(d.files):
            if size > 0 and not (ahead and size <= small):
                self.tree_file(f"F{i}.{j}", size)

    # -- a batch: keys every node's resolver looks up at once (a listing, a list-ahead phase) --

    def batch(self, step, loads, copy_bytes=None, idx=None):
        """Every node's resolver looks up the same keys at once, in one round trip. Each key is
        claimed by a node drawn at random, which loads it (`loads`: seconds per key) and
        publishes its keys together; the lookups its keys' homes serve before that publication
        wait (a registration and a notification per waiting node and claimer). With copy_bytes,
        the other nodes then copy each key's bytes (list-ahead's copies and listings bypass the
        fan-out tree): from its origin without groups; with groups, the origin's to each
        group's representative, then each representative's to its group."""
        homes, full, last = self.keys(step, idx)
        assert len(homes) == len(loads), step
        if self.sh.group:
            self.batch_grouped(homes, full, last, loads, copy_bytes)
        else:
            self.batch_flat(homes, loads, copy_bytes)

    def claims(self, loads, waiting):
        """Claimers drawn at random; for each, its loads, then the notices to the `waiting`
        lookups its homes served before its publication. Returns (claimed: node -> key
        indices, the slowest claimer's seconds, its parts)."""
        c, t = self.c, self.t
        claimed = collections.defaultdict(list)
        for i in range(len(loads)):
            claimed[self.rng.randrange(t.nodes)].append(i)
        slowest, parts = 0.0, {}
        for keys in claimed.values():
            load = sum(loads[i] for i in keys)
            waiters = min(waiting, int((load + c.rtt) / c.home_svc))
            t.messages += 2 * waiters
            done = load + c.rtt + waiters * c.msg_cpu
            if done > slowest:
                slowest, parts = done, {"pfs": load, "rtt": c.rtt, "notify": waiters * c.msg_cpu}
        return claimed, slowest, parts

    def batch_flat(self, homes, loads, copy_bytes):
        t, c, n = self.t, self.c, self.t.nodes
        for h in homes:
            t.home[h] += n + 1
        t.lookups += n * len(loads)
        queue = max(collections.Counter(homes).values()) * n * c.home_svc
        claimed, slowest, parts = self.claims(loads, n - 1)
        t.messages += n * len(loads) + len(loads)
        t.path["rtt"] += c.rtt
        if queue >= slowest:
            t.path["home queue"] += queue
        else:
            t.path.update(parts)
        if copy_bytes is not None:
            self.copy_from_origins(claimed, copy_bytes)

    def copy_from_origins(self, claimed, copy_bytes):
        t, c, n = self.t, self.c, self.t.nodes
        egress = 0.0
        for node, keys in claimed.items():
            nbytes = sum(copy_bytes[i] for i in keys)
            t.served[node] += (n - 1) * nbytes
            egress = max(egress, (n - 1) * (len(keys) * c.get_svc + nbytes / c.link_bw))
        total = sum(copy_bytes)
        t.gets += (n - 1) * len(copy_bytes)
        t.between_nodes += (n - 1) * total
        if n > 1:
            t.path["rtt"] += c.rtt
            t.path["origin link"] += max(egress, total / c.link_bw)

    def add_group_entries(self, full, last):
        """Each node's lookup of its group's entry, and its representative's publication, at
        the entry's home (a rank of the group: slot `full[i]` in a full group, `last[i]` in a
        smaller last group). Returns the group queue: the busiest group-entry home's lookups."""
        t, sh = self.t, self.sh
        for slot in full:
            t.group_home_full[slot] += sh.group + 1
        queue = max(collections.Counter(full).values()) * sh.group
        if sh.last < sh.group:
            for slot in last:
                t.group_home_last[slot] += sh.last + 1
            queue = max(queue, max(collections.Counter(last).values()) * sh.last)
        return queue * self.c.home_svc

    def group_waiters(self, size, published):
        """Lookups of a group's entry that its home serves before the representative publishes
        it (`published` seconds after they arrive): they wait (one registration, one notice)."""
        return min(size - 1, int(published / self.c.home_svc))

    def batch_grouped(self, homes, full, last, loads, copy_bytes):
        """With node groups: every node asks its group's entries (one round trip); the
        representatives (the first to claim each entry) ask the keys' homes (a second round
        trip; N/G lookups per key there), load or wait, copy from the origins, publish the
        group entries together and notify their groups' other nodes, which then copy from them
        (two copy stages: origin to representatives, representatives to their groups)."""
        t, c, sh, n = self.t, self.c, self.sh, self.t.nodes
        g_nodes, ng, sizes = sh.group, sh.groups, sh.sizes()
        nkeys = len(loads)
        for h in homes:
            t.home[h] += ng + 1
        gqueue = self.add_group_entries(full, last)
        t.lookups += (n + ng) * nkeys
        # lookups (group entries and homes), publications (homes and group entries)
        t.messages += (n + ng) * nkeys + nkeys + ng * nkeys
        kqueue = max(collections.Counter(homes).values()) * ng * c.home_svc
        claimed, slowest, parts = self.claims(loads, ng - 1)
        origin_of = {i: node for node, keys in claimed.items() for i in keys}
        at_home = {"rtt": c.rtt, "home queue": kqueue} if kqueue >= slowest else \
            dict(parts, rtt=2 * c.rtt)
        home_stage = c.rtt + max(kqueue, slowest)
        # Each group's representative of each key: the origin in its own group, in the others
        # the node whose claim of the group's entry came first (drawn).
        reps = collections.defaultdict(list)
        rnd = self.rng.random
        for i in range(nkeys):
            origin = origin_of[i]
            own = origin // g_nodes
            for g in range(ng):
                reps[origin if g == own else g * g_nodes + int(rnd() * sizes[g])].append(i)
        stage1 = stage2 = 0.0
        if copy_bytes is not None and n > 1:
            total = sum(copy_bytes)
            for node, keys in claimed.items():
                nbytes = sum(copy_bytes[i] for i in keys)
                t.served[node] += (ng - 1) * nbytes
                stage1 = max(stage1, (ng - 1) * (len(keys) * c.get_svc + nbytes / c.link_bw))
            for node, keys in reps.items():
                size = sizes[node // g_nodes]
                nbytes = sum(copy_bytes[i] for i in keys)
                t.served[node] += (size - 1) * nbytes
                stage1 = max(stage1, nbytes / c.link_bw)  # a representative receiving its keys
                stage2 = max(stage2, (size - 1) * (len(keys) * c.get_svc + nbytes / c.link_bw))
            stage2 = max(stage2, total / c.link_bw)  # a node receiving every key
            t.gets += (n - 1) * nkeys
            t.between_nodes += (n - 1) * total
            stage1 += c.rtt
            stage2 += c.rtt
        published = c.rtt + home_stage + stage1 + c.rtt
        notify = 0.0
        waiting = {size: self.group_waiters(size, published) for size in set(sizes)}
        for node in reps:
            waiters = waiting[sizes[node // g_nodes]]
            t.messages += 2 * waiters
            notify = max(notify, waiters * c.msg_cpu)
        inner = home_stage + stage1 + c.rtt + notify
        t.path["rtt"] += c.rtt  # the group entries' round trip
        if gqueue >= inner:
            t.path["group queue"] += gqueue
        else:
            t.path.update(at_home)  # a Counter: adds
            t.path["rtt"] += c.rtt  # the group entries' publication
            t.path["group notify"] += notify
            if stage1:
                t.path["origin link"] += stage1
        if stage2:
            self.copy_batches += 1
            if self.pipelined_copies and self.copy_batches > 1:
                # the representatives' copies overlap the next batch's first stage
                t.path["representative link"] += max(0.0, stage2 - stage1)
            else:
                t.path["representative link"] += stage2

    # -- a file read on the ticket path: chunks down fan-out trees ------------------------------

    def tree_file(self, step, size, origin=None, ranked=False, with_open=False):
        """A file read on the ticket path: each chunk looked up by every node's resolver (with
        the path in the same round trip at an open, without groups), loaded by its origin,
        copied once per node down the fan-out tree (a position claims its holder entry and asks
        its parent's in one round trip, waits for the parent's notification, copies from it).
        Chunks are pipelined: the origin loads chunk k+1 while chunk k flows down the tree.
        `origin`: the origin node of every chunk (else drawn per chunk); `ranked`: tree
        positions are nodes in order (W2, W3: the first node to open the file is first to
        every next chunk), else drawn. With groups an open looks the path up first, through
        the group like any key (lookup_for_open does not batch it with chunk 0 then), then
        each chunk goes down the representatives' tree and then each group's."""
        homes, full, last = self.keys(step)
        chunks = chunks_of(size, self.s.chunk)
        if not chunks:
            return
        first_chunk = 1 if with_open else 0
        if not self.sh.group:
            self.chunks_flat(homes[first_chunk:], chunks, origin, ranked, with_open)
            return
        if with_open:
            self.batch_grouped(homes[:1], full[:1], last[:1], [self.c.pfs_meta], None)
            self.t.pfs(1)
        self.chunks_grouped(homes[first_chunk:], full[first_chunk:], last[first_chunk:], chunks,
                            origin, ranked)

    def level(self, length):
        """A tree level: a holder's round trips, its notices and its copies to F children."""
        c, f = self.c, self.sh.tree_fanout
        if self.t.nodes <= 1:
            return 0.0
        return 2 * c.rtt + f * c.msg_cpu + f * (c.get_svc + length / c.link_bw)

    def chunks_flat(self, homes, chunks, origin, ranked, with_open):
        t, c, n = self.t, self.c, self.t.nodes
        tree = self.sh.trees["nodes"]
        f, nholders, depth = self.sh.tree_fanout, tree["holders"], tree["depth_last"]
        t.depth = max(t.depth, depth)
        first, stage = None, (0.0, "tree")  # chunk 0's origin stage; the slowest stage after it
        for k, length in enumerate(chunks):
            origin_k = origin if origin is not None else self.rng.randrange(n)
            s0 = self.origin_stage(homes[k], length, with_open and k == 0)
            self.holder_entries(tree, 1)
            self.serve_flat(origin_k, ranked, length)
            if first is None:
                first = s0
            else:
                stage = max(stage, s0, (self.level(length), "tree"))
        t.path["rtt"] += c.rtt
        t.path[first[1]] += first[0]
        t.path["tree"] += depth * self.level(chunks[0])
        t.path[stage[1]] += (len(chunks) - 1) * stage[0]

    def origin_stage(self, home, length, opening, askers=None):
        """One chunk at its home: every node's resolver looks it up (an open looks the path up
        in the same round trip: two keys), or with groups each group's representative; its
        origin loads and publishes it and notifies the lookups that found it loading. Returns
        (seconds, what limits them)."""
        t, c = self.t, self.c
        asking = t.nodes if askers is None else askers
        share = 2 if opening else 1
        t.home[home] += share * (asking + 1)
        t.lookups += share * asking
        load = load_time(c, length) + (c.pfs_meta if opening else 0.0)
        t.pfs(1 + (1 if opening else 0), length, meta=1 if opening else 0)
        waiters = min(asking - 1, int((load + c.rtt) / c.home_svc))
        t.messages += share * (asking + 1) + 2 * waiters
        queue = share * asking * c.home_svc
        loaded = load + c.rtt + waiters * c.msg_cpu
        return c.rtt + max(queue, loaded), "home queue" if queue >= loaded else "origin load"

    def holder_entries(self, tree, copies):
        """Holder entries of `copies` trees of one shape for one chunk: each holder claims its
        entry (and publishes it), each position below the first level looks its parent's up,
        registers and is notified. Holder entries are homed by their own hash: drawn."""
        t, f = self.t, tree["fanout"]
        nholders, asking, positions = tree["holders"], tree["askers"], tree["positions"]
        t.lookups += copies * (nholders + asking)
        t.holder_lookups += copies * (nholders + asking)
        t.messages += copies * (nholders + asking + nholders + 2 * asking)
        ranks = t.ranks
        rnd = self.rng.random
        home = t.home
        for received in tree_received(nholders, f, positions):
            for _ in range(copies):
                home[int(rnd() * ranks)] += received

    def serve_flat(self, origin, ranked, length):
        """Bytes each holder serves: the origin its first min(F, n-1) positions, holder p its
        children; ranked: position p is node p, else nodes drawn for this chunk."""
        t, n = self.t, self.t.nodes
        f, nholders = self.sh.tree_fanout, self.sh.trees["nodes"]["holders"]
        t.served[origin] += min(f, n - 1) * length
        for p in range(1, nholders + 1):
            node = p if ranked else self.rng.randrange(n)
            t.served[node] += children(p, f, n) * length
        t.gets += n - 1
        t.between_nodes += (n - 1) * length

    def chunks_grouped(self, homes, full, last, chunks, origin, ranked):
        """Chunks through node groups: every node asks its group's entry (G lookups at that
        home), the representatives the chunk's home (N/G lookups, one more round trip each);
        the chunk goes down the representatives' tree (fan-out F/2), each representative
        publishes its copy as its group's answer and notifies its group, and the chunk goes
        down each group's tree (fan-out F/2) from its representative."""
        t, c, sh, n = self.t, self.c, self.sh, self.t.nodes
        reps_tree, group_tree = sh.trees["representatives"], sh.trees["group"]
        last_tree = sh.trees["last_group"]
        depth_reps, depth_group = reps_tree["depth_last"], group_tree["depth_last"]
        t.depth = max(t.depth, depth_reps + depth_group)
        full_groups = sh.groups if sh.last == sh.group else sh.groups - 1
        first, stage = None, (0.0, "tree")
        for k, length in enumerate(chunks):
            origin_k = origin if origin is not None else self.rng.randrange(n)
            gqueue = self.add_group_entries(full[k:k + 1], last[k:k + 1])
            t.lookups += n
            t.messages += n + sh.groups  # the group entries' lookups and publications
            s0 = self.origin_stage(homes[k], length, False, askers=sh.groups)
            published = 3 * c.rtt + s0[0] + depth_reps * self.level(length)
            notify = 0.0
            for size in sh.sizes():
                waiters = self.group_waiters(size, published)
                t.messages += 2 * waiters
                notify = max(notify, waiters * c.msg_cpu)
            self.holder_entries(reps_tree, 1)
            self.holder_entries(group_tree, full_groups)
            if sh.last < sh.group:
                self.holder_entries(last_tree, 1)
            self.serve_grouped(origin_k, ranked, length)
            if first is None:
                first = (s0, gqueue, notify)
            else:
                rep = (s0[0] + c.rtt, s0[1])  # a representative's extra round trip per chunk
                stage = max(stage, rep, (self.level(length), "tree"),
                            (c.rtt + notify, "group notify"), (gqueue, "group queue"))
        (s0, label), gqueue, notify = first
        level0 = self.level(chunks[0])
        to_group = 3 * c.rtt + s0 + depth_reps * level0 + notify
        if gqueue >= to_group:
            t.path["group queue"] += gqueue
        else:
            t.path["rtt"] += 4 * c.rtt  # group entry, home, holder entries, group publication
            t.path[label] += s0 - c.rtt
            t.path["tree"] += depth_reps * level0
            t.path["group notify"] += notify
        t.path["rtt"] += c.rtt  # holder entries of the group's tree
        t.path["tree"] += depth_group * level0
        t.path[stage[1]] += (len(chunks) - 1) * stage[0]

    def serve_grouped(self, origin, ranked, length):
        """Bytes each node serves for one chunk: in the representatives' tree (the origin at its
        root, holder p its children), and in each group's tree (the representative at its root,
        holder q its children). Ranked: group g's representative is its first node, position p
        of the representatives' tree group p's, position q of a group's tree its q-th node;
        else the origin's group has the origin as representative, and the others are drawn."""
        t, sh, n = self.t, self.sh, self.t.nodes
        f, g_nodes, sizes = sh.tree_fanout, sh.group, sh.sizes()
        reps_tree = sh.trees["representatives"]
        own = origin // g_nodes
        rnd = self.rng.random
        if ranked:
            rep = [g * g_nodes for g in range(sh.groups)]
            order = list(range(sh.groups))
        else:
            rep = [origin if g == own else g * g_nodes + int(rnd() * sizes[g])
                   for g in range(sh.groups)]
            others = [g for g in range(sh.groups) if g != own]
            order = [own] + self.rng.sample(others, min(len(others), reps_tree["holders"]))
        served = t.served
        served[rep[order[0]]] += children(0, f, sh.groups) * length
        for p, kids in enumerate(tree_children(reps_tree["holders"], f, sh.groups), 1):
            served[rep[order[p]]] += kids * length
        last_smaller = sh.last < sh.group
        for g, size in enumerate(sizes):
            tree = sh.trees["last_group" if last_smaller and g == sh.groups - 1 else "group"]
            served[rep[g]] += children(0, f, size) * length
            first = g * g_nodes
            for q, kids in enumerate(tree_children(tree["holders"], f, size), 1):
                served[first + (q if ranked else int(rnd() * size))] += kids * length
        t.gets += n - 1
        t.between_nodes += (n - 1) * length


def as_is(w, nodes, s, c, place, setting="auto", pipelined_copies=False, label="as-is"):
    return AsIs(label, w, nodes, s, c, place, setting, pipelined_copies).run()


# ---- Copper-like: a tree of whole-file RPCs with one root --------------------------------------

def copper_fanout(nodes):
    """Copper's fan-out by job size (scale-anchors.md)."""
    for limit, f in [(31, 2), (121, 3), (341, 4), (781, 5), (1555, 6)]:
        if nodes <= limit:
            return f
    return 7


def copper_depth(nodes, f):
    depth, reach, level = 0, 1, 1
    while reach < nodes:
        level *= f
        reach += level
        depth += 1
    return depth


def copper_chain(t, c, f, depth, size=None):
    """One request per node (the node's ranks share it), each asking its parent, the root
    asking the PFS; answers, whole files included, come back down (RPC replies, no RDMA)."""
    n = t.nodes
    data = 0 if size is None else size
    t.lookups += n - 1
    t.messages += n - 1
    t.home["busiest parent"] += f
    t.pfs(1, data)
    t.path["rtt"] += depth * c.rtt
    t.path["daemon queue"] += depth * f * c.copper_rpc
    t.path["pfs"] += load_time(c, size)
    if data:
        t.served["busiest parent"] += f * data
        t.gets += n - 1
        t.between_nodes += (n - 1) * data
        t.path["parent link"] += depth * f * data / c.link_bw


def copper_bypass(t, c, s, size):
    """A file over the limit: every rank opens and reads it from the PFS."""
    reads = -(-size // s.read_piece)
    t.pfs(t.ranks * (1 + reads), t.ranks * size, meta=t.ranks)
    t.path["pfs"] += c.pfs_meta + reads * c.pfs_read + size / c.pfs_stream_bw
    t.path["PFS bandwidth"] += t.ranks * size / c.pfs_bw


def copper(w, nodes, s, c):
    t = Tally("copper", w.name, nodes, s)
    f = copper_fanout(nodes)
    depth = copper_depth(nodes, f)
    t.depth = depth
    for d in w.dirs:
        if w.listed:
            copper_chain(t, c, f, depth)              # the listing
            for _ in range(d.subdirs):
                copper_chain(t, c, f, depth)          # a subdirectory's stat
        for size in d.files:
            copper_chain(t, c, f, depth)              # the file's stat
            if size > s.copper_max_file:
                copper_bypass(t, c, s, size)
            else:
                copper_chain(t, c, f, depth, size)    # its bytes
    add_local_reads(t, w, c.copper_fuse, c.memcpy_bw)
    add_bounds(t, c, c.copper_rpc)
    return t


def project(workloads, node_counts, s, c, place, group="auto", pipelined_copies=False):
    rows = []
    for w in workloads:
        for p in PROTOCOLS:
            for n in node_counts:
                if p == "as-was":
                    t = as_was(w, n, s, c)
                elif p == UNGROUPED:
                    t = as_is(w, n, s, c, place, "off", label=UNGROUPED)
                elif p == "as-is":
                    t = as_is(w, n, s, c, place, group, pipelined_copies)
                else:
                    t = copper(w, n, s, c)
                rows.append(t.row())
    return rows


def import_torch(rows):
    """A cold `import torch`: its Python files (W1) and its shared objects (W3), one after the
    other (an import interleaves them; their sum is the longer of the two readings)."""
    by = {(r["workload"], r["protocol"], r["nodes"]): r for r in rows}
    out = []
    for p in PROTOCOLS:
        for n in sorted({r["nodes"] for r in rows}):
            w1, w3 = by.get(("W1 torch", p, n)), by.get(("W3 torch .so", p, n))
            if w1 and w3:
                out.append({"protocol": p, "nodes": n, "w1_s": w1["time_s"],
                            "w3_s": w3["time_s"], "time_s": w1["time_s"] + w3["time_s"],
                            "w1_dominant": dominant(w1), "w3_dominant": dominant(w3),
                            "goal_s": GOAL_S})
    return out


# ---- calibration, invariants, and the probe against the model's own arithmetic -----------------

# ---- start-up ----------------------------------------------------------------------------------
# What start-up moves and holds (docs/architecture.md, "Start-up: what a rank holds of the
# others"), term by term as ucx_transport/address_book.cpp does it and counts it (BookTraffic).
# Per address book, a host's first rank receives its host's entry lengths (4 B each) and entries
# (MPI_Gather + MPI_Gatherv), then every host's total (4 B each) and every rank's entry
# (MPI_Allgather + MPI_Allgatherv among the first ranks); every other rank receives only the
# book's file name (MPI_Bcast of 1 KiB). Two books: the fabric's (worker address, arena keys)
# and the directory shards' (their remote keys). As it was, every rank gathered every rank's
# record (MPI_Allgatherv over the job).

BOOKS = 2
BOOK_NAME = 1024  # kNameBytes
LENGTH = 4        # an int length per rank or host


@dataclasses.dataclass
class Startup:
    entry_bytes: int = 332       # both books' entries of one rank, heads included (measured here)
    was_record_bytes: int = 291  # as it was: what every rank received per rank of the job
    local_s: float = 0.049       # Larder's own start on a rank (context, worker, arenas, table)
    agreements: int = 16         # small collectives of start-up (agreements, splits, barrier)


def startup_received(hosts, per_host, st):
    """Bytes a host's first rank and every other rank receive while the books are built."""
    ranks = hosts * per_host
    first = BOOKS * LENGTH * (per_host + hosts) + (per_host + ranks) * st.entry_bytes
    return first, BOOKS * BOOK_NAME


def startup(nodes, s, c, st):
    """As it was and as it is, at `nodes` nodes of s.ranks_per_node ranks: bytes received, held
    per rank and per node, and the time beyond MPI_Init (latency-bandwidth terms: a ring for the
    gathers among many, a tree for the small collectives)."""
    rpn = s.ranks_per_node
    ranks = nodes * rpn
    first, other = startup_received(nodes, rpn, st)
    book = ranks * st.entry_bytes
    tree = math.ceil(math.log2(max(ranks, 2)))
    small = st.agreements * tree * c.rtt
    # As it is: the node's gather (tree), then the ring among the first ranks, whose link carries
    # the book once; the name's broadcast on the node.
    is_gather = BOOKS * (math.ceil(math.log2(max(rpn, 2))) * c.rtt + rpn * st.entry_bytes / c.link_bw)
    is_ring = BOOKS * (nodes - 1) * c.rtt / 2 + book / c.link_bw
    is_s = st.local_s + small + is_gather + is_ring + BOOKS * tree * c.rtt
    # As it was: a ring over every rank, the node's link carrying every rank's copy of the table.
    was_bytes = ranks * st.was_record_bytes
    was_s = st.local_s + small + (ranks - 1) * c.rtt / 2 + rpn * was_bytes / c.link_bw
    return {"nodes": nodes, "ranks": ranks,
            "was": {"received": was_bytes, "held_rank": was_bytes, "held_node": rpn * was_bytes,
                    "time_s": was_s},
            "is": {"received_first": first, "received_other": other, "held_rank": 0,
                   "held_node": book, "time_s": is_s}}


def check_startup(cal, st, problems):
    """The model's terms against the bytes the code counted (peer_state_np4/8/16: one host)."""
    lines = []
    for run in cal["startup"]["runs"]:
        first, other = startup_received(1, run["ranks"], st)
        ok = first == run["first_rank_received"] and other == run["other_ranks_received"]
        line = (f"start-up {run['ranks']:>2} ranks on one host: first rank {first} B "
                f"(counted {run['first_rank_received']}), others {other} B "
                f"(counted {run['other_ranks_received']})")
        lines.append(("ok  " if ok else "FAIL") + " " + line)
        if not ok:
            problems.append(line)
    return lines


STARTUP_COLUMNS = ["nodes", "ranks", "as-was received per rank", "as-was held per node",
                   "as-was s", "as-is first rank receives", "as-is others receive",
                   "as-is book per node", "as-is private per rank", "as-is s"]


def startup_cells(r):
    w, i = r["was"], r["is"]
    return [str(r["nodes"]), human_count(r["ranks"]), human_bytes(w["received"]),
            human_bytes(w["held_node"]), f"{w['time_s']:.3g}", human_bytes(i["received_first"]),
            human_bytes(i["received_other"]), human_bytes(i["held_node"]),
            human_bytes(i["held_rank"]), f"{i['time_s']:.3g}"]



def load_calibration(path):
    with open(path) as f:
        return json.load(f)


def calibration_tree(spec):
    return generated_tree(spec["name"], spec["files"], spec["directories"], spec["bytes"],
                          spec["large_size"], spec["passes"])


def startup_costs(cal):
    spec = cal["startup"]
    return Startup(entry_bytes=spec["entry_bytes"], was_record_bytes=spec["was_record_bytes"],
                   local_s=spec["local_s"])


def calibration_settings(cal, s):
    return dataclasses.replace(s, ranks_per_node=cal["ranks_per_node"])


def check_as_is(cal, s, c, probe, problems):
    """The measured runs (at most 8 nodes: no node groups by default) and, for the same tree,
    the bound e2e_tree_scale_grouped asserts with LARDER_GROUP=2 at 8 nodes."""
    spec = cal["as_is"]
    w = calibration_tree(spec["tree"])
    data = sum(w.files())
    runs = spec["runs"]
    node_counts = sorted({-(-run["ranks"] // cal["ranks_per_node"]) for run in runs})
    place = Placement([w], node_counts, s, ["auto", "2"], probe)
    lines = []
    for run in runs:
        nodes = -(-run["ranks"] // cal["ranks_per_node"])
        t = as_is(w, nodes, s, c, place, "auto")
        keys = t.pfs_ops
        per_key = t.lookups / keys
        want = run["dir_ops_per_key"]
        ok = per_key == want and t.shape.group == 0
        line = f"as-is  {run['ranks']:>2} ranks {nodes} nodes (groups: " \
               f"{t.shape.group or 'none'}): dir ops per key {per_key:g} (measured {want:g})"
        if run.get("between_nodes_per_fetch") is not None:
            ratio = t.between_nodes / ((nodes - 1) * data)
            tol = spec["tolerance"]["between_nodes_per_fetch"]
            ok = ok and abs(ratio - run["between_nodes_per_fetch"]) <= tol
            line += f", between nodes / one fetch per node {ratio:.4f} " \
                    f"(measured {run['between_nodes_per_fetch']:.2f} +-{tol})"
        lines.append(("ok  " if ok else "FAIL") + " " + line)
        if not ok:
            problems.append(line)
    nodes = max(node_counts)
    t = as_is(w, nodes, s, c, place, "2")
    groups = t.shape.groups
    per_key = t.lookups / t.pfs_ops
    ratio = t.between_nodes / ((nodes - 1) * data)
    ok = t.shape.group == 2 and per_key <= nodes + groups and abs(ratio - 1) <= 0.005
    line = f"as-is  LARDER_GROUP=2 {nodes} nodes: dir ops per key {per_key:g} <= {nodes} " \
           f"nodes + {groups} groups (e2e_tree_scale_grouped's bound), between nodes / one " \
           f"fetch per node {ratio:.4f}"
    lines.append(("ok  " if ok else "FAIL") + " " + line)
    if not ok:
        problems.append(line)
    return lines


def check_as_was(cal, s, c, problems):
    spec = cal["as_was"]
    w = calibration_tree(spec["tree"])
    tol = spec["tolerance"]
    lines = []
    for run in spec["runs"]:
        nodes = -(-run["ranks"] // cal["ranks_per_node"])
        t = as_was(w, nodes, s, c)
        ok_ops = abs(t.lookups - run["dir_ops"]) <= tol["dir_ops"] * run["dir_ops"]
        ok_gets = abs(t.gets - run["gets"]) <= tol["gets"] * run["gets"]
        line = f"as-was {run['ranks']:>2} ranks {nodes} nodes: dir ops {t.lookups} " \
               f"(measured {run['dir_ops']}, +-{tol['dir_ops']:.0%}), gets {t.gets} " \
               f"(measured {run['gets']}, +-{tol['gets']:.0%})"
        lines.append(("ok  " if ok_ops and ok_gets else "FAIL") + " " + line)
        if not (ok_ops and ok_gets):
            problems.append(line)
    return lines


def holder_entries(shape, s, w):
    """Holder entries of the chunks read on the ticket path (files over the small limit)."""
    small = min(s.small_file, s.chunk)
    limit = small if w.listed else 0
    chunks = sum(len(chunks_of(f, s.chunk)) for f in w.files() if f > limit)
    if not shape.group:
        return chunks * shape.trees["nodes"]["holders"]
    per_chunk = shape.trees["representatives"]["holders"] + \
        (shape.groups - 1) * shape.trees["group"]["holders"] + shape.trees["last_group"]["holders"]
    return chunks * per_chunk


def check_invariants(rows, workloads, place, group, s, problems):
    """Properties of the protocol that the projection must keep at every node count."""
    lines = []

    def expect(ok, what):
        lines.append(("ok  " if ok else "FAIL") + " " + what)
        if not ok:
            problems.append(what)

    by_name = {w.name: w for w in workloads}
    for r in rows:
        if r["protocol"] not in ("as-is", UNGROUPED):
            continue
        n, p, w = r["nodes"], r["protocol"], by_name[r["workload"]]
        shape = place.shape(n, "off" if p == UNGROUPED else group)
        tag = f"{p} {r['workload'].split()[0]} {n} nodes"
        if r["workload"] == "W1 torch":
            # Every key of the PFS is looked up once per node (node table), and with groups once
            # more per group (its representative at the key's home); a holder entry by its
            # holder and its children.
            keys, held = r["pfs_ops"], holder_entries(shape, s, w)
            direct = r["dir_lookups"] - r["holder_lookups"]
            per_key = n + shape.groups
            expect(direct == per_key * keys and
                   r["holder_lookups"] <= (shape.tree_fanout + 1) * held,
                   f"{tag}: {direct} lookups = ({'N + N/G' if shape.group else 'N'} = {per_key})"
                   f" x {keys} keys, "
                   f"{r['holder_lookups']} holder lookups <= (F'+1) x {held} holder entries")
        if r["workload"] in ("W2 hot", "W3 torch .so"):
            data = sum(w.files())
            expect(r["max_served_bytes"] <= s.fanout * data,
                   f"{tag}: most served by a node {human_bytes(r['max_served_bytes'])} <= F x "
                   f"{human_bytes(data)} (ticket path, F = {s.fanout}, trees of fan-out "
                   f"{shape.tree_fanout})")
        if p == "as-is" and group == "auto" and r["workload"] == "W1 torch":
            bound = 2 * math.isqrt(n - 1) + 2  # 2 ceil(sqrt(N))
            expect(shape.group > 0 and r["max_lookups_per_key_at_a_home"] <= bound,
                   f"{tag}: most lookups of one key at one home "
                   f"{r['max_lookups_per_key_at_a_home']} <= 2 ceil(sqrt(N)) = {bound} "
                   f"(G = {shape.group}, {shape.groups} groups)")
    for wname in ("W1 torch", "W2 hot"):
        was = [r for r in rows if r["protocol"] == "as-was" and r["workload"] == wname]
        per_rank = {r["dir_lookups"] / r["ranks"] for r in was}
        expect(len(per_rank) == 1, f"as-was {wname}: directory lookups grow as N x R "
                                   f"({sorted(per_rank)} per rank)")
        for p in ("as-is", UNGROUPED):
            is_ = [r for r in rows if r["protocol"] == p and r["workload"] == wname]
            expect(all(a["dir_lookups"] < b["dir_lookups"] for a, b in zip(is_, was)),
                   f"{p} {wname}: fewer directory lookups than as-was at every node count")
    return lines


# Fields of a projected row that do not depend on where keys live (the probe's hash against the
# model's stand-in): they must agree exactly. The time depends on it only through the busiest
# home of each step (a collision of two keys of one batch on one rank, rare): within 5 %. The
# most messages one rank receives is a maximum over 10^3-10^5 ranks of a few keys each, and which
# keys share a rank is the hash's draw: within a factor of 2 either way.
PLACEMENT_EXACT = ["dir_lookups", "holder_lookups", "dir_messages", "gets", "between_nodes_bytes",
                   "pfs_ops", "pfs_meta_ops", "pfs_bytes", "depth", "max_served_bytes",
                   "max_lookups_per_key_at_a_home", "group_size", "groups", "tree_fanout"]
PLACEMENT_TOLERANCE = {"time_s": 0.05}
PLACEMENT_FACTOR = {"max_home_messages": 2.0}


def check_probe(probe_place, py_place, rows, py_rows, problems):
    """With the probe built: its group sizes and tree shapes (the runtime's functions) against
    the model's own arithmetic, exactly; a property of its key placement the model relies on
    (chunk 0 is homed with its path); and the projection with its placement against the one
    with the model's stand-in hash (which CI stages without the probe use)."""
    lines = []

    def expect(ok, what):
        lines.append(("ok  " if ok else "FAIL") + " " + what)
        if not ok:
            problems.append(what)

    def differences(a, b):
        diffs = [f"{f} {getattr(a, f)} (model {getattr(b, f)})"
                 for f in ("group", "groups", "last", "tree_fanout", "max_node_children")
                 if getattr(a, f) != getattr(b, f)]
        if set(a.trees) != set(b.trees):
            return diffs + [f"trees {sorted(a.trees)} (model {sorted(b.trees)})"]
        return diffs + [f"{name}.{f} {a.trees[name][f]} (model {b.trees[name][f]})"
                        for name in a.trees for f in TREE_FIELDS
                        if a.trees[name][f] != b.trees[name][f]]

    shapes, differing = 0, []
    for (n, setting) in sorted(probe_place.jobs):
        shapes += 1
        diffs = differences(probe_place.shape(n, setting),
                            shape_of(n, py_place.s.ranks_per_node, py_place.s.fanout, setting))
        if diffs:
            differing.append(f"{n} nodes LARDER_GROUP={setting}: {', '.join(diffs)}")
    # A sweep of job sizes and LARDER_GROUP settings beyond the projected ones (the probe
    # without keys prints only the shapes).
    sweep_nodes = list(range(1, 131)) + [255, 256, 257, 1000, 4095, 4096, 4097, 8191, 8192, 8193]
    sweep_groups = ["auto", "off", "2", "3", "7", "64"]
    out = subprocess.run([probe_place.probe, "--nodes", ",".join(map(str, sweep_nodes)),
                          "--ranks-per-node", str(py_place.s.ranks_per_node),
                          "--fanout", str(py_place.s.fanout), "--group", ",".join(sweep_groups)],
                         check=True, capture_output=True, text=True).stdout
    for job in json.loads(out)["jobs"]:
        a = Shape(job["nodes"], py_place.s.ranks_per_node, job["group_size"], job["groups"],
                  job["last_group_nodes"], job["tree_fanout"], job["trees"],
                  job["max_node_children"])
        b = shape_of(job["nodes"], py_place.s.ranks_per_node, py_place.s.fanout,
                     job["group_setting"])
        shapes += 1
        diffs = differences(a, b)
        if diffs:
            differing.append(f"{job['nodes']} nodes LARDER_GROUP={job['group_setting']}: "
                             f"{', '.join(diffs)}")
    expect(not differing,
           f"probe: group size, groups, tree fan-out and the shape of every tree (depth, most "
           f"children, holders, askers) equal the model's arithmetic in {shapes} jobs (the "
           f"projected ones, and {len(sweep_nodes)} node counts x LARDER_GROUP "
           f"{'/'.join(sweep_groups)})"
           + (f"; {len(differing)} differ, first: " + "; ".join(differing[:3]) if differing
              else ""))
    homed_apart = 0
    checked = 0
    for (n, setting), (_, steps) in probe_place.jobs.items():
        for wname, named in steps.items():
            path_home = {}
            keys = probe_place.steps[wname]
            for step, got in named.items():
                for (kind, path, index), home in zip(keys[step], got["homes"]):
                    if kind == "path":
                        path_home[path] = home
            for step, got in named.items():
                for (kind, path, index), home in zip(keys[step], got["homes"]):
                    if kind == "chunk" and index == 0 and path in path_home:
                        checked += 1
                        homed_apart += path_home[path] != home
    expect(homed_apart == 0 and checked > 0,
           f"probe: chunk 0 of a file lives with its path's record ({checked - homed_apart} of "
           f"{checked} keys)")
    worst = collections.defaultdict(float)
    mismatched = []
    for a, b in zip(rows, py_rows):
        if a["protocol"] not in ("as-is", UNGROUPED):
            continue
        for f in PLACEMENT_EXACT:
            if a[f] != b[f]:
                mismatched.append(f"{a['protocol']} {a['workload']} {a['nodes']}: {f}")
        for f, tol in PLACEMENT_TOLERANCE.items():
            rel = abs(a[f] - b[f]) / max(b[f], 1e-12)
            worst[f] = max(worst[f], rel)
        for f in PLACEMENT_FACTOR:
            worst[f] = max(worst[f], max(a[f], b[f]) / max(min(a[f], b[f]), 1))
    expect(not mismatched, "probe placement and the stand-in hash give the same counts "
                           "(lookups, messages, copies, bytes, PFS, depth, most served)"
           + (": " + "; ".join(mismatched[:5]) if mismatched else ""))
    for f, tol in PLACEMENT_TOLERANCE.items():
        expect(worst[f] <= tol, f"probe placement against the stand-in hash: {f} within "
                                f"{worst[f]:.2%} (tolerance {tol:.0%})")
    for f, factor in PLACEMENT_FACTOR.items():
        expect(worst[f] <= factor, f"probe placement against the stand-in hash: {f} within a "
                                   f"factor {worst[f]:.2f} (tolerance {factor:g}: which keys share "
                                   f"a rank is the hash's draw)")
    return lines


def run_check(args, rows, workloads, node_counts, s, c, place, probe):
    cal = load_calibration(args.calibration)
    cs = calibration_settings(cal, s)
    problems = []
    lines = check_as_is(cal, cs, c, probe, problems) + check_as_was(cal, cs, c, problems)
    lines += check_startup(cal, startup_costs(cal), problems)
    lines += check_invariants(rows, workloads, place, args.group, s, problems)
    if probe:
        py_place = Placement(workloads, node_counts, s, [args.group, "off"], None)
        py_rows = project(workloads, node_counts, s, c, py_place, args.group,
                          args.pipelined_copies)
        lines += check_probe(place, py_place, rows, py_rows, problems)
    else:
        lines.append("skip the probe's comparisons: larder-scale-probe is not built (see above)")
    print("\n".join(lines))
    print(f"{len(lines) - len(problems) - (0 if probe else 1)} of "
          f"{len(lines) - (0 if probe else 1)} checks pass"
          + ("" if probe else " (without the probe)"))
    return not problems


# ---- output ------------------------------------------------------------------------------------

def human_bytes(n):
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def human_count(n):
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(int(n))


COLUMNS = ["nodes", "protocol", "dir msgs", "max/home", "max served", "PFS ops", "PFS bytes",
           "depth", "time s", "dominant"]
TORCH_COLUMNS = ["nodes", "protocol", "W1 s", "W3 s", "W1 + W3 s", "under 10 s",
                 "W1 dominant", "W3 dominant"]


def dominant(r):
    comp = r["path_components_s"]
    top = max(comp, key=comp.get) if comp else ""
    return r["busiest"]["resource"] if r["busiest"]["s"] > r["path_s"] else top


def cells(r):
    return [str(r["nodes"]), r["protocol"], human_count(r["dir_messages"]),
            human_count(r["max_home_messages"]), human_bytes(r["max_served_bytes"]),
            human_count(r["pfs_ops"]), human_bytes(r["pfs_bytes"]), str(r["depth"]),
            f"{r['time_s']:.3g}", dominant(r)]


def torch_cells(r):
    return [str(r["nodes"]), r["protocol"], f"{r['w1_s']:.3g}", f"{r['w3_s']:.3g}",
            f"{r['time_s']:.3g}", "yes" if r["time_s"] < r["goal_s"] else "no",
            r["w1_dominant"], r["w3_dominant"]]


def print_rows(title, columns, sub, markdown):
    print(f"\n{title}\n")
    if markdown:
        print("| " + " | ".join(columns) + " |")
        print("|" + "---|" * len(columns))
        for c in sub:
            print("| " + " | ".join(c) + " |")
        return
    widths = [max(len(x) for x in col) for col in zip(columns, *sub)]
    for c in [columns] + sub:
        print("  ".join(x.rjust(wd) for x, wd in zip(c, widths)))


def print_table(rows, markdown, place, group):
    shape = place.shape(max(r["nodes"] for r in rows), group)
    source = "larder-scale-probe (the runtime's code)" if place.source == "probe" else \
        "the model's own arithmetic (the probe is not built)"
    print(f"placement, group sizes and tree shapes: {source}; as-is: LARDER_GROUP={group} "
          f"(G = {shape.group or 'none'} at {shape.nodes} nodes)")
    rpn = rows[0]["ranks"] // rows[0]["nodes"]
    for wname in dict.fromkeys(r["workload"] for r in rows):
        sub = [cells(r) for r in rows if r["workload"] == wname]
        sub.sort(key=lambda c: (int(c[0]), PROTOCOLS.index(c[1])))
        print_rows(f"{wname} ({rpn} ranks per node)", COLUMNS, sub, markdown)
    torch = import_torch(rows)
    if torch:
        sub = [torch_cells(r) for r in torch]
        sub.sort(key=lambda c: (int(c[0]), PROTOCOLS.index(c[1])))
        print_rows(f"cold import torch = W1 + W3 ({rpn} ranks per node)", TORCH_COLUMNS, sub,
                   markdown)


def plot(rows, out):
    if shutil.which("gnuplot") is None:
        sys.exit("--plot needs gnuplot")
    work = tempfile.mkdtemp(prefix="larder-scale-model-")
    try:
        series = [(wname, [r for r in rows if r["workload"] == wname])
                  for wname in dict.fromkeys(r["workload"] for r in rows)]
        series.append(("W1 + W3: cold import torch", import_torch(rows)))
        panels = []
        for i, (title, sub) in enumerate(series):
            lines = []
            for k, p in enumerate(PROTOCOLS):
                dat = os.path.join(work, f"{i}-{k}.dat")
                with open(dat, "w") as f:
                    for r in sub:
                        if r["protocol"] == p:
                            f.write(f"{r['nodes']} {r['time_s']}\n")
                label = "Copper-like" if p == "copper" else p
                lines.append(f"'{dat}' u 1:2 w lp lw 2 t '{label}'")
            if i == len(series) - 1:
                lines.append(f"{GOAL_S} w l dt 2 lc rgb 'black' t 'goal: 10 s at 8192'")
            panels.append(f"set title '{title}: projected time (model)'; plot " + ", ".join(lines))
        script = (f"set terminal pngcairo size 1200,1000; set output '{out}';"
                  "set multiplot layout 2,2; set logscale xy; set grid;"
                  "set key left top;"
                  "set xlabel 'nodes (12 ranks each)'; set ylabel 'seconds';"
                  "set xtics (64,128,256,512,1024,2048,4096,8192);"
                  f"set xrange [{min(r['nodes'] for r in rows) / 1.3}:"
                  f"{max(r['nodes'] for r in rows) * 1.3}];"
                  + ";".join(panels) + "; unset multiplot")
        subprocess.run(["gnuplot", "-e", script], check=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---- command line ------------------------------------------------------------------------------

def group_setting(v):
    if v in ("auto", "off"):
        return v
    try:
        g = int(v)
    except ValueError:
        raise argparse.ArgumentTypeError("auto, off, 0 (off) or nodes per group (>= 2)")
    if g == 0:
        return "off"
    if g < 2:
        raise argparse.ArgumentTypeError("nodes per group must be at least 2 (LARDER_GROUP)")
    return str(g)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", default=",".join(map(str, NODE_COUNTS)))
    for name, default in [(f.name, f.default) for f in dataclasses.fields(Settings)]:
        ap.add_argument("--" + name.replace("_", "-"), type=int, default=default)
    ap.add_argument("--group", type=group_setting, default="auto",
                    help="LARDER_GROUP of the as-is protocol: auto (ceil(sqrt(N)) from 64 nodes),"
                         " off, or nodes per group")
    ap.add_argument("--probe", default=DEFAULT_PROBE,
                    help="larder-scale-probe to run (none: the model's own arithmetic)")
    ap.add_argument("--pipelined-copies", action="store_true",
                    help="with groups, let the representatives' list-ahead copies overlap the "
                         "next batch (default: a batch ends when every node has its copies)")
    for name, default in [(f.name, f.default) for f in dataclasses.fields(Costs)]:
        ap.add_argument("--" + name.replace("_", "-"), type=float, default=default,
                        help=f"default {default:g}")
    ap.add_argument("--json", help="write the rows as JSON to this file (- for stdout)")
    ap.add_argument("--markdown", action="store_true", help="tables in Markdown")
    ap.add_argument("--plot", help="projected time against nodes, log-log (gnuplot, png)")
    ap.add_argument("--check", action="store_true",
                    help="compare the counts with calibration.json, check the invariants, and "
                         "compare the model's arithmetic with the probe's numbers")
    ap.add_argument("--calibration", default=os.path.join(HERE, "calibration.json"))
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    s = Settings(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Settings)})
    c = Costs(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Costs)})
    node_counts = [int(x) for x in args.nodes.split(",")]
    probe = find_probe(args.probe)
    workloads = [torch_like(), hot_file(), torch_objects()]
    place = Placement(workloads, node_counts, s, [args.group, "off"], probe)
    rows = project(workloads, node_counts, s, c, place, args.group, args.pipelined_copies)
    if args.check:
        return 0 if run_check(args, rows, workloads, node_counts, s, c, place, probe) else 1
    if args.json:
        doc = {"settings": dataclasses.asdict(s), "costs": dataclasses.asdict(c),
               "group": args.group, "placement": place.source, "rows": rows,
               "import_torch": import_torch(rows),
               "startup": [startup(n, s, c, startup_costs(load_calibration(args.calibration)))
                           for n in node_counts],
               "shapes": [dataclasses.asdict(place.shape(n, g)) for n in node_counts
                          for g in dict.fromkeys([args.group, "off"])]}
        text = json.dumps(doc, indent=1)
        if args.json == "-":
            print(text)
            return 0
        with open(args.json, "w") as f:
            f.write(text + "\n")
    print_table(rows, args.markdown, place, args.group)
    st = startup_costs(load_calibration(args.calibration))
    sub = [startup_cells(startup(n, s, c, st)) for n in node_counts]
    print_rows(f"start-up beyond MPI_Init ({s.ranks_per_node} ranks per node; this machine's "
               f"record sizes: {st.entry_bytes} B per rank in the books, {st.was_record_bytes} B "
               f"as it was; Larder's local start {st.local_s * 1e3:.0f} ms)", STARTUP_COLUMNS,
               sub, args.markdown)
    if args.plot:
        plot(rows, args.plot)
        print(f"\nplot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
