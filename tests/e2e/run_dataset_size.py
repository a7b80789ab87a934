"""e2e_dataset_size: a dataset of real size with every setting at its default (issue 27). A tree of
300,000 files of 1-2 KiB in 300 class directories (ImageFolder's shape, larder-treebench generate
--dataset) is read by a training job's epochs through the preload (larder-treebench read --share:
every rank lists every directory, then reads its share of the files in a shuffled order, two
epochs): 2 ranks of one node, then 4 ranks on 2 emulated nodes. The default directory shards hold
65,536 entries a rank, far fewer than the job's 600,000 keys (a path and a chunk per file), so the
directory grows into its overflow tables and the node tables into their levels. Asserted: the
job's bytes hash to a direct read's (every file, path and bytes); the PFS read each file once over
both epochs; no fallbacks; no lookup refused; on 2 nodes the overflow in use (the test would pass
by luck otherwise); on one node no directory operation (its node table is the job's)."""
import argparse
import json
import os
import subprocess

from e2e_util import Job, check, common_args, read_stats

FILES = 300_000


def main():
    ap = common_args(argparse.ArgumentParser())
    ap.add_argument("--treebench", required=True)
    ap.add_argument("--files", type=int, default=FILES)
    args = ap.parse_args()
    job = Job(args, "dataset")
    try:
        tree = os.path.join(job.data, "dataset")
        subprocess.run([args.treebench, "generate", tree, "--dataset", "--files", str(args.files)],
                       check=True, stdout=subprocess.DEVNULL)
        sizes = [os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tree) for f in fs]
        check(len(sizes) == args.files, f"{len(sizes)} files generated")

        # The direct read: one rank, without the preload.
        plain = os.path.join(job.root, "plain.json")
        job.mpiexec(1, [args.treebench, "read", tree, "--share", "--passes", "1", "--json", plain],
                    job.env(preload=False), timeout=600)
        want = json.load(open(plain))["hash"]

        for ranks, node_size in ((2, 0), (4, 2)):
            stats = os.path.join(job.root, f"stats-{ranks}.json")
            out = os.path.join(job.root, f"larder-{ranks}.json")
            env = job.env(stats=stats)
            # Every setting at its default but the scratch places: no sizes from the test.
            for key in ("LARDER_DISK", "LARDER_MEM", "LARDER_CHUNK"):
                env.pop(key, None)
            if node_size:
                env["LARDER_NODE_SIZE"] = str(node_size)
            job.mpiexec(ranks, [args.treebench, "read", tree, "--share", "--passes", "2", "--json",
                                out], env, timeout=900)
            got = json.load(open(out))
            nodes = ranks // node_size if node_size else 1
            what = f"{ranks} ranks on {nodes} node{'s' if nodes > 1 else ''}"
            print(f"{what}: listing {got['listing_seconds']:.1f} s, epochs "
                  f"{', '.join(f'{t:.1f} s' for t in got['slowest_seconds'])}")
            check(got["hash"] == want, f"{what}: the job read a direct read's bytes ({got['hash']})")
            s = read_stats(stats)
            check(s["pfs"]["read_ops"] == args.files and s["pfs"]["bytes_read"] == sum(sizes),
                  f"{what}: the PFS read once per file over two epochs: {s['pfs']['read_ops']} "
                  f"reads, {s['pfs']['bytes_read']} bytes of {sum(sizes)}")
            check(s["fallbacks"] == 0, f"{what}: no fallbacks ({s['fallbacks']})")
            d = s["directory"]
            check(d["refused"] == 0, f"{what}: no lookup refused ({d['refused']})")
            if nodes == 1:
                # One node: its table is the job's (architecture.md, "The read path"), so the
                # directory is not asked, and the node table grew into its levels instead.
                check(d["ops"] == 0, f"{what}: the node table answered every key ({d['ops']} "
                      "directory operations)")
            else:
                check(d["overflow_entries"] > 0,
                      f"{what}: the directory grew past its shards ({d['overflow_entries']} "
                      f"entries in overflow tables, {d['overflow_requests']} requests)")
        job.finish()
    finally:
        job.close()


if __name__ == "__main__":
    main()
