"""e2e_h5py_zoo_np{2,4}: h5py (3.10.0, built by scripts/setup.sh on Larder's HDF5) reads the
file zoo of tests/hdf5 (larder_make_test_files: zoo.h5 with its external file, a DLIO-style
file) and a zoo written by h5py itself (h5py_files.py: its own lzf filter, fletcher32,
scale-offset, region references, resizable and ordered...) through the VOL connector, in a job of
N ranks under the preload library: every rank's digest of every object, twice, equals the
native one; the files were opened with the connector's cache driver; the PFS served each byte of
the files once for the job. Skipped (77) when h5py was not built."""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from e2e_util import PYTHON, Job, check, common_args, read_stats  # noqa: E402
from h5py_support import h5py_env_or_skip  # noqa: E402


def main():
    parser = common_args(argparse.ArgumentParser())
    parser.add_argument("--np", type=int, required=True)
    parser.add_argument("--h5py-dir", required=True)
    parser.add_argument("--plugin-dir", required=True)
    parser.add_argument("--make-files", required=True)
    args = parser.parse_args()
    pythonpath = h5py_env_or_skip(args.h5py_dir, HERE)
    job = Job(args, f"h5py-zoo-{args.np}")
    try:
        subprocess.run([args.make_files, job.data], check=True, timeout=60)
        native_env = job.env(preload=False, extra={"PYTHONPATH": pythonpath})
        subprocess.run([PYTHON, "-c", "import sys, h5py_files as z; z.write_h5py_zoo(*sys.argv[1:])",
                        os.path.join(job.data, "h5py_zoo.h5"),
                        os.path.join(job.data, "h5py_ext.h5")],
                       env=native_env, check=True, timeout=120)
        files = [os.path.join(job.data, n) for n in ("zoo.h5", "dlio.h5", "h5py_zoo.h5")]
        total = sum(os.path.getsize(os.path.join(job.data, n)) for n in os.listdir(job.data))
        script = os.path.join(HERE, "py_h5py_zoo.py")
        ref = os.path.join(job.root, "ref.json")
        subprocess.run([PYTHON, script, ref, *files], env=native_env, check=True, timeout=120)
        native = json.load(open(ref))
        check(native["driver"] == "sec2" and len(native["epochs"][0]["zoo.h5"]) > 30,
              f"native digests of {sum(len(d) for d in native['epochs'][0].values())} objects")

        stats = os.path.join(job.root, "stats.json")
        env = job.env(stats=stats, extra={
            "PYTHONPATH": pythonpath, "HDF5_PLUGIN_PATH": args.plugin_dir,
            "HDF5_VOL_CONNECTOR": "larder under_vol=0;under_info={}", "OMP_NUM_THREADS": "1"})
        out = os.path.join(job.root, "out")
        proc = job.mpiexec(args.np, [PYTHON, script, out, *files], env, timeout=150)
        results = [json.load(open(f"{out}.{r}")) for r in range(args.np)]
        for r, res in enumerate(results):
            for e, epoch in enumerate(res["epochs"]):
                bad = [f"{name}:{obj}" for name, objs in native["epochs"][0].items()
                       for obj, text in objs.items() if epoch[name].get(obj) != text]
                check(not bad and epoch.keys() == native["epochs"][0].keys(),
                      f"rank {r}, pass {e + 1}: every object as native ({bad[:3]})")
            check(res["driver"] == "unknown",
                  f"rank {r}: files opened with the connector's cache driver ({res['driver']})")
        check("larder vol:" not in proc.stderr, "no message from the connector")
        s = read_stats(stats)
        check(s["ranks"] == args.np and s["pfs"]["bytes_read"] == total and s["fallbacks"] == 0,
              f"{args.np} ranks x 2 passes: the PFS read each byte once "
              f"({s['pfs']['bytes_read']} of {total} B; the application read "
              f"{s['app']['bytes_read']} B)")
        job.finish()
    finally:
        job.close()


if __name__ == "__main__":
    main()
