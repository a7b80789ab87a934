"""Shared helpers of the end-to-end tests: scratch directories, the preload environment,
launching jobs, the stats JSON, and the checks every job ends with (all processes gone, no
Larder files left behind)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

PYTHON = "/usr/bin/python3"  # Debian's, with numpy, torch and mpi4py


class Job:
    """One test's scratch space and launcher settings."""

    def __init__(self, args, name):
        self.args = args
        self.tag = "lpl-" + name + "-" + uuid.uuid4().hex[:8]
        self.root = tempfile.mkdtemp(prefix=self.tag + "-")
        self.data = os.path.join(self.root, "data")
        self.shm = os.path.join("/dev/shm", self.tag)
        self.local = os.path.join(self.root, "local")
        for d in (self.data, self.shm, self.local):
            os.makedirs(d, exist_ok=True)

    def close(self):
        shutil.rmtree(self.root, ignore_errors=True)
        shutil.rmtree(self.shm, ignore_errors=True)

    def env(self, preload=True, stats=None, extra=None):
        env = dict(os.environ)
        for key in list(env):
            # UCX_MEM_*: the tests run with UCX's memory hooks as UCX sets them by default
            if key.startswith(("LARDER_", "UCX_MEM_")) or key in ("LD_PRELOAD",):
                del env[key]
            # A test run inside an allocation must not keep stores for it (LARDER_KEEP=auto).
            if key in ("SLURM_JOB_ID", "PBS_JOBID", "FLUX_JOB_ID", "LSB_JOBID", "COBALT_JOBID"):
                del env[key]
        env["LPL_TEST_TAG"] = self.tag  # lets the test find its own processes
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        # The tests' data directories stand in for the PFS on this machine's local disk: cached
        # (a user's node-local prefix is left to its file system by default, LARDER_LOCAL_FS).
        env["LARDER_LOCAL_FS"] = "cache"
        if preload:
            env["LD_PRELOAD"] = (self.args.asan_lib + ":" if self.args.asan_lib else "") + \
                self.args.preload
            env["LARDER_PREFIX"] = self.data
            env["LARDER_SHM_DIR"] = self.shm
            env["LARDER_DIR"] = self.local
            env["LARDER_DISK"] = "64M"
            env["LARDER_MEM"] = "256M"
            env["LARDER_CHUNK"] = "64K"
            env["LARDER_TIMEOUT"] = str(30 * self.args.timeout_scale)
            # Jobs keep nothing for later steps unless the test asks (a launcher such as srun
            # sets SLURM_JOB_ID in the ranks, which LARDER_KEEP=auto would keep for).
            env["LARDER_KEEP"] = "off"
            if stats:
                env["LARDER_STATS"] = stats
        if self.args.mpi == "openmpi":
            # Open MPI picks its own PML (as in the project's MPI tests); Larder asks for osc ucx.
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        env.update(extra or {})
        return env

    def python_env(self, env):
        """`env` for a Python process. Python leaks by design: no leak check for it under the
        sanitizers (the C programs keep the asan preset's ASAN_OPTIONS and LSan suppressions).
        And so no slow unwinding at each malloc either (the preset asks for it so that leak
        stacks through libraries without frame pointers match the suppressions): Python mallocs
        constantly, and a 4-rank PyTorch job took minutes instead of seconds with it."""
        return self.unowned_env(env)

    def owns(self, program):
        """Whether `program` (a job's argv[0]) was built by this project: only those are leak
        checked under the sanitizers."""
        build = build_dir(self.args.preload)
        return build is not None and \
            os.path.realpath(shutil.which(program) or program).startswith(build + os.sep)

    def unowned_env(self, env):
        """`env` for a program the project does not own (Python, bash, a wrapper script and what
        it runs, hostname, env, numactl, bwrap): the ASan runtime stays preloaded under Larder's
        library, but LeakSanitizer does not judge the program's own leaks (Debian's `hostname`
        leaks 128 bytes and exits 1 under a leak check; abort_on_error made that 134)."""
        if not self.args.asan_lib:
            return env
        env = dict(env)
        opts = env.get("ASAN_OPTIONS", "")
        env["ASAN_OPTIONS"] = (opts + ":" if opts else "") + "detect_leaks=0:fast_unwind_on_malloc=1"
        return env

    def mpiexec(self, n, argv, env, timeout=50, check=True):
        """Runs `argv` as an n-rank job; every rank gets `env` (LD_PRELOAD included)."""
        if self.args.mpi == "openmpi":
            cmd = [self.args.mpiexec, "-n", str(n), "--oversubscribe", "--bind-to", "none"]
            for key in ("LD_PRELOAD", "LPL_TEST_TAG"):
                if key in env:
                    cmd += ["-x", f"{key}={env[key]}"]
        else:
            cmd = [self.args.mpiexec, "-n", str(n), "-bind-to", "none"]
        launcher_env = dict(env)
        launcher_env.pop("LD_PRELOAD", None)  # the launcher itself runs without Larder
        if not self.owns(argv[0]):
            launcher_env = self.unowned_env(launcher_env)
        if self.args.mpi != "openmpi" and "LD_PRELOAD" in env:
            cmd += ["-genv", "LD_PRELOAD", env["LD_PRELOAD"]]
        proc = subprocess.run(cmd + argv, env=launcher_env, timeout=timeout * self.args.timeout_scale,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        sys.stdout.write(proc.stdout)
        sys.stderr.write(proc.stderr)
        if check and proc.returncode != 0:
            fail(f"job {argv} exited with {proc.returncode}")
        return proc

    def leftover_files(self, kept_ok=False):
        """Larder files still in the job's shm and local directories (with `kept_ok`, kept
        stores, which outlive their jobs on purpose, are not counted)."""
        left = []
        for base in (self.shm, self.local):
            for dirpath, dirnames, filenames in os.walk(base):
                if kept_ok:
                    dirnames[:] = [d for d in dirnames if not d.startswith("keep-")]
                    filenames = [f for f in filenames if not f.startswith("keep-")]
                left += [os.path.join(dirpath, f) for f in filenames]
                # the per-user base directory (larder-<uid>) may stay, empty; job dirs may not
                if os.path.dirname(dirpath) != base and dirpath != base and \
                        os.path.basename(os.path.dirname(dirpath)).startswith("larder-"):
                    left.append(dirpath)
        return left

    def leftover_processes(self):
        """Processes that still carry this test's tag in their environment (zombies, which
        have ended and wait for their parent to collect them, are not counted)."""
        found = []
        needle = ("LPL_TEST_TAG=" + self.tag).encode()
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                        continue
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if needle in f.read().split(b"\0"):
                        found.append(int(pid))
            except (OSError, IndexError):
                pass
        return found

    def lingering_processes(self):
        """leftover_processes(), once those that are ending have had time to: a process the
        launcher already stopped (an MPI proxy, a rank in its exit path) can outlive mpiexec by
        a moment on a loaded machine. Waits for them to go (checked every 0.1 s, at most 20 s
        times the timeout scale), not for a fixed time; a process that stays is reported."""
        deadline = time.monotonic() + 20 * self.args.timeout_scale
        procs = self.leftover_processes()
        while procs and time.monotonic() < deadline:
            time.sleep(0.1)
            procs = self.leftover_processes()
        if procs:
            for pid in procs:
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
                    print(f"lingering process {pid}: {cmdline}")
                except OSError:
                    pass
        return procs

    def check_clean(self):
        procs = self.lingering_processes()
        if procs:
            fail(f"processes of the job are still running: {procs}")
        left = self.leftover_files()
        if left:
            fail(f"larder files left behind: {left}")

    def check_clean_except_kept(self):
        procs = self.lingering_processes()
        if procs:
            fail(f"processes of the job are still running: {procs}")
        left = self.leftover_files(kept_ok=True)
        if left:
            fail(f"larder files left behind: {left}")

    def finish(self):
        """The last check of a test: nothing of its jobs is left."""
        self.check_clean()
        check(True, "no processes or larder files left")


def build_dir(path):
    """The CMake build tree that `path` (the preload library) was built in: the nearest directory
    above it that holds a CMakeCache.txt, or None."""
    d = os.path.dirname(os.path.realpath(path))
    while d != os.path.dirname(d):
        if os.path.exists(os.path.join(d, "CMakeCache.txt")):
            return d
        d = os.path.dirname(d)
    return None


def fnv_hex(data):
    """FNV-1a of `data`, as the C programs print it (tests/e2e/fnv.h)."""
    h = 1469598103934665603
    for x in data:
        h = ((h ^ x) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def read_stats(path):
    with open(path) as f:
        return json.load(f)


def fail(message):
    print("FAIL: " + message, flush=True)
    raise SystemExit(1)


def check(cond, message):
    if not cond:
        fail(message)
    print("ok: " + message, flush=True)


def common_args(parser):
    parser.add_argument("--preload", required=True)
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--mpi", default="mpich", choices=["mpich", "openmpi"])
    parser.add_argument("--asan-lib", default="",
                        help="the ASan runtime, preloaded before the (instrumented) library")
    parser.add_argument("--timeout-scale", type=int, default=1,
                        help="multiplies every job's time limit (the sanitizers are slow)")
    return parser
