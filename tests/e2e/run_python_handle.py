"""e2e_python_handle: `import larder` in a 2-rank job under the preload library
(py_larder_handle.py): the role is 'rank', the stats dict counts exactly the bytes each rank read
through the cache (app.bytes_read, app.read_calls), stage() loads a tree and reports it, the
job's stats are every rank's summed with each byte read from the PFS once, the summary lines
name 1 and 2 ranks; in fork and spawn workers the role is 'worker' and stats() raises
NOT_INITIALIZED. Without the preload, `import larder` loads liblarder.so from the build tree and
says 'off'."""
import argparse
import hashlib
import json
import os
import subprocess

from e2e_util import PYTHON, Job, check, common_args

HERE = os.path.dirname(os.path.abspath(__file__))


def make_data(root):
    sizes = {}
    for i in range(5):
        blob = os.urandom(150_000 + 37_000 * i)
        sizes[f"part_{i}.bin"] = blob
    sizes["shared.bin"] = os.urandom(333_333)
    os.makedirs(os.path.join(root, "tree", "sub"))
    for name, n in (("tree/a.bin", 100_000), ("tree/sub/b.bin", 250_001), ("tree/c.bin", 7)):
        sizes[name] = os.urandom(n)
    for name, blob in sizes.items():
        with open(os.path.join(root, name), "wb") as f:
            f.write(blob)
    return sizes


def main():
    parser = common_args(argparse.ArgumentParser())
    parser.add_argument("--pythonpath", required=True)
    args = parser.parse_args()
    job = Job(args, "pyhandle")
    try:
        files = make_data(job.data)
        total = sum(len(b) for b in files.values())
        tree = {n: b for n, b in files.items() if n.startswith("tree/")}
        stats = os.path.join(job.root, "stats.json")
        out = os.path.join(job.root, "out")
        env = job.env(stats=stats, extra={"PYTHONPATH": args.pythonpath, "OMP_NUM_THREADS": "1"})
        job.mpiexec(2, [PYTHON, os.path.join(HERE, "py_larder_handle.py"), job.data, out], env,
                    timeout=120)
        results = [json.load(open(f"{out}.{r}")) for r in range(2)]
        for r, res in enumerate(results):
            check(res["role"] == "rank" and res["active"], f"rank {r}: role 'rank'")
            check("this process" in res["library"], f"rank {r}: the C API of the preload is used")
            check(res["managed"] and not res["unmanaged"], f"rank {r}: is_managed")
            check(all(hashlib.sha256(files[n]).hexdigest() == d for n, d in res["digests"].items()),
                  f"rank {r}: every byte read through the cache is right")
            check(res["app_bytes"] == res["read_bytes"] and res["app_calls"] == res["read_calls"],
                  f"rank {r}: stats() counts what it read: {res['app_bytes']} B in "
                  f"{res['app_calls']} calls (read {res['read_bytes']} B in {res['read_calls']})")
            check(res["rank_stats_ranks"] == 1, f"rank {r}: stats() is this rank's")
            check(res["stage"] == {"files": len(tree), "bytes": sum(len(b) for b in tree.values()),
                                   "chunks": res["stage"]["chunks"], "not_cached": 0,
                                   "skipped": 0} and res["stage"]["chunks"] >= len(tree),
                  f"rank {r}: stage() of a tree: {res['stage']}")
            job_stats = res["job"]
            check(job_stats["ranks"] == 2 and job_stats["pfs"]["bytes_read"] == total,
                  f"rank {r}: stats(job=True): 2 ranks, the PFS read each byte once "
                  f"({job_stats['pfs']['bytes_read']} of {total} B)")
            check(res["summary_rank"].startswith("larder: 1 ranks, pfs read") and
                  res["summary_job"].startswith("larder: 2 ranks, pfs read"),
                  f"rank {r}: summary lines: {res['summary_job']}")
            for context, w in res["workers"].items():
                check(w["role"] == "worker" and w["active"] and
                      w["stats_error"] == "LARDER_ERR_NOT_INITIALIZED" and
                      w["read"] == len(files["shared.bin"]),
                      f"rank {r}: a {context} worker: role 'worker', stats() raises "
                      "NOT_INITIALIZED, its read is right")
        check(results[0]["job"] == results[1]["job"], "the job's stats are the same on every rank")
        app_total = sum(r["read_bytes"] for r in results)
        final = json.load(open(stats))
        check(final["pfs"]["bytes_read"] == total and final["app"]["bytes_read"] >= app_total,
              "LARDER_STATS at the end agrees")

        plain_env = job.env(preload=False, extra={"PYTHONPATH": args.pythonpath})
        if args.asan_lib:  # an instrumented liblarder.so needs the ASan runtime loaded first
            plain_env.update(LD_PRELOAD=args.asan_lib, ASAN_OPTIONS="detect_leaks=0")
        plain = subprocess.run(
            [PYTHON, "-c", "import larder; print(larder.role(), larder.active(), larder.library)"],
            env=plain_env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        check(plain.returncode == 0 and plain.stdout.startswith("off False ") and
              "liblarder.so" in plain.stdout,
              f"without the preload: liblarder.so loaded, role 'off' ({plain.stdout.strip()}"
              f"{plain.stderr.strip()})")
        job.finish()
    finally:
        job.close()


if __name__ == "__main__":
    main()
