"""e2e_slurm: Larder under a real one-host Slurm cluster (slurm_cluster.py: munged, slurmctld,
slurmd with their own configuration and key in a temporary directory, stopped by PID afterwards):
  (a) a job step, `srun --mpi=<plugin> -n 2` of a Python reader with the preload library: the
      bytes equal a direct read, the two tasks are one Larder job (2 ranks), and the PFS served
      each byte once;
  (b) the sbatch script of docs/user-guide.md ("Running under Slurm"), taken from the page and run
      unchanged: PyTorch with torch.distributed (env://, MASTER_ADDR from the node list, rank
      from SLURM_PROCID), DataLoader workers, two epochs: every batch equals a run without Slurm
      and Larder, the PFS read each byte once.
The plugin is the one Larder's build needs: pmi2 for MPICH, pmix for Open MPI. Afterwards no
daemon, task, Larder file, munge key or Slurm state is left. Skipped (77) unless root with
Slurm and munge installed (scripts/setup.sh installs them)."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from e2e_util import PYTHON, Job, check, common_args, fail, read_stats  # noqa: E402
from slurm_cluster import OneHostCluster, missing_binaries, processes_using  # noqa: E402

MARKER = "<!-- tests/slurm/run_slurm.py runs this script unchanged (test e2e_slurm) -->"
PLUGIN = {"mpich": "pmi2", "openmpi": "pmix"}


def sbatch_script(user_guide):
    """The fenced block that follows MARKER in the user guide, as it is."""
    text = open(user_guide).read()
    if MARKER not in text:
        fail(f"{user_guide} has no sbatch script marked for the test")
    block = re.search(r"```bash\n(.*?)```", text[text.index(MARKER):], re.S)
    if not block:
        fail("no ```bash block after the marker")
    return block.group(1)


def make_data(root):
    rng = np.random.default_rng(23)
    for i in range(16):
        np.savez(os.path.join(root, f"sample_{i:02d}.npz"),
                 x=rng.standard_normal((40, 64)).astype(np.float32), y=np.array([i % 7]))
    with open(os.path.join(root, "labels.bin"), "wb") as f:
        f.write(rng.integers(0, 256, 200_000, dtype=np.uint8).tobytes())


def direct_digests(root):
    import hashlib
    out = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            out[os.path.relpath(path, root)] = hashlib.sha256(open(path, "rb").read()).hexdigest()
    return out


def run(argv, env, timeout, cluster, what):
    proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        print(cluster.log_tail(), flush=True)
        fail(f"{what} exited with {proc.returncode}")
    return proc


def main():
    parser = common_args(argparse.ArgumentParser())
    parser.add_argument("--larder-home", required=True,
                        help="a directory with lib/liblarder_preload.so (a build or a prefix)")
    parser.add_argument("--user-guide", required=True)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("SKIP: slurmd must run as root to start tasks", flush=True)
        sys.exit(77)
    if missing_binaries():
        print(f"SKIP: not installed: {missing_binaries()} (scripts/setup.sh installs slurm-wlm "
              "and munge)", flush=True)
        sys.exit(77)
    plugin = PLUGIN[args.mpi]
    job = Job(args, "slurm")
    cluster = None
    try:
        make_data(job.data)
        expected = direct_digests(job.data)
        total = sum(os.path.getsize(os.path.join(job.data, n)) for n in expected)
        with OneHostCluster() as cluster:
            check(True, f"a one-host Slurm cluster runs in {cluster.root}")
            base = job.env(preload=False, extra={"OMP_NUM_THREADS": "1",
                                                 "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"})
            larder = {k: v for k, v in job.env().items() if k.startswith("LARDER_")}

            # (a) a job step of a Python reader
            stats = os.path.join(job.root, "step.json")
            out = os.path.join(job.root, "step")
            env = cluster.env(base, **larder, LARDER_STATS=stats)
            proc = run(["srun", f"--mpi={plugin}", "-n", "2", "--time=5",
                        f"--export=ALL,LD_PRELOAD={job.env()['LD_PRELOAD']}",
                        PYTHON, os.path.join(HERE, "read_files.py"), job.data, out],
                       env, 180, cluster, "the job step")
            tasks = [json.load(open(f"{out}.{t}")) for t in range(2)]
            check(all(t["digests"] == expected and t["ntasks"] == 2 for t in tasks),
                  f"srun --mpi={plugin} -n 2: both tasks read every file's bytes as a direct read")
            s = read_stats(stats)
            check(s["ranks"] == 2 and s["pfs"]["bytes_read"] == total and s["fallbacks"] == 0,
                  f"the two tasks were one Larder job: 2 ranks, the PFS read each byte once "
                  f"({s['pfs']['bytes_read']} of {total} B, app {s['app']['bytes_read']} B)")
            check("srun started this step" not in proc.stderr, "no launch warning")

            # (b) the user guide's sbatch script, unchanged
            work = cluster.path("work")
            script = os.path.join(work, "train.sbatch")
            with open(script, "w") as f:
                f.write(sbatch_script(args.user_guide))
            shutil.copy(os.path.join(HERE, "train.py"), work)
            ref = os.path.join(job.root, "ref.json")
            subprocess.run([PYTHON, os.path.join(HERE, "train.py"), job.data, ref, "reference",
                            "2"], env=base, check=True, timeout=120)
            reference = json.load(open(ref))
            stats = os.path.join(job.root, "batch.json")
            out = os.path.join(job.root, "batch")
            larder_env = {k: v for k, v in larder.items() if k != "LARDER_PREFIX"}
            env = cluster.env(base, **larder_env, LARDER_HOME=args.larder_home,
                              LARDER_PREFIX=job.data, LARDER_STATS=stats,
                              LARDER_SRUN_MPI=plugin, GLOO_SOCKET_IFNAME="lo")
            if args.asan_lib:
                fail("the sbatch script preloads Larder alone: not under the sanitizers")
            run(["sbatch", "--wait", f"--chdir={work}", f"--output={work}/job.out", script,
                 job.data, out], env, 300, cluster, "the batch job")
            print(open(f"{work}/job.out").read(), flush=True)
            results = [json.load(open(f"{out}.{r}")) for r in range(2)]
            check(all(results[r]["epochs"] == reference[str(r)] for r in range(2)),
                  "sbatch: every batch of both epochs on both ranks equals the run without "
                  "Slurm and Larder")
            check(results[0]["master"] == cluster.host,
                  f"MASTER_ADDR came from the node list ({results[0]['master']})")
            s = read_stats(stats)
            check(s["ranks"] == 2 and s["pfs"]["bytes_read"] == total - 200_000 and
                  s["fallbacks"] == 0,
                  f"sbatch: one Larder job of 2 ranks, the PFS read each sample once "
                  f"({s['pfs']['bytes_read']} B)")
            root, conf = cluster.root, cluster.path("slurm.conf")
        left = processes_using(conf)
        check(not left and not os.path.exists(root),
              "every daemon and task stopped, the cluster's directory and key removed")
        job.finish()
    finally:
        if cluster is not None:
            cluster.stop()
        job.close()


if __name__ == "__main__":
    main()
