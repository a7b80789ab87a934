"""e2e_h5py_produce: an HDF5 file produced during the job and read by other ranks through the
VOL connector. In 4 ranks on 2 emulated nodes with LARDER_PRODUCE (local mode), rank 0 writes the
h5py zoo (its external file first) with h5py; ranks 1-3, one of them on rank 0's node and two on
the other, open it before it exists, wait for it, and digest every object through the
connector's cache driver. Checks: every digest equals the native digest of the same zoo written
and read without Larder; both files were published and nothing went to the PFS. Skipped (77)
when h5py was not built."""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from e2e_util import PYTHON, Job, check, common_args, read_stats  # noqa: E402
from h5py_support import h5py_env_or_skip  # noqa: E402

RANKS = 4


def main():
    parser = common_args(argparse.ArgumentParser())
    parser.add_argument("--h5py-dir", required=True)
    parser.add_argument("--plugin-dir", required=True)
    args = parser.parse_args()
    pythonpath = h5py_env_or_skip(args.h5py_dir, HERE)
    job = Job(args, "h5py-produce")
    try:
        ref_dir = os.path.join(job.root, "ref")
        os.makedirs(ref_dir)
        native_env = job.env(preload=False, extra={"PYTHONPATH": pythonpath})
        subprocess.run([PYTHON, "-c", "import sys, h5py_files as z; z.write_h5py_zoo(*sys.argv[1:]);"
                        "import json; print(json.dumps(z.digest(sys.argv[1])))",
                        os.path.join(ref_dir, "h5py_zoo.h5"), os.path.join(ref_dir, "h5py_ext.h5")],
                       env=native_env, check=True, timeout=120, stdout=open(
                           os.path.join(job.root, "native.json"), "w"))
        native = json.load(open(os.path.join(job.root, "native.json")))
        check(len(native) > 30, f"native digests of {len(native)} objects")

        out = os.path.join(job.data, "out")
        os.makedirs(out)
        stats = os.path.join(job.root, "stats.json")
        env = job.env(stats=stats, extra={
            "PYTHONPATH": pythonpath, "HDF5_PLUGIN_PATH": args.plugin_dir,
            "HDF5_VOL_CONNECTOR": "larder under_vol=0;under_info={}", "OMP_NUM_THREADS": "1",
            "LARDER_PRODUCE": out, "LARDER_PRODUCE_MODE": "local", "LARDER_NODE_SIZE": "2"})
        prefix = os.path.join(job.root, "result")
        proc = job.mpiexec(RANKS, [PYTHON, os.path.join(HERE, "py_h5py_produce.py"), out, prefix],
                           job.python_env(env), timeout=150)
        for r in range(1, RANKS):
            res = json.load(open(f"{prefix}.{r}"))
            bad = [obj for obj, text in native.items() if res["digest"].get(obj) != text]
            check(not bad and res["digest"].keys() == native.keys(),
                  f"rank {r}: every object of the produced file as native ({bad[:3]})")
            check(res["driver"] == "unknown",
                  f"rank {r}: read with the connector's cache driver ({res['driver']})")
        check("larder vol:" not in proc.stderr, "no message from the connector")
        s = read_stats(stats)
        print("produce:", s["produce"], "pfs:", s["pfs"], "transport:", s["transport"]["bytes"])
        check(s["produce"]["files"] == 2 and s["produce"]["pfs_bytes"] == 0 and not os.listdir(out),
              f"both files were produced on their node, none written to the PFS "
              f"({s['produce']['files']} files)")
        job.finish()
    finally:
        job.close()


if __name__ == "__main__":
    main()
