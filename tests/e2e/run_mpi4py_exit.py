"""e2e_mpi4py_exit: unmodified mpi4py programs end by themselves under the preload, whatever they
do with MPI at the end (Open MPI build: Debian's mpi4py is built on Open MPI).

Each pattern is a 2-rank job that reads managed files and must exit 0 within its time limit:
collectives then MPI.Finalize() (the reported hang: the finalize hook held Python's GIL while it
waited for Larder's service thread, which ran mpi4py's attribute callback inside PMPI_Finalize),
mpi4py's atexit finalize, no finalize at all, MPI.Init_thread and lazy init, sub-communicators
from Split/Split_type still alive, MPI.Finalize() from another Python thread, and DataLoader
workers (fork and spawn, persistent) alive at MPI.Finalize(). Then one check that nothing of
Larder's, MPICH's or UCX's is left in /dev/shm."""
import argparse
import os

from e2e_util import PYTHON, Job, check, common_args

HEAD = """
import hashlib, os, sys, threading
data = sys.argv[1]
def read_all():
    return [hashlib.sha1(open(os.path.join(data, n), 'rb').read()).hexdigest()
            for n in sorted(os.listdir(data))]
"""

PATTERNS = {
    "collectives then MPI.Finalize()": """
from mpi4py import MPI
read_all()
MPI.COMM_WORLD.bcast(1, root=0)
MPI.COMM_WORLD.allgather(MPI.COMM_WORLD.Get_rank())
MPI.Finalize()
""",
    "mpi4py's atexit finalize": """
from mpi4py import MPI
read_all()
MPI.COMM_WORLD.bcast(1, root=0)
""",
    "no finalize at all": """
import mpi4py
mpi4py.rc.finalize = False
from mpi4py import MPI
read_all()
MPI.COMM_WORLD.allreduce(1)
""",
    "MPI.Init_thread after import": """
import mpi4py
mpi4py.rc.initialize = False
from mpi4py import MPI
read_all()
MPI.Init_thread(MPI.THREAD_MULTIPLE)
MPI.COMM_WORLD.bcast(1, root=0)
MPI.Finalize()
""",
    "lazy MPI.Init, finalized at exit": """
import mpi4py
mpi4py.rc.initialize = False
from mpi4py import MPI
read_all()
MPI.Init()
MPI.COMM_WORLD.barrier()
""",
    "sub-communicators alive at MPI.Finalize()": """
from mpi4py import MPI
w = MPI.COMM_WORLD
a = w.Split(w.Get_rank() % 2, 0)
b = w.Split_type(MPI.COMM_TYPE_SHARED)
read_all()
a.bcast(1, root=0); b.allgather(1)
MPI.Finalize()
""",
    "MPI.Finalize() from another thread": """
from mpi4py import MPI
read_all()
MPI.COMM_WORLD.bcast(1, root=0)
t = threading.Thread(target=MPI.Finalize)
t.start(); t.join()
""",
}

# mpi4py is imported in main(): a spawned worker re-imports this module, and a worker must not
# initialise MPI (docs/user-guide.md, "Python and mpi4py"); MODULE_LEVEL checks what it is told.
LOADER = """
import torch
from torch.utils.data import DataLoader, Dataset
class Files(Dataset):
    def __init__(self): self.names = sorted(os.listdir(data))
    def __len__(self): return len(self.names)
    def __getitem__(self, i):
        return hashlib.sha1(open(os.path.join(data, self.names[i]), 'rb').read()).hexdigest()
def main():
    from mpi4py import MPI
    MPI.COMM_WORLD.bcast(1, root=0)
    loader = DataLoader(Files(), batch_size=2, num_workers=2, persistent_workers=True,
                        multiprocessing_context=sys.argv[2])
    for epoch in range(2):
        for batch in loader:
            pass
    MPI.Finalize()  # the workers are alive: the loader still holds them
if __name__ == '__main__':
    main()
"""

MODULE_LEVEL = LOADER.replace("import torch\n", "import torch\nfrom mpi4py import MPI\n", 1)


def main():
    args = common_args(argparse.ArgumentParser()).parse_args()
    job = Job(args, "mpi4py-exit")
    shm_before = {n for n in os.listdir("/dev/shm")}
    try:
        for i in range(6):
            with open(os.path.join(job.data, f"f{i}.bin"), "wb") as f:
                f.write(os.urandom(50_000 + 40_000 * i))
        env = job.env(extra={"OMP_NUM_THREADS": "1"})
        for name, body in PATTERNS.items():
            path = os.path.join(job.root, "pattern.py")
            with open(path, "w") as f:
                f.write(HEAD + body)
            proc = job.mpiexec(2, [PYTHON, path, job.data], env, timeout=60, check=False)
            check(proc.returncode == 0, f"{name}: the job exited by itself ({proc.returncode})")
            job.check_clean()
        path = os.path.join(job.root, "loader.py")
        with open(path, "w") as f:
            f.write(HEAD + LOADER)
        for context in ("fork", "spawn"):
            proc = job.mpiexec(2, [PYTHON, path, job.data, context], env, timeout=120, check=False)
            check(proc.returncode == 0, f"persistent {context} DataLoader workers alive at "
                  f"MPI.Finalize(): the job exited by itself ({proc.returncode})")
            job.check_clean()
        path = os.path.join(job.root, "module_level.py")
        with open(path, "w") as f:
            f.write(HEAD + MODULE_LEVEL)
        proc = job.mpiexec(2, [PYTHON, path, job.data, "spawn"], env, timeout=120, check=False)
        check(proc.returncode != 0 and "is a worker of an MPI rank" in proc.stderr,
              "mpi4py imported at module level in a spawn worker: the worker is refused MPI, with "
              "the reason, and the job ends")
        job.check_clean()
        left = {n for n in os.listdir("/dev/shm")} - shm_before
        left = {n for n in left if n.startswith(("mpich_shar_tmp", "ucx_", "larder-", "vader",
                                                 "sm_segment"))}
        check(not left, f"nothing left in /dev/shm ({sorted(left)})")
    finally:
        job.close()


if __name__ == "__main__":
    main()
