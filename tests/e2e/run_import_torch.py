"""e2e_import_torch: `import torch` of a real environment tree (scripts/build-env-tree.py: the
machine's torch and numpy, their shared-library closure) in 4 ranks on 2 emulated nodes, with
the preload and the loader's audit module, as the README launches it; and without Larder.

Checks: the tensor result equals the plain run's; the PFS bytes Larder read are at most 1.05 x the
bytes of the tree's files the import used (once per job, not once per rank or node); every
shared object loaded after Larder started came from a node file, one per object per node. Then
the allocation's next job step (LARDER_KEEP): the same, with what step 1 cached read from its
store (at most 1 % of step 1's PFS bytes from the PFS: files a process read before Larder was up
in step 1 are not kept)."""
import argparse
import os
import subprocess

from e2e_util import PYTHON, Job, check, common_args, read_stats

RANKS = 4
NODE_SIZE = 2
HERE = os.path.dirname(os.path.abspath(__file__))
BUILDER = os.path.join(HERE, "..", "..", "scripts", "build-env-tree.py")


def main():
    parser = common_args(argparse.ArgumentParser())
    parser.add_argument("--audit", required=True)
    args = parser.parse_args()
    job = Job(args, "import-torch")
    try:
        tree = os.path.join(job.data, "env")
        subprocess.run([PYTHON, BUILDER, tree], check=True, timeout=600)
        paths = {"PYTHONPATH": os.path.join(tree, "site"),
                 "LD_LIBRARY_PATH": f"{tree}/lib:{tree}/site/torch/lib",
                 "PYTHONDONTWRITEBYTECODE": "1", "LPL_TREE": tree}
        program = os.path.join(HERE, "py_import_torch.py")

        def run(tag, env):
            prefix = os.path.join(job.root, tag)
            job.mpiexec(RANKS, [PYTHON, program, prefix], env, timeout=600)
            out = []
            for r in range(RANKS):
                with open(f"{prefix}.{r}") as f:
                    out.append(__import__("json").load(f))
            return out

        plain = run("plain", job.env(preload=False, extra=paths))
        opened = {}
        for p in plain:
            opened.update(p["opened"])
        opened_bytes = sum(opened.values())
        print(f"plain: import torch opened {len(opened)} files of the tree, "
              f"{opened_bytes / 1e6:.1f} MB; slowest rank {max(p['seconds'] for p in plain):.2f} s")

        stats = os.path.join(job.root, "stats.json")
        env = job.env(stats=stats, extra=dict(paths, LD_AUDIT=args.audit,
                                              LARDER_NODE_SIZE=str(NODE_SIZE), LARDER_MEM="4G",
                                              LARDER_CHUNK="4M", LARDER_KEEP="torch"))
        got = run("larder", env)
        print(f"larder: slowest rank {max(g['seconds'] for g in got):.2f} s")
        check(all(g["r"] == plain[0]["r"] for g in got), "every rank computes the plain result")
        s = read_stats(stats)
        print("loader:", s["loader"], "node files:", s["node"]["files"], "pfs:", s["pfs"])
        ratio = s["pfs"]["bytes_read"] / opened_bytes
        check(ratio <= 1.05,
              f"PFS bytes read by Larder {s['pfs']['bytes_read'] / 1e6:.1f} MB = {ratio:.3f} x the "
              f"bytes the import used (at most 1.05 x, once per job)")
        served = s["loader"]["objects"]
        check(served > 0 and served % RANKS == 0 and s["loader"]["original"] == 0,
              f"every object loaded after Larder started came from a node file ({served})")
        nodes = RANKS // NODE_SIZE
        check(s["node"]["files"] == nodes * served // RANKS,
              f"one node file per object per node ({s['node']['files']} for {served // RANKS} "
              f"objects on {nodes} nodes)")
        check(all(g["mapped_from_node_files"] >= served // RANKS for g in got),
              "every rank maps the node files")
        dup = s["node"]["file_dup_bytes"]
        check(dup <= 0.01 * s["node"]["file_bytes"],
              f"the node files hold the objects' chunks themselves ({dup} of "
              f"{s['node']['file_bytes']} bytes were copied from an arena)")
        # The next job step of the allocation (LARDER_KEEP): every object from a node file made
        # from what the first step kept, nothing read from the PFS. Not under the sanitizers
        # (e2e_kept runs the kept stores' paths there), for the suite's time.
        if args.asan_lib:
            job.check_clean_except_kept()
            check(True, "no processes or job files left (the next step is not run under ASan)")
            return
        stats2 = os.path.join(job.root, "stats2.json")
        env2 = dict(env, LARDER_STATS=stats2)
        got = run("larder-step2", env2)
        print(f"larder, next step: slowest rank {max(g['seconds'] for g in got):.2f} s")
        check(all(g["r"] == plain[0]["r"] for g in got), "step 2: every rank computes the result")
        s2 = read_stats(stats2)
        print("step 2 loader:", s2["loader"], "pfs:", s2["pfs"], "kept:", s2["kept"],
              "integrity:", s2["integrity"])
        check(s2["loader"]["objects"] == served and s2["loader"]["original"] == 0,
              f"step 2: every object from a node file ({s2['loader']['objects']})")
        # What step 1 cached is read from its store: at most what step 1 read before Larder was
        # up in a process (read plain, so not kept), which depends on the machine's load: 0 B
        # on a quiet machine, once 7,839 B (one .py file) in a full-suite run. A store that is
        # not used costs the whole import (about 490 MB).
        check(s2["pfs"]["bytes_read"] <= s["pfs"]["bytes_read"] // 100,
              f"step 2 read at most 1 % of step 1's PFS bytes ({s2['pfs']['bytes_read']} B of "
              f"{s['pfs']['bytes_read']} B); {s2['kept']['bytes_adopted'] / 1e6:.1f} MB from the "
              "first step's store")
        check(s2["integrity"]["mismatches"] == 0, "every kept chunk matched its hash")
        job.check_clean_except_kept()
        check(True, "no processes or job files left")
    finally:
        job.close()


if __name__ == "__main__":
    main()
