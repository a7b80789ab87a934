#!/usr/bin/env python3
"""larder-scale-model: message counts and projected times of Larder's read protocol at scale.

The machine this project runs on has 16 ranks at most; this model projects what the read
protocol does at 64-8192 nodes of 12 ranks. It is arithmetic on the protocol as built (read from
runtime/cache, runtime/node, runtime/directory), not a simulation: counts follow from the code,
times from per-message costs (Costs below, each overridable on the command line). Three
protocols, two workloads:

  as-was  the protocol before the redesign (commit eab3ffe): every rank looks up every key itself
          (a READY lookup is 3 RMA round trips: compare-and-swap, fetch of the state, get of the
          payload), waiters poll with back-off from 20 us to 5 ms, every remote hit is a get from
          the key's one owner (reads in pieces: the first piece, then the whole chunk)
  as-is   the current code: one resolver per node asks the directory (node table), a claim is one
          round trip, a publication one put, waiters are notified; list-ahead resolves a listed
          directory's entries and small files in one round trip per phase; a chunk read on the
          ticket path is copied once per node down a fan-out tree of fan-out F rooted at the origin
  copper  a Copper-like tree of whole-file RPCs with one root (fan-out 2..7 by job size, files
          over 10 MiB read from the PFS by every rank)

  W1 torch  an `import torch`-like tree: 2,352 files, 68 MB, 431 directories; every rank lists
            every directory, then stats, opens and reads every file once
  W2 hot    every rank opens and reads the same 64 MiB file at once
  W3 torch .so  the 296 shared objects (509.8 MB) `import torch` maps, loaded by every rank
            through the loader's audit module (opened by path, never listed)

Assumptions that shape the times (docs/scale.md has the whole list): nodes move in step (they
start together, and every step ends when its slowest answer arrives), so each sequential step
pays the queue of its busiest server; a key is claimed by a node drawn at random (seeded, so
every run prints the same figures), except that W2's chunks all have one origin; the time of a
run is its critical path or the busiest resource's total work, whichever is longer. Python's own
CPU time, FUSE and the PFS's behaviour under load beyond a fixed rate are not modelled.

    larder_scale_model.py [--nodes 64,128,...,8192] [--ranks-per-node 12] [--fanout 8]
        [--COST VALUE ...] [--json FILE|-] [--markdown] [--plot out.png] [--check]
"""
import argparse
import collections
import dataclasses
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
KIB = 1024
MIB = 1024 * KIB
NODE_COUNTS = [64, 128, 256, 512, 1024, 2048, 4096, 8192]
PROTOCOLS = ["as-was", "as-is", "copper"]
HOT_FILE = 64 * MIB


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

    def entries(self):
        return len(self.files) + self.subdirs


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


def torch_like():
    """W1: sizes from TORCH_CLASSES, dealt to the 431 directories in turn, largest first (so no
    directory holds two of the largest files), and the 430 subdirectories the same way."""
    scale = TORCH_BYTES / sum(n * s for n, s in TORCH_CLASSES)
    sizes = sorted((round(s * scale) for n, s in TORCH_CLASSES for _ in range(n)), reverse=True)
    dirs = [Dir([]) for _ in range(TORCH_DIRS)]
    for i, size in enumerate(sizes):
        dirs[i % TORCH_DIRS].files.append(size)
    for i in range(TORCH_DIRS - 1):
        dirs[i % TORCH_DIRS].subdirs += 1
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
    dirs = [Dir([]), Dir([])]
    for i, size in enumerate(sizes):
        dirs[i % 2].files.append(size)
    return Workload("W3 torch .so", dirs, listed=False)


def hot_file(size=HOT_FILE):
    """W2: one file, opened by its path (no listing)."""
    return Workload("W2 hot", [Dir([size])], listed=False)


def generated_tree(name, files, dirs, total_bytes, large_size, passes):
    """A larder-treebench-like tree: `dirs - 1` subdirectories of the root holding `files`
    files, one in a hundred of `large_size` bytes, the others equal, `total_bytes` in all."""
    large = files // 100
    small = (total_bytes - large * large_size) // (files - large)
    subdirs = [Dir([]) for _ in range(dirs - 1)]
    for i in range(files):
        subdirs[i % len(subdirs)].files.append(large_size if i % 100 == 99 else small)
    return Workload(name, [Dir([], subdirs=dirs - 1)] + subdirs, passes=passes)


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

    def pfs(self, ops, nbytes=0, meta=None):
        """`ops` requests to the PFS: metadata ones unless they read bytes (or `meta` says)."""
        self.pfs_ops += ops
        self.pfs_meta_ops += (ops if nbytes == 0 else 0) if meta is None else meta
        self.pfs_bytes += nbytes

    def time(self):
        return max(sum(self.path.values()), max(self.busy.values(), default=0.0))

    def row(self):
        path = sum(self.path.values())
        bound = max(self.busy, key=self.busy.get) if self.busy else ""
        return {
            "protocol": self.protocol, "workload": self.workload, "nodes": self.nodes,
            "ranks": self.ranks, "dir_lookups": self.lookups,
            "holder_lookups": self.holder_lookups, "dir_messages": self.messages,
            "max_home_messages": max(self.home.values(), default=0),
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
    t.busy["busiest home"] = max(t.home.values(), default=0) * home_svc
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


# ---- as-is: node resolvers, one-round-trip directory, notifications, list-ahead, fan-out ------

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


def batch(t, c, rng, loads, copy_bytes=None, homes=None):
    """Every node's resolver looks up the same keys at once, in one round trip (a listing,
    a list-ahead phase, an open). Each key is claimed by a node drawn at random, which loads it
    (`loads`: seconds per key) and publishes its keys together; the lookups its keys' homes
    serve before that publication wait (a registration and a notification per waiting node).
    With copy_bytes, every other node then copies each key's bytes from its origin, all at
    once (list-ahead's copies and listings bypass the fan-out tree). `homes`: the keys' home
    ranks when they are known (chunk 0 lives with its path), else drawn. Returns the homes."""
    n = t.nodes
    homes = homes or [rng.randrange(t.ranks) for _ in loads]
    for h in homes:
        t.home[h] += n + 1
    t.lookups += n * len(loads)
    queue = max(collections.Counter(homes).values()) * n * c.home_svc
    claimed = collections.defaultdict(list)
    for i, load in enumerate(loads):
        claimed[rng.randrange(n)].append(i)
    slowest, parts = 0.0, {}
    for node, keys in claimed.items():
        load = sum(loads[i] for i in keys)
        waiters = min(n - 1, int((load + c.rtt) / c.home_svc))
        t.messages += 2 * waiters
        done = load + c.rtt + waiters * c.msg_cpu
        if done > slowest:
            slowest, parts = done, {"pfs": load, "rtt": c.rtt, "notify": waiters * c.msg_cpu}
    t.messages += n * len(loads) + len(loads)
    t.path["rtt"] += c.rtt
    if queue >= slowest:
        t.path["home queue"] += queue
    else:
        t.path.update(parts)
    if copy_bytes is not None:
        copy_from_origins(t, c, claimed, copy_bytes)
    return homes


def copy_from_origins(t, c, claimed, copy_bytes):
    n = t.nodes
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


def tree_file(t, s, c, rng, size, origin=None, ranked=None, with_open=False, home0=None):
    """A file read on the ticket path: each chunk looked up by every node's resolver (with the
    path in the same round trip at an open), loaded by its origin, copied once per node down
    the fan-out tree (a position claims its holder entry and asks its parent's in one round
    trip, waits for the parent's notification, copies from it). Chunks are pipelined: the
    origin loads chunk k+1 while chunk k flows down the tree. `home0`: the home of the path,
    which chunk 0 shares."""
    n, f = t.nodes, s.fanout
    nholders = holders(n, f)
    depth = fanout_depth(n - 1, f)
    t.depth = max(t.depth, depth)
    first, stage = None, (0.0, "tree")  # chunk 0's origin stage; the slowest stage after it
    for k, length in enumerate(chunks_of(size, s.chunk)):
        origin_k = origin if origin is not None else rng.randrange(n)
        home = home0 if k == 0 and home0 is not None else rng.randrange(t.ranks)
        s0 = origin_stage(t, c, home, length, with_open and k == 0)
        add_holder_entries(t, rng, n, f, nholders)
        serve_down_tree(t, rng, f, nholders, origin_k, ranked, length)
        level = (2 * c.rtt + f * c.msg_cpu + f * (c.get_svc + length / c.link_bw), "tree") \
            if n > 1 else (0.0, "tree")
        if first is None:
            first = s0
        else:
            stage = max(stage, s0, level)
    if first is None:
        return
    count = len(chunks_of(size, s.chunk))
    level0 = 2 * c.rtt + f * c.msg_cpu + f * (c.get_svc + min(size, s.chunk) / c.link_bw)
    t.path["rtt"] += c.rtt
    t.path[first[1]] += first[0]
    t.path["tree"] += depth * level0
    t.path[stage[1]] += (count - 1) * stage[0]


def origin_stage(t, c, home, length, opening):
    """One chunk on the ticket path: every node's resolver looks it up at its home (an open
    looks the path up in the same round trip: two keys), its origin loads and publishes it and
    notifies the nodes that found it loading. Returns (seconds, what limits them)."""
    n = t.nodes
    share = 2 if opening else 1
    t.home[home] += share * (n + 1)
    t.lookups += share * n
    load = load_time(c, length) + (c.pfs_meta if opening else 0.0)
    t.pfs(1 + (1 if opening else 0), length, meta=1 if opening else 0)
    waiters = min(n - 1, int((load + c.rtt) / c.home_svc))
    t.messages += share * (n + 1) + 2 * waiters
    queue = share * n * c.home_svc
    loaded = load + c.rtt + waiters * c.msg_cpu
    return c.rtt + max(queue, loaded), "home queue" if queue >= loaded else "origin load"


def add_holder_entries(t, rng, n, f, nholders):
    """Holder entries of one chunk: each holder claims its entry (and publishes it), each
    position below the first level looks its parent's up, registers and is notified."""
    asking = max(0, n - 1 - f)
    t.lookups += nholders + asking
    t.holder_lookups += nholders + asking
    t.messages += nholders + asking + nholders + 2 * asking
    for p in range(1, nholders + 1):
        children = min(f, n - 1 - p * f)
        t.home[rng.randrange(t.ranks)] += 1 + max(0, children) + 1


def serve_down_tree(t, rng, f, nholders, origin, ranked, length):
    """Bytes each holder serves: the origin its first min(F, n-1) positions, holder p its
    children. `ranked` maps positions to nodes (None: nodes drawn at random for this chunk)."""
    n = t.nodes
    t.served[origin] += min(f, n - 1) * length
    for p in range(1, nholders + 1):
        node = ranked(p) if ranked else rng.randrange(n)
        t.served[node] += max(0, min(f, n - 1 - p * f)) * length
    t.gets += n - 1
    t.between_nodes += (n - 1) * length


def as_is_listed_dir(t, s, c, rng, d):
    """A directory every rank lists: its listing, then list-ahead (when the listing is short
    enough): the entries' stat answers in one batch, the small files' data in another (chunk 0
    homed with its path); files over the small limit are read on the ticket path. A directory
    too long for list-ahead is resolved an entry at a time (one batch per entry)."""
    small = min(s.small_file, s.chunk)
    batch(t, c, rng, [c.pfs_meta], [listing_bytes(d)])
    t.pfs(1)
    ahead = d.entries() <= s.list_ahead
    names = d.subdirs + len(d.files)
    if ahead:
        homes = batch(t, c, rng, [c.pfs_meta] * names) if names else []
    else:
        homes = [batch(t, c, rng, [c.pfs_meta])[0] for _ in range(names)]
    t.pfs(names)
    file_homes = homes[d.subdirs:]
    smalls = [i for i, f in enumerate(d.files) if 0 < f <= small] if ahead else []
    if smalls:
        sizes = [d.files[i] for i in smalls]
        batch(t, c, rng, [load_time(c, f) for f in sizes], sizes, [file_homes[i] for i in smalls])
        t.pfs(len(sizes), sum(sizes))
    loaded_ahead = set(smalls)
    for i, size in enumerate(d.files):
        if size > 0 and i not in loaded_ahead:
            tree_file(t, s, c, rng, size, home0=file_homes[i])


def as_is(w, nodes, s, c):
    t = Tally("as-is", w.name, nodes, s)
    rng = random.Random(f"as-is/{w.name}/{nodes}")
    for d in w.dirs:
        if w.listed:
            as_is_listed_dir(t, s, c, rng, d)
            continue
        for size in d.files:  # W2: every rank opens the file at once, by its path
            tree_file(t, s, c, rng, size, origin=0, ranked=lambda p: p, with_open=True)
    t.depth = max(t.depth, 1 if nodes > 1 else 0)
    add_local_reads(t, w, c.local_op, c.memcpy_bw)
    add_bounds(t, c, c.home_svc)
    return t


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


MODELS = {"as-was": as_was, "as-is": as_is, "copper": copper}


def project(workloads, node_counts, s, c):
    return [MODELS[p](w, n, s, c).row() for w in workloads for p in PROTOCOLS for n in node_counts]


# ---- calibration and invariants ----------------------------------------------------------------

def load_calibration(path):
    with open(path) as f:
        return json.load(f)


def calibration_tree(spec):
    return generated_tree(spec["name"], spec["files"], spec["directories"], spec["bytes"],
                          spec["large_size"], spec["passes"])


def calibration_settings(cal, s):
    return dataclasses.replace(s, ranks_per_node=cal["ranks_per_node"])


def check_as_is(cal, s, c, problems):
    spec = cal["as_is"]
    w = calibration_tree(spec["tree"])
    data = sum(w.files())
    lines = []
    for run in spec["runs"]:
        nodes = -(-run["ranks"] // cal["ranks_per_node"])
        t = as_is(w, nodes, s, c)
        keys = t.pfs_ops
        per_key = t.lookups / keys
        want = run["dir_ops_per_key"]
        ok = per_key == want
        line = f"as-is  {run['ranks']:>2} ranks {nodes} nodes: dir ops per key {per_key:g} " \
               f"(measured {want:g})"
        if run.get("between_nodes_per_fetch") is not None:
            ratio = t.between_nodes / ((nodes - 1) * data)
            tol = spec["tolerance"]["between_nodes_per_fetch"]
            ok = ok and abs(ratio - run["between_nodes_per_fetch"]) <= tol
            line += f", between nodes / one fetch per node {ratio:.4f} " \
                    f"(measured {run['between_nodes_per_fetch']:.2f} +-{tol})"
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


def check_invariants(rows, s, problems):
    """Properties of the protocol that the projection must keep at every node count."""
    lines = []

    def expect(ok, what):
        lines.append(("ok  " if ok else "FAIL") + " " + what)
        if not ok:
            problems.append(what)

    w1 = torch_like()
    for r in rows:
        if r["protocol"] == "as-is" and r["workload"] == "W1 torch":
            # A key of the PFS is looked up once per node (node table); a holder entry by its
            # holder and at most F children.
            keys, held = r["pfs_ops"], holder_entries(r["nodes"], s, w1)
            direct = r["dir_lookups"] - r["holder_lookups"]
            expect(direct <= r["nodes"] * keys and r["holder_lookups"] <= (s.fanout + 1) * held,
                   f"as-is W1 {r['nodes']} nodes: {direct} lookups <= nodes x {keys} keys, "
                   f"{r['holder_lookups']} holder lookups <= (F+1) x {held} holder entries")
        if r["protocol"] == "as-is" and r["workload"] == "W2 hot":
            bound = s.fanout * HOT_FILE
            expect(r["max_served_bytes"] <= bound,
                   f"as-is W2 {r['nodes']} nodes: most served by a rank "
                   f"{r['max_served_bytes'] / MIB:.0f} MiB <= F x 64 MiB")
    for wname in ("W1 torch", "W2 hot"):
        was = [r for r in rows if r["protocol"] == "as-was" and r["workload"] == wname]
        per_rank = {r["dir_lookups"] / r["ranks"] for r in was}
        expect(len(per_rank) == 1, f"as-was {wname}: directory lookups grow as N x R "
                                   f"({sorted(per_rank)} per rank)")
        is_ = [r for r in rows if r["protocol"] == "as-is" and r["workload"] == wname]
        expect(all(a["dir_lookups"] < b["dir_lookups"] for a, b in zip(is_, was)),
               f"as-is {wname}: fewer directory lookups than as-was at every node count")
    return lines


def holder_entries(nodes, s, w):
    """Holder entries of the chunks read on the ticket path (files over the small limit)."""
    small = min(s.small_file, s.chunk)
    chunks = sum(len(chunks_of(f, s.chunk)) for f in w.files() if f > small)
    return chunks * holders(nodes, s.fanout)


def run_check(cal_path, rows, s, c):
    cal = load_calibration(cal_path)
    cs = calibration_settings(cal, s)
    problems = []
    lines = check_as_is(cal, cs, c, problems) + check_as_was(cal, cs, c, problems)
    lines += check_invariants(rows, s, problems)
    print("\n".join(lines))
    print(f"{len(lines) - len(problems)} of {len(lines)} checks pass")
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


def cells(r):
    comp = r["path_components_s"]
    top = max(comp, key=comp.get) if comp else ""
    dominant = r["busiest"]["resource"] if r["busiest"]["s"] > r["path_s"] else top
    return [str(r["nodes"]), r["protocol"], human_count(r["dir_messages"]),
            human_count(r["max_home_messages"]), human_bytes(r["max_served_bytes"]),
            human_count(r["pfs_ops"]), human_bytes(r["pfs_bytes"]), str(r["depth"]),
            f"{r['time_s']:.3g}", dominant]


def print_table(rows, markdown):
    for wname in dict.fromkeys(r["workload"] for r in rows):
        sub = [cells(r) for r in rows if r["workload"] == wname]
        sub.sort(key=lambda c: (int(c[0]), PROTOCOLS.index(c[1])))
        print(f"\n{wname} ({rows[0]['ranks'] // rows[0]['nodes']} ranks per node)\n")
        if markdown:
            print("| " + " | ".join(COLUMNS) + " |")
            print("|" + "---|" * len(COLUMNS))
            for c in sub:
                print("| " + " | ".join(c) + " |")
            continue
        widths = [max(len(x) for x in col) for col in zip(COLUMNS, *sub)]
        for c in [COLUMNS] + sub:
            print("  ".join(x.rjust(wd) for x, wd in zip(c, widths)))


def plot(rows, out):
    if shutil.which("gnuplot") is None:
        sys.exit("--plot needs gnuplot")
    work = tempfile.mkdtemp(prefix="larder-scale-model-")
    try:
        panels = []
        for i, wname in enumerate(dict.fromkeys(r["workload"] for r in rows)):
            lines = []
            for p in PROTOCOLS:
                dat = os.path.join(work, f"{i}-{p}.dat")
                with open(dat, "w") as f:
                    for r in rows:
                        if r["workload"] == wname and r["protocol"] == p:
                            f.write(f"{r['nodes']} {r['time_s']}\n")
                label = "Copper-like" if p == "copper" else p
                lines.append(f"'{dat}' u 1:2 w lp lw 2 t '{label}'")
            panels.append(f"set title '{wname}: projected time (model)'; plot " + ", ".join(lines))
        script = (f"set terminal pngcairo size {600 * len(panels)},500; set output '{out}';"
                  f"set multiplot layout 1,{len(panels)}; set logscale xy; set grid;"
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

def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", default=",".join(map(str, NODE_COUNTS)))
    for name, default in [(f.name, f.default) for f in dataclasses.fields(Settings)]:
        ap.add_argument("--" + name.replace("_", "-"), type=int, default=default)
    for name, default in [(f.name, f.default) for f in dataclasses.fields(Costs)]:
        ap.add_argument("--" + name.replace("_", "-"), type=float, default=default,
                        help=f"default {default:g}")
    ap.add_argument("--json", help="write the rows as JSON to this file (- for stdout)")
    ap.add_argument("--markdown", action="store_true", help="tables in Markdown")
    ap.add_argument("--plot", help="projected time against nodes, log-log (gnuplot, png)")
    ap.add_argument("--check", action="store_true",
                    help="compare the counts with calibration.json and check the invariants")
    ap.add_argument("--calibration", default=os.path.join(HERE, "calibration.json"))
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    s = Settings(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Settings)})
    c = Costs(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Costs)})
    node_counts = [int(x) for x in args.nodes.split(",")]
    rows = project([torch_like(), hot_file(), torch_objects()], node_counts, s, c)
    if args.check:
        return 0 if run_check(args.calibration, rows, s, c) else 1
    if args.json:
        doc = {"settings": dataclasses.asdict(s), "costs": dataclasses.asdict(c), "rows": rows}
        text = json.dumps(doc, indent=1)
        if args.json == "-":
            print(text)
            return 0
        with open(args.json, "w") as f:
            f.write(text + "\n")
    print_table(rows, args.markdown)
    if args.plot:
        plot(rows, args.plot)
        print(f"\nplot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
