#!/usr/bin/python3
"""Start-up on real network-namespace hosts, against the scale model's start-up terms (issue
"start-up at 100,000 ranks", item 4: the model calibrated on multi-node start-ups).

    apps/larder-bench/startup_hosts.py --build build/release [--hosts 1,2,4,8] [--ppn 2]
        [--runs 3]

For each host count K: `scripts/netns/cluster.sh run K --ppn P` starts a probe under the preload
(Larder's UCX over TCP across the hosts' bridge, the MPI library's ranks of a host on shared
memory), which makes one file-system call under LARDER_PREFIX (Larder starts there) and exits.
The stats' `startup.mpi_init_ns` and `startup.larder_ns` (summed over the ranks) give the mean
per rank, MPI_Init apart from Larder's own start. Beside them: what the scale model's `startup`
term gives for the same K x P with this cluster's measured round trip (TCP, host 1 to host 2)
and the calibrated local start. Median of the runs. Creates the cluster (`up`) and removes it
(`down`) itself; needs root.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CLUSTER = os.path.join(ROOT, "scripts/netns/cluster.sh")
sys.path.insert(0, os.path.join(ROOT, "apps/larder-scale-model"))
import larder_scale_model as model  # noqa: E402

PROBE = "import os, sys\nos.stat(sys.argv[1])\n"


ECHO = """
import socket, sys
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((sys.argv[1], 47999))
srv.listen(1)
print('ready', flush=True)
conn, _ = srv.accept()
conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
while True:
    b = conn.recv(1)
    if not b:
        break
    conn.sendall(b)
"""

PING = """
import socket, statistics, sys, time
c = socket.create_connection((sys.argv[1], 47999))
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
times = []
for _ in range(400):
    t = time.perf_counter()
    c.sendall(b'x')
    c.recv(1)
    times.append(time.perf_counter() - t)
print(statistics.median(times))
"""


def round_trip_s():
    """The median TCP round trip (1 byte each way) from host 1 to host 2 of the cluster, s."""
    prefix = os.environ.get("LARDER_NETNS_PREFIX", "lnc")
    subnet = os.environ.get("LARDER_NETNS_SUBNET", "10.77.0")
    server = subprocess.Popen(["ip", "netns", "exec", f"{prefix}-h2", "/usr/bin/python3", "-c",
                               ECHO, f"{subnet}.12"], stdout=subprocess.PIPE, text=True)
    try:
        server.stdout.readline()  # "ready": listening
        out = subprocess.run(["ip", "netns", "exec", f"{prefix}-h1", "/usr/bin/python3", "-c",
                              PING, f"{subnet}.12"], stdout=subprocess.PIPE, text=True,
                             check=True, timeout=60).stdout
    finally:
        server.wait(timeout=60)
    return float(out.strip())


def one_run(args, k, probe, tree, stats):
    env = {key: v for key, v in os.environ.items() if not key.startswith("LARDER_")}
    env.update({"LD_PRELOAD": args.preload, "LARDER_PREFIX": tree, "LARDER_LOCAL_FS": "cache", "LARDER_STATS": stats,
                "LARDER_KEEP": "off", "LARDER_MEM": "64M", "LARDER_LOG": "error",
                "LARDER_UCX_TLS": "tcp,self",
                "LARDER_NETNS_UCX_TLS": os.environ.get("LARDER_NETNS_UCX_TLS",
                                                       "self,sysv,posix")})
    cmd = [CLUSTER, "run", str(k), "--mpi", "mpich", "--ppn", str(args.ppn), "--",
           "/usr/bin/python3", probe, tree]
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, timeout=300)
    with open(stats) as f:
        s = json.load(f)
    n = k * args.ppn
    return s["startup"]["mpi_init_ns"] / n / 1e6, s["startup"]["larder_ns"] / n / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--hosts", default="1,2,4,8")
    ap.add_argument("--ppn", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    args.preload = os.path.abspath(os.path.join(args.build, "lib/liblarder_preload.so"))
    if not os.path.exists(args.preload):
        sys.exit(f"startup_hosts: {args.preload} is not built")
    hosts = [int(x) for x in args.hosts.split(",")]
    cal = model.load_calibration(os.path.join(ROOT, "apps/larder-scale-model/calibration.json"))
    st = model.startup_costs(cal)
    scratch = tempfile.mkdtemp(prefix="larder-startup-hosts-")
    subprocess.run([CLUSTER, "up", str(max(max(hosts), 2))], check=True)
    try:
        tree = os.path.join(scratch, "tree")
        os.makedirs(tree)
        probe = os.path.join(scratch, "probe.py")
        with open(probe, "w") as f:
            f.write(PROBE)
        rtt = round_trip_s()
        c = model.Costs(rtt=rtt, link_bw=1e9)
        s = model.Settings(ranks_per_node=args.ppn)
        print(f"round trip between hosts {rtt * 1e6:.0f} us (TCP); the model's local start "
              f"{st.local_s * 1e3:.0f} ms (calibration.json); {args.ppn} ranks per host; "
              f"median of {args.runs} runs; ms per rank, mean over the ranks")
        print("| hosts | ranks | MPI_Init | Larder's own start | model: Larder's start | "
              "measured / model |")
        print("|---|---|---|---|---|---|")
        for k in hosts:
            runs = []
            for i in range(args.runs):
                print(f"startup_hosts: {k} hosts, run {i + 1} of {args.runs}", file=sys.stderr,
                      flush=True)
                runs.append(one_run(args, k, probe, tree, os.path.join(scratch, "stats.json")))
            mpi_init = statistics.median(r[0] for r in runs)
            own = statistics.median(r[1] for r in runs)
            predicted = model.startup(k, s, c, st)["is"]["time_s"] * 1e3
            print(f"| {k} | {k * args.ppn} | {mpi_init:.1f} | {own:.1f} | {predicted:.1f} | "
                  f"{own / predicted:.2f} |", flush=True)
    finally:
        subprocess.run([CLUSTER, "down"], check=False)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
