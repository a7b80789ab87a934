#!/usr/bin/env python3
"""larder-stage: a tree copied to every (emulated) node, identical to the source, read once.

Usage: larder_stage_test.py LARDER_STAGE MPIEXEC [MPIEXEC_FLAGS...]
Runs 4 ranks as 2 nodes of 2 (LARDER_NODE_SIZE=2), destination DIR/{node}: both copies must
equal the source (bytes, modes, modification times, symlinks as links), and the job's stats
must show the PFS served each byte once. Then a missing source: reported, exit status 1, the
rest still copied.
"""
import json
import os
import stat
import subprocess
import sys
import tempfile

STAGE, MPIEXEC, FLAGS = sys.argv[1], sys.argv[2], sys.argv[3:]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def write(path, data, mode=0o644):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def snapshot(root):
    """Every entry under root: kind, mode, mtime (ns), and bytes or link target."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            rel = os.path.relpath(p, root)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode), st.st_mtime_ns)
            else:
                with open(p, "rb") as f:
                    out[rel] = ("file", stat.S_IMODE(st.st_mode), st.st_mtime_ns, f.read())
    return out


def stage(d, sources, to):
    env = dict(os.environ, LARDER_NODE_SIZE="2", LARDER_CHUNK="64K", LARDER_MEM="256M",
               LARDER_LOG="warn", LARDER_SHM_DIR=os.path.join(d, "shm"),
               LARDER_STATS=os.path.join(d, "stats.json"))
    os.makedirs(env["LARDER_SHM_DIR"], exist_ok=True)
    cmd = [MPIEXEC, "-n", "4", *FLAGS, STAGE, "--to", to, *sources]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    with open(env["LARDER_STATS"]) as f:
        return r, json.load(f)


with tempfile.TemporaryDirectory(prefix="larder-stage-test-") as d:
    src = os.path.join(d, "pfs", "tree")
    os.makedirs(os.path.join(src, "sub", "deep"))
    sizes = {"big": 3 * 65536 * 5 + 17, "one": 1, "empty": 0, "sub/mid": 65536,
             "sub/deep/x": 65535}
    for i, (name, size) in enumerate(sorted(sizes.items())):
        write(os.path.join(src, name), os.urandom(size))
    write(os.path.join(src, "sub", "run.sh"), b"#!/bin/sh\necho hi\n", 0o755)
    sizes["sub/run.sh"] = 18
    os.symlink("big", os.path.join(src, "link_to_big"))
    os.symlink("/nowhere/at/all", os.path.join(src, "dangling"))
    os.chmod(os.path.join(src, "sub"), 0o750)
    os.utime(os.path.join(src, "one"), ns=(1_000_000_123, 1_500_000_456))

    out = os.path.join(d, "local")
    r, stats = stage(d, [src], os.path.join(out, "{node}"))
    check(r.returncode == 0, f"exit status {r.returncode}")
    want = snapshot(src)
    for node in ("0", "1"):
        got = snapshot(os.path.join(out, node, "tree"))
        check(got == want, f"node {node}: copy differs: "
              f"{sorted(set(want.items()) ^ set(got.items()), key=str)[:4]}")
    total = sum(sizes.values())
    check(stats["pfs"]["bytes_read"] == total,
          f"PFS bytes {stats['pfs']['bytes_read']} != tree bytes {total} (each byte once)")
    check(stats["fallbacks"] == 0, "no reads around the cache")
    check(stats["hits"]["remote"] > 0, "the second node's copy came over the transport")
    check("2 node(s)" in r.stdout and "0 problem(s)" in r.stdout, "summary line")

    # A missing source among good ones: reported, status 1, the good one still copied.
    out2 = os.path.join(d, "local2")
    r, _ = stage(d, [os.path.join(d, "pfs", "missing"), os.path.join(src, "sub")],
                 os.path.join(out2, "{node}"))
    check(r.returncode == 1, f"missing source: exit status {r.returncode}")
    check("missing: No such file or directory" in r.stderr, "missing source reported")
    check(snapshot(os.path.join(out2, "0", "sub")) == snapshot(os.path.join(src, "sub")),
          "the other source was copied")

    # Usage errors stop before any work, with status 2.
    r = subprocess.run([MPIEXEC, "-n", "1", *FLAGS, STAGE, "--to", d], capture_output=True,
                       text=True, timeout=120)
    check(r.returncode == 2 and "at least one PATH" in r.stderr, f"usage: {r.returncode}")

if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("larder-stage: all checks passed")
