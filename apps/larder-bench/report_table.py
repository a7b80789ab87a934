#!/usr/bin/env python3
"""The report's table (report.sh): one row per mode and epoch from the summary.json files,
the workload's demand against the link's bandwidth, and report.dat for gnuplot (one block per
mode: epoch, samples/s, AU %, PFS MiB) with report.vars (threshold, modes).

usage: report_table.py OUT_DIR RATE MODE...
"""
import json
import re
import sys

import yaml

MIB = 1024.0 * 1024.0


def link_mib_per_s(rate):
    m = re.fullmatch(r"(\d+)([kmg]?)bit", rate)
    scale = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]
    return int(m.group(1)) * scale / 8 / MIB


def demand_mib_per_s(out, mode, ranks):
    w = yaml.safe_load(open(f"{out}/{mode}/.hydra/config.yaml"))["workload"]
    compute = w["train"]["computation_time"]
    if isinstance(compute, dict):
        compute = compute["mean"]
    reader = w.get("reader", w.get("data_reader", {}))
    return ranks * reader.get("batch_size", 1) * w["dataset"]["record_length_bytes"] / compute / MIB


def main():
    out, rate, modes = sys.argv[1], sys.argv[2], sys.argv[3:]
    summaries = {m: json.load(open(f"{out}/{m}/summary.json")) for m in modes}
    first = summaries[modes[0]]
    ranks = first["num_accelerators"]
    threshold = 100.0 * yaml.safe_load(open(f"{out}/{modes[0]}/.hydra/config.yaml"))[
        "workload"].get("metric", {}).get("au", 0.90)
    print(f"workload demand at 100% AU: {demand_mib_per_s(out, modes[0], ranks):.1f} MiB/s "
          f"({ranks} ranks); shaped link: {link_mib_per_s(rate):.1f} MiB/s ({rate}); "
          f"AU threshold {threshold:.0f}%")
    header = (f"{'mode':<8} {'epoch':>5} {'seconds':>8} {'AU (%)':>8} {'samples/s':>10} "
              f"{'MiB/s':>8} {'PFS MiB':>9}")
    print(header)
    print("-" * len(header))
    with open(f"{out}/report.vars", "w") as v:
        v.write(f"threshold = {threshold:g}\nmodes = '{' '.join(modes)}'\n")
    with open(f"{out}/report.dat", "w") as dat:
        for mode in modes:
            s = summaries[mode]
            m, l = s["metric"], s["larder"]
            record = m["train_io_mean_MB_per_second"] / max(
                m["train_throughput_mean_samples_per_second"], 1e-12)
            dat.write(f"# {mode}: epoch samples/s AU% PFS_MiB\n")
            for e, (au, tput) in enumerate(zip(m["train_au_percentage"],
                                               m["train_throughput_samples_per_second"])):
                pfs = l["pfs_bytes_per_epoch"][e] / MIB
                print(f"{mode:<8} {e + 1:>5} {l['epoch_seconds'][e]:>8.2f} {au:>8.2f} "
                      f"{tput:>10.2f} {tput * record:>8.1f} {pfs:>9.1f}")
                dat.write(f"{e + 1} {tput:.4f} {au:.4f} {pfs:.2f}\n")
            dat.write("\n\n")
            later = m["train_au_percentage"][1:]
            verdict = "yes" if later and min(later) >= threshold else "no"
            print(f"{mode:<8} {'mean':>5} {sum(l['epoch_seconds']):>8.2f} "
                  f"{m['train_au_mean_percentage']:>8.2f} "
                  f"{m['train_throughput_mean_samples_per_second']:>10.2f} "
                  f"{m['train_io_mean_MB_per_second']:>8.1f} "
                  f"{sum(l['pfs_bytes_per_epoch']) / MIB:>9.1f}   "
                  f"DLIO verdict: {m['train_au_meet_expectation']}; "
                  f"every epoch after the first >= {threshold:.0f}% AU: {verdict}")
            print("-" * len(header))


if __name__ == "__main__":
    main()
