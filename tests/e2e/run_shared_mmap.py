"""e2e_shared_mmap: 4 ranks of one emulated node map the same managed files (shared_mmap.c): a
256 MiB file MAP_SHARED, read-only, then MAP_PRIVATE and written, and a 1 MiB file with a 1 TiB
mapping (LMDB's map_size); and a forked worker of each rank maps the big file. Under the
preload every mapping maps the node's one copy of the file (a node file), so: the bytes equal
the plain run's, each process's anonymous memory stays within 32 MiB of the plain run's (48 under ASan; a
private copy would add 256 MiB per process), workers' too, a private write is seen only by its
writer, the 1 TiB mapping works, and the node made one node file per file from one PFS read of
each byte."""
import argparse
import os

from e2e_util import Job, check, common_args, read_stats

BIG = 256 << 20
SMALL = 1 << 20
RANKS = 4


def write_random(path, size):
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 8 << 20)
            f.write(os.urandom(n))
            left -= n


def parse(path):
    fields = {}
    for line in open(path).read().splitlines():
        phase, *rest = line.split()
        fields[phase] = dict(kv.split("=", 1) for kv in rest)
    return fields


def main():
    parser = common_args(argparse.ArgumentParser())
    parser.add_argument("--exe", required=True)
    args = parser.parse_args()
    job = Job(args, "shared-mmap")
    try:
        big = os.path.join(job.data, "big.bin")
        small = os.path.join(job.data, "small.bin")
        write_random(big, BIG)
        write_random(small, SMALL)

        ref = os.path.join(job.root, "ref")
        # The reference run is the plain program: under the asan preset, MPICH's allocations at
        # init, whose library is unloaded before the leak check (no module to suppress by), are
        # not Larder's; the run with the preload below keeps the leak check.
        plain_env = job.env(preload=False)
        plain_env["ASAN_OPTIONS"] = plain_env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
        job.mpiexec(RANKS, [args.exe, ref, big, small], plain_env, timeout=120)
        plain = [parse(f"{ref}.{r}") for r in range(RANKS)]

        stats = os.path.join(job.root, "stats.json")
        env = job.env(stats=stats, extra={"LARDER_NODE_SIZE": str(RANKS), "LARDER_MEM": "4G",
                                          "LARDER_CHUNK": "4M"})
        out = os.path.join(job.root, "out")
        job.mpiexec(RANKS, [args.exe, out, big, small], env, timeout=300)
        got = [parse(f"{out}.{r}") for r in range(RANKS)]

        for r in range(RANKS):
            print(f"rank {r}: plain {plain[r]['memory']}, larder {got[r]['memory']}")
        check(all(g["whole"] == plain[0]["whole"] for g in got),
              "every rank's MAP_SHARED mapping has the bytes of the plain run")
        # Over the plain run's (the sanitizers' own memory differs between builds): a private
        # copy of the file would add 256 MiB.
        # Under ASan the instrumented runtime's own allocations and shadow add about 30 MiB per
        # process to Larder's run (measured: 29-34 MiB), so the bound there is 48 MiB: still far
        # below the 256 MiB a private copy would add.
        bound_mib = 48 if args.asan_lib else 32
        base = max(int(p["memory"]["anonymous_kb"]) for p in plain)
        anon = [int(g["memory"]["anonymous_kb"]) - base for g in got]
        check(all(a < bound_mib << 10 for a in anon),
              f"anonymous memory per process within {bound_mib} MiB of the plain run's while every "
              f"rank maps 256 MiB ({anon} kB more)")
        pss = sum(int(g["memory"]["pss_kb"]) for g in got)
        plain_pss = sum(int(p["memory"]["pss_kb"]) for p in plain)
        print(f"node total (PSS of the {RANKS} ranks): plain {plain_pss >> 10} MiB, "
              f"larder {pss >> 10} MiB")
        # The node's memory for the file: the PSS of every mapping of the file (plain) or of
        # Larder's files (arenas, segments, node files), summed over the node's ranks.
        file_kb = sum(int(g["memory"]["file_kb"]) for g in got)
        plain_file_kb = sum(int(p["memory"]["file_kb"]) for p in plain)
        print(f"node memory for the file: plain {plain_file_kb >> 10} MiB, "
              f"larder {file_kb >> 10} MiB (its node file, arenas and segments)")
        check(file_kb <= 1.1 * plain_file_kb and plain_file_kb >= (BIG >> 10) * 0.99,
              f"the node holds the file about once ({file_kb >> 10} MiB for "
              f"{BIG >> 20} MiB, plain {plain_file_kb >> 10} MiB)")
        check(all(g["private"] == {"written": "1", "unseen_elsewhere": "1"} for g in got),
              "a MAP_PRIVATE write is seen by its writer only")
        check(all(g["long"] == plain[0]["long"] for g in got),
              "a 1 TiB mapping of a 1 MiB file maps, with the file's bytes")
        worker = [g["worker"] for g in got]
        check(all(w.get("hash") == plain[0]["whole"]["hash"] for w in worker),
              "a forked worker's mapping has the file's bytes")
        extra = [int(w["anonymous_kb"]) - base for w in worker]
        check(all(a < bound_mib << 10 for a in extra),
              f"a worker maps the node file too ({extra} kB more anonymous than plain)")
        s = read_stats(stats)
        check(s["node"]["files"] == 2 and s["node"]["file_bytes"] == BIG + SMALL,
              f"one node file per file on the node ({s['node']['files']}, "
              f"{s['node']['file_bytes']} bytes)")
        check(s["pfs"]["bytes_read"] == BIG + SMALL,
              f"the PFS was read once ({s['pfs']['bytes_read']} bytes)")
        check(s["node"]["file_dup_bytes"] <= 2 * (4 << 20),
              f"the node files hold the chunks themselves (at most the chunks read before the "
              f"file was mapped are held twice: {s['node']['file_dup_bytes']} bytes)")
        job.finish()
    finally:
        job.close()


if __name__ == "__main__":
    main()
