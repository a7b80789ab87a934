#!/usr/bin/env python3
"""Remote-read bandwidth and latency of Larder's transports next to ucx_perftest, in one run.

For each UCX transport selection (the default, which is shared memory on one host, and TCP), it
runs `larder-readbench transports` (2 ranks: remote hits over the ucx and mpi transports) and
`ucx_perftest -t ucp_get` at the same sizes with the same UCX_TLS, and prints a table with the
ratios. Usage:

    apps/larder-readbench/transport_report.py --bench build/release/bin/larder-readbench

Figures are measured side by side on a quiet machine; run it alone.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

SIZES = ["4K", "16K", "64K", "256K", "1M", "4M", "16M", "64M"]
MIB = 1 << 20


def size_bytes(label):
    unit = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(label[-1], 1)
    return int(label.rstrip("KMG")) * unit


def run_larder(bench, sizes, tls, total, reads):
    env = dict(os.environ, LARDER_LOG="error", LARDER_REMOTE_READS=reads)
    if tls:
        # Larder's own UCX context only (it reads LARDER_UCX_* before UCX_*): MPICH's UCX keeps
        # its default, because MPICH 4.0 on TCP between ranks of one host can hang in
        # MPI_Finalize (docs/transports.md).
        env["LARDER_UCX_TLS"] = tls
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = ["mpiexec.mpich", "-n", "2", bench, "transports", "--sizes", ",".join(sizes),
               "--bytes", total, "--json", out.name]
        subprocess.run(cmd, env=env, check=True, stdout=sys.stderr, timeout=1800)
        with open(out.name) as f:
            return {r["size"]: r for r in json.load(f)["results"]}


def run_perftest(size, tls, port):
    env = dict(os.environ)
    if tls:
        env["UCX_TLS"] = tls
    iters = max(20, min(2000, (512 * MIB) // size))
    server = subprocess.Popen(["ucx_perftest", "-p", str(port)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(50):  # wait for the server to listen
            time.sleep(0.1)
            client = subprocess.run(["ucx_perftest", "localhost", "-p", str(port), "-t", "ucp_get",
                                     "-s", str(size), "-n", str(iters), "-w", str(max(5, iters // 20)), "-f"],
                                    env=env, capture_output=True, text=True)
            if client.returncode == 0:
                break
        else:
            raise RuntimeError("ucx_perftest client failed: " + client.stderr[-500:])
    finally:
        server.wait(timeout=60)
    # Final line: iterations, latency 50%/avg/overall (usec), bandwidth avg/overall (MB/s = MiB/s), ...
    numbers = [float(x) for x in re.findall(r"[-+]?\d+\.?\d*", client.stdout.strip().splitlines()[-1])]
    latency_us, bw_mibs = numbers[2], numbers[5]
    return {"usec": latency_us, "GBps": bw_mibs * MIB / 1e9}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", required=True, help="path to larder-readbench")
    ap.add_argument("--sizes", default=",".join(SIZES))
    ap.add_argument("--bytes", default="512M", help="bytes read per larder measurement")
    ap.add_argument("--json", help="write all figures here")
    args = ap.parse_args()
    sizes = args.sizes.split(",")
    report = {}
    port = 14000 + os.getpid() % 1000
    for name, tls in (("default UCX_TLS (shared memory on one host)", ""), ("UCX_TLS=tcp,self", "tcp,self")):
        print(f"measuring: {name}", file=sys.stderr)
        larder = run_larder(args.bench, sizes, tls, args.bytes, "auto")
        gets = run_larder(args.bench, sizes, tls, args.bytes, "rma")
        rows = []
        for label in sizes:
            b = size_bytes(label)
            print(f"  ucx_perftest {label}", file=sys.stderr)
            perf = run_perftest(b, tls, port)
            port += 1
            rows.append((label, larder[b]["ucx"], gets[b]["ucx"], larder[b]["mpi"], perf))
        report[name] = rows
        print(f"\n{name}")
        print(f"{'size':>5} | {'larder-ucx (auto)':>19} | {'larder-ucx (gets)':>19} |"
              f" {'larder-mpi':>19} | {'ucx_perftest':>19} | {'auto/perftest':>17}")
        print(f"{'':>5} |" + f" {'GB/s':>8} {'us/op':>10} |" * 4 + f" {'bw':>7} {'latency':>9}")

        def ratio(a, b):
            return f"{a / b:7.2f}" if b > 0 else f"{'-':>7}"
        for label, ucx, ucx_gets, mpi, perf in rows:
            print(f"{label:>5} | {ucx['GBps']:8.3f} {ucx['usec_per_op']:10.1f} |"
                  f" {ucx_gets['GBps']:8.3f} {ucx_gets['usec_per_op']:10.1f} | {mpi['GBps']:8.3f}"
                  f" {mpi['usec_per_op']:10.1f} | {perf['GBps']:8.3f} {perf['usec']:10.1f} |"
                  f" {ratio(ucx['GBps'], perf['GBps'])} {ratio(ucx['usec_per_op'], perf['usec'])}")
        sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({k: [{"size": r[0], "ucx": r[1], "ucx_gets": r[2], "mpi": r[3],
                            "perftest": r[4]} for r in v]
                       for k, v in report.items()}, f, indent=2)


if __name__ == "__main__":
    main()
