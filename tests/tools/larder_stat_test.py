#!/usr/bin/env python3
"""larder-stat on stats files written here: derived figures, missing keys, comparison, errors.

Usage: larder_stat_test.py LARDER_STAT_BINARY
"""
import json
import os
import subprocess
import sys
import tempfile

BIN = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def run(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=60)


JOB = {
    "ranks": 4,
    "app": {"bytes_read": 1610612736, "read_calls": 1920},
    "pfs": {"bytes_read": 134217728, "read_ops": 32, "stat_ops": 32, "list_ops": 3, "open_ops": 32},
    "hits": {"self": 352, "node": 1152, "remote": 0, "remote_copy": 0,
             "tier": {"mem": 1504, "disk": 0}},
    "misses": 32, "fallbacks": 0, "waits": 89,
    "meta": {"hits": 352, "misses": 32},
    "transport": {"bytes": 0, "gets": 0, "errors": 0, "chunk_copies": 0},
    "cache": {"bytes": 134217728, "chunks": 32},
    "latency": {"reads": 1920, "mean_ns": 733398, "p50_ns": 262144, "p99_ns": 16777216,
                "max_ns": 27356330,
                "histogram_log2_ns": [0] * 6 + [115, 249, 20] + [0] * 7 + [120, 616, 609]},
}

with tempfile.TemporaryDirectory() as d:
    job = os.path.join(d, "job.json")
    with open(job, "w") as f:
        json.dump(JOB, f)
    r = run(job)
    out = r.stdout
    check(r.returncode == 0, f"exit status {r.returncode}: {r.stderr}")
    check("job of 4 ranks" in out, "ranks line")
    check("application read  1.5 GiB in 1920 calls" in out, "application line")
    check("PFS served        128.0 MiB in 32 reads; 32 path lookups, 3 listings, 32 opens" in out,
          "PFS line")
    check("the application read 12.0x what the PFS served" in out, "amplification 1.5 GiB/128 MiB")
    check("chunk reads       1536" in out, "chunk reads = self + node + remote + copies + misses")
    check("own arena                         352 (22.9%)" in out, "own-arena share")
    check("a node peer's arena              1152 (75.0%)" in out, "node share")
    check("loaded from the PFS                32 (2.1%)" in out, "miss share")
    check("mean 733.4 us, p50 < 262.1 us, p99 < 16.8 ms, max 27.4 ms" in out, "latency line")
    check("earlier steps" not in out and "integrity" not in out,
          "no kept-store or integrity lines for a job without them")
    kept = dict(JOB, kept={"bytes_adopted": 67108864, "chunks_adopted": 16, "files_adopted": 2,
                           "bytes_kept": 1048576, "bytes_evicted": 0, "bytes_dropped_changed": 4096,
                           "bytes_dropped_unfinished": 0, "answers_adopted": 1200,
                           "answers_kept": 1300},
                integrity={"checked": 20, "bytes_hashed": 83886080, "ns": 5000000,
                           "mismatches": 1, "refetched": 1, "reloaded": 1,
                           "holders_marked": 1})
    kept_path = os.path.join(d, "kept.json")
    with open(kept_path, "w") as f:
        json.dump(kept, f)
    kout = run(kept_path).stdout
    check("earlier steps     64.0 MiB adopted (16 chunks, 2 kept files); 1.0 MiB kept for later "
          "steps;" in kout, f"kept line: {kout}")
    check("4.0 KiB dropped (file changed)" in kout, "kept line: dropped bytes")
    check("1200 stat answers and listings adopted, 1300 kept" in kout, "kept line: answers")
    check("integrity         20 checks, 80.0 MiB hashed in 5.0 ms; 1 mismatches, 1 read again "
          "(1 taken from the PFS once for a node), 1 holders marked bad" in kout, "integrity line")
    bars = [line for line in out.splitlines() if " .. " in line]
    check(len(bars) == 13, f"histogram rows from the first to the last non-empty bucket: {len(bars)}")
    check(any(line.endswith("#" * 40) for line in bars), "the peak bucket has the full bar")
    check(bars and bars[0].split()[0:2] == ["64", "ns"], "first row is bucket 6 (64 ns)")

    # A file without most keys: "-" where a figure is missing, no crash, no invented numbers.
    partial = os.path.join(d, "partial.json")
    with open(partial, "w") as f:
        json.dump({"ranks": 2, "pfs": {"bytes_read": 1024}}, f)
    r = run(partial)
    check(r.returncode == 0, f"partial: exit status {r.returncode}: {r.stderr}")
    check("application read  - in - calls" in r.stdout, "missing app keys print '-'")
    check("the application read" not in r.stdout, "no amplification without app bytes")
    check(" .. " not in r.stdout, "no histogram without one")

    # Two jobs: AFTER/BEFORE ratios.
    after = dict(JOB, pfs=dict(JOB["pfs"], bytes_read=JOB["pfs"]["bytes_read"] * 4, read_ops=128))
    after_path = os.path.join(d, "after.json")
    with open(after_path, "w") as f:
        json.dump(after, f)
    r = run(job, after_path)
    rows = {line.split()[0]: line.split() for line in r.stdout.splitlines()[1:] if line.strip()}
    check(r.returncode == 0, f"compare: exit status {r.returncode}")
    check(rows.get("pfs.read_ops", [])[-1:] == ["4.000"], f"read_ops ratio: {rows.get('pfs.read_ops')}")
    check(rows.get("pfs.bytes_read", [])[-1:] == ["4.000"], "bytes ratio")
    check(rows.get("hits.remote", [])[-1:] == ["-"], "no ratio against 0")

    # Errors: one message, status 2.
    for args, message in (([os.path.join(d, "missing.json")], "cannot read"),
                          ([], "give one stats file"),
                          ([job, job, job], "give one stats file")):
        r = run(*args)
        check(r.returncode == 2 and message in r.stderr, f"{args}: {r.returncode} {r.stderr!r}")
    notjson = os.path.join(d, "bad.json")
    with open(notjson, "w") as f:
        f.write("{ not json")
    r = run(notjson)
    check(r.returncode == 2 and "is not a Larder stats JSON object" in r.stderr, "bad JSON")

if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("larder-stat: all checks passed")
