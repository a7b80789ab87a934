"""A real one-host Slurm cluster for the tests: Debian's munged, slurmctld and slurmd, each run in
the foreground as a child of this process with its own configuration, munge key, sockets, state
and spool in a private temporary directory, on free ports. Nothing outside that directory is
written or read (not /etc/slurm, not /etc/munge).

    with OneHostCluster() as cluster:
        subprocess.run(["srun", "-n", "2", "true"], env=cluster.env(), ...)

Start-up waits for each daemon to say it is ready on its own output (no sleeping); a job
submitted before the node has registered waits for it in the queue. stop() ends every daemon by
its PID (SIGTERM, then SIGKILL after a bounded wait), then every process they started that is
still there (slurmstepd and the tasks of a failed job, found through /proc by the cluster's
SLURM_CONF in their environment), by PID, and removes the directory with the key. It runs on any exit of the `with` block, and on SIGTERM/SIGINT."""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading

BINARIES = ("munged", "slurmctld", "slurmd", "srun", "sbatch", "scontrol")


def missing_binaries():
    return [b for b in BINARIES if shutil.which(b) is None and
            not os.path.exists(os.path.join("/usr/sbin", b))]


def _free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def processes_using(conf):
    """PIDs (other than this one) whose environment has SLURM_CONF=`conf`: a cluster's daemons
    and what they started (slurmstepd and the tasks inherit it), and its clients."""
    found, entry = [], ("SLURM_CONF=" + conf).encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if entry in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            pass
    return found


def _kill(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Daemon:
    """A daemon in the foreground, its output collected by a thread."""

    def __init__(self, name, argv, env, ready_text, timeout):
        self.name = name
        self.lines = []
        self._ready = threading.Event()
        self._ready_text = ready_text
        self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._ready.wait(timeout) or self.proc.poll() is not None:
            raise RuntimeError(f"{name} did not start:\n" + "".join(self.lines[-30:]))

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)
            if self._ready_text in line:
                self._ready.set()
        self._ready.set()  # the daemon exited: the waiter looks at poll()

    def stop(self, grace=10):
        """Ends the daemon by its PID: SIGTERM, then SIGKILL."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(grace)
        self._reader.join(grace)


class OneHostCluster:
    def __init__(self, cpus=4, start_timeout=60):
        self.cpus = cpus
        self.start_timeout = start_timeout
        self.daemons = []
        self.root = None
        self.host = socket.gethostname().split(".")[0]
        self._old_handlers = {}

    # -- lifecycle -------------------------------------------------------------------------
    def __enter__(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            self._old_handlers[sig] = signal.signal(sig, self._on_signal)
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()
        for sig, handler in self._old_handlers.items():
            signal.signal(sig, handler)
        return False

    def _on_signal(self, signum, frame):
        raise SystemExit(f"signal {signum}: stopping the Slurm cluster")

    def start(self):
        self.root = tempfile.mkdtemp(prefix="larder-slurm-")
        os.chmod(self.root, 0o755)  # munged wants its socket's directory traversable by all
        for d in ("state", "spool", "work"):
            os.makedirs(self.path(d))
        key = self.path("munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        env = self.env()
        self.daemons.append(Daemon(
            "munged", [self._bin("munged"), "--foreground", f"--key-file={key}",
                       f"--socket={self.path('munge.sock')}",
                       f"--pid-file={self.path('munged.pid')}",
                       f"--log-file={self.path('munged.log')}",
                       f"--seed-file={self.path('munged.seed')}"],
            env, "Created socket", self.start_timeout))
        self._write_config()
        self.daemons.append(Daemon(
            "slurmctld", [self._bin("slurmctld"), "-D", "-f", self.path("slurm.conf")], env,
            "Running as primary controller", self.start_timeout))
        self.daemons.append(Daemon(
            "slurmd", [self._bin("slurmd"), "-D", "-f", self.path("slurm.conf"), "-N", self.host],
            env, "slurmd started on", self.start_timeout))

    def stop(self):
        for daemon in reversed(self.daemons):
            try:
                daemon.stop()
            except Exception as e:  # keep stopping the others
                print(f"stopping {daemon.name}: {e}", flush=True)
        self.daemons = []
        if self.root:
            # What the daemons started and left running (slurmstepd or tasks of a failed job,
            # slurmctld's helper), found by this cluster's SLURM_CONF in their environment.
            _kill(self.processes())
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    # -- use ---------------------------------------------------------------------------------
    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def env(self, base=None, **extra):
        """The environment of Slurm's clients and daemons for this cluster."""
        env = dict(os.environ if base is None else base)
        for key in list(env):
            if key.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_")):
                del env[key]  # nothing of an enclosing allocation leaks in
        env["SLURM_CONF"] = self.path("slurm.conf")
        env.update(extra)
        return env

    def log_tail(self, n=20):
        return "\n".join(f"--- {d.name}\n" + "".join(d.lines[-n:]) for d in self.daemons)

    def processes(self):
        """PIDs of the daemons and of everything that runs with this cluster's SLURM_CONF
        (slurmstepd, tasks, and clients such as srun and sbatch started by the test)."""
        if not self.root:
            return []
        return processes_using(self.path("slurm.conf"))


    # -- internals ---------------------------------------------------------------------------
    @staticmethod
    def _bin(name):
        found = shutil.which(name)
        return found if found else os.path.join("/usr/sbin", name)

    def _write_config(self):
        ctld_port, slurmd_port = _free_ports(2)
        r = self.root
        conf = f"""# Written by tests/slurm/slurm_cluster.py: a cluster of one host, for one test.
ClusterName=lartest
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/munge
AuthInfo=socket={r}/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd.pid
PlugStackConfig={r}/plugstack.conf
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SlurmdParameters=config_overrides
MailProg=/bin/true
NodeName={self.host} NodeAddr=127.0.0.1 CPUs={self.cpus} State=UNKNOWN
PartitionName=test Nodes={self.host} Default=YES MaxTime=INFINITE State=UP
"""
        with open(self.path("plugstack.conf"), "w") as f:
            f.write("")
        with open(self.path("slurm.conf"), "w") as f:
            f.write(conf)
