#!/usr/bin/env python3
"""larder-readbench verify: the cost-of-checking benchmark runs and reports what it measured.

Usage: larder_readbench_test.py LARDER_READBENCH MPIEXEC [MPIEXEC_FLAGS...]
Runs `verify` on 2 ranks, small, with each way of waiting (spin, sleep) and each transport
(ucx, mpi). The JSON must hold, per size, the pairs asked for, a median ratio inside its 95 %
interval, CPU time of the reader and of the serving rank's threads, and the hash rates. Figures
are not judged (timing is docs/benchmarks.md's business), only that each was measured. Bad
options stop with a message that names them.
"""
import json
import os
import subprocess
import sys
import tempfile

BENCH, MPIEXEC, FLAGS = sys.argv[1], sys.argv[2], sys.argv[3:]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def run(args, work):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("LARDER_") and k != "LARDER_UCX_TLS":
            del env[k]
    return subprocess.run([MPIEXEC, *FLAGS, "-n", "2", BENCH, *args, "--dir", work],
                          env=env, capture_output=True, text=True, timeout=600)


with tempfile.TemporaryDirectory(prefix="larder-readbench-test-") as work:
    for transport in ("ucx", "mpi"):
        for waiting in ("spin", "sleep"):
            what = f"{transport}/{waiting}"
            out = os.path.join(work, f"{transport}-{waiting}.json")
            p = run(["verify", "--sizes", "1M", "--bytes", "4M", "--repeat", "2",
                     "--transport", transport, "--waiting", waiting, "--json", out], work)
            check(p.returncode == 0, f"{what}: exit {p.returncode}: {p.stderr[-2000:]}")
            if p.returncode != 0:
                continue
            check("95 % interval of the median" in p.stdout, f"{what}: no interval line")
            check("cores busy" in p.stdout, f"{what}: no CPU line")
            with open(out) as f:
                doc = json.load(f)
            check(doc["waiting"] == waiting, f"{what}: json waiting {doc['waiting']}")
            check(doc["transport"] == transport, f"{what}: json transport {doc['transport']}")
            check([r["size"] for r in doc["results"]] == [1 << 20],
                  f"{what}: sizes {[r['size'] for r in doc['results']]}")
            for r in doc["results"]:
                size = r["size"]
                check(len(r["pairs"]) == 2, f"{what} {size}: {len(r['pairs'])} pairs")
                lo, hi = r["median_ratio_interval"]
                check(0 < lo <= r["median_ratio"] <= hi, f"{what} {size}: median "
                      f"{r['median_ratio']} outside its interval {lo}-{hi}")
                check(r["xxh3"]["GBps"] > 0 and r["xxh3_cached"]["GBps"] > 0,
                      f"{what} {size}: hash rates {r['xxh3']} {r['xxh3_cached']}")
                for pair in r["pairs"]:
                    for key in ("remote_verify_off", "remote_verify_on"):
                        s = pair[key]
                        check(s["bytes"] >= 4 << 20, f"{what} {size} {key}: {s['bytes']} bytes")
                        check(s["reader_cpu_s"] > 0, f"{what} {size} {key}: no reader CPU")
                        # The serving rank's Larder threads do work for every remote read:
                        # with UCX its progress thread sends; with MPI the target's MPI may
                        # answer in its main thread, so only UCX is held to it.
                        if transport == "ucx":
                            check(s["serving_cpu_s"] > 0, f"{what} {size} {key}: no serving CPU")
                check(r["cores_busy_off"] > 0 and r["cores_busy_on"] > 0,
                      f"{what} {size}: cores busy {r['cores_busy_off']} {r['cores_busy_on']}")
    for bad, name in ((["--waiting", "nap"], "--waiting"), (["--transport", "tcp"], "--transport")):
        p = run(["verify", *bad], work)
        check(p.returncode != 0, f"{bad}: exit 0")
        check(name in p.stderr and "must be" in p.stderr, f"{bad}: message {p.stderr[-500:]!r}")

if failures:
    print("FAILED:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("larder-readbench verify: ok (ucx and mpi, spin and sleep; bad options refused)")
