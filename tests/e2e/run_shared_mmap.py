"""e2e_shared_mmap: 4 ranks of one emulated node map the same managed files (shared_mmap.c): a
256 MiB file MAP_SHARED, read-only, then MAP_PRIVATE and written, and a 1 MiB file with a 1 TiB
mapping (LMDB's map_size); and a forked worker of each rank maps the big file. Under the
preload every mapping maps the node's one copy of the file (a node file), so: the bytes equal
the plain run's, each process's anonymous memory stays under 32 MiB (a private copy would be
256 MiB per process), workers' too, a private write is seen only by its writer, the 1 TiB
mapping works, and the node made one node file per file from one PFS read of each byte."""
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
        job.mpiexec(RANKS, [args.exe, ref, big, small], job.env(preload=False), timeout=120)
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
        anon = [int(g["memory"]["anonymous_kb"]) for g in got]
        check(all(0 <= a < 32 << 10 for a in anon),
              f"anonymous memory per process under 32 MiB while every rank maps 256 MiB ({anon} kB)")
        pss = sum(int(g["memory"]["pss_kb"]) for g in got)
        plain_pss = sum(int(p["memory"]["pss_kb"]) for p in plain)
        print(f"node total (PSS of the {RANKS} ranks): plain {plain_pss >> 10} MiB, "
              f"larder {pss >> 10} MiB")
        check(all(g["private"] == {"written": "1", "unseen_elsewhere": "1"} for g in got),
              "a MAP_PRIVATE write is seen by its writer only")
        check(all(g["long"] == plain[0]["long"] for g in got),
              "a 1 TiB mapping of a 1 MiB file maps, with the file's bytes")
        worker = [g["worker"] for g in got]
        check(all(w.get("hash") == plain[0]["whole"]["hash"] for w in worker),
              "a forked worker's mapping has the file's bytes")
        check(all(int(w["anonymous_kb"]) < 32 << 10 for w in worker),
              f"a worker maps the node file too ({[w['anonymous_kb'] for w in worker]} kB anonymous)")
        s = read_stats(stats)
        check(s["node"]["files"] == 2 and s["node"]["file_bytes"] == BIG + SMALL,
              f"one node file per file on the node ({s['node']['files']}, "
              f"{s['node']['file_bytes']} bytes)")
        check(s["pfs"]["bytes_read"] == BIG + SMALL,
              f"the PFS was read once ({s['pfs']['bytes_read']} bytes)")
        job.finish()
    finally:
        job.close()


if __name__ == "__main__":
    main()
