"""e2e_report: the job report (larder-report) of real jobs, opened in a real browser.

Three jobs under the preload, each checked against direct reads:
  1. a read job: 4 ranks on 2 emulated nodes read every file of a tree, twice;
  2. an import storm: 4 ranks import the same package tree;
  3. a job with fallbacks: 2 ranks read more than the cache may hold (LARDER_MEM, no disk tier).
Their stats files must account for every byte (served.* adds up to app.bytes_read; the timeline's
series add up to their counters; the read job's file list names each file with its size). The
report of each, and one comparing two of them, is opened in headless Chromium
(tests/support/browser_check.py): the page loads without console errors and without any request
(it is self-contained), every image decodes, and every number on the page equals the stats
file's value at its key, its text saying the same value."""
import argparse
import hashlib
import json
import os
import subprocess
import sys

from e2e_util import PYTHON, Job, check, common_args, fail, read_stats

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from report_numbers import parse_human  # noqa: E402
BROWSER_CHECK = os.path.join(HERE, "..", "support", "browser_check.py")

READER = """
import hashlib, os, sys
root, out = sys.argv[1], sys.argv[2]
digests = {}
for epoch in range(2):
    for dirpath, _, names in sorted(os.walk(root)):
        for name in sorted(names):
            path = os.path.join(dirpath, name)
            with open(path, 'rb') as f:
                digests[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
rank = os.environ.get('PMI_RANK') or os.environ.get('OMPI_COMM_WORLD_RANK') or '0'
with open(out + '.' + rank, 'w') as f:
    f.write(repr(sorted(digests.items())))
"""

IMPORTER = """
import os, sys
sys.path.insert(0, sys.argv[1])
import stormpkg
total = sum(getattr(__import__('stormpkg.m%d' % i, fromlist=['V']), 'V') for i in range(40))
rank = os.environ.get('PMI_RANK') or os.environ.get('OMPI_COMM_WORLD_RANK') or '0'
with open(sys.argv[2] + '.' + rank, 'w') as f:
    f.write(str(total))
"""

def make_tree(root, files, size_of):
    os.makedirs(root, exist_ok=True)
    for i in range(files):
        sub = os.path.join(root, f"d{i % 3}")
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, f"f{i:03d}.bin"), "wb") as f:
            f.write(os.urandom(size_of(i)))


def make_package(root):
    pkg = os.path.join(root, "stormpkg")
    os.makedirs(pkg)
    open(os.path.join(pkg, "__init__.py"), "w").close()
    for i in range(40):
        with open(os.path.join(pkg, f"m{i}.py"), "w") as f:
            f.write(f"V = {i}\nTABLE = {list(range(200))!r}\n")


def direct_digests(root):
    out = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
    return repr(sorted(out.items()))


def rank_outputs(prefix, n):
    return [open(f"{prefix}.{r}").read() for r in range(n)]


def value_at(stats, key):
    node = stats
    for part in key.split("."):
        if isinstance(node, list):
            node = node[int(part)] if part.isdigit() and int(part) < len(node) else None
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            return None
    return node


def check_page(name, html, files, report_check):
    """Opens `html` in Chromium; `files` maps the page's key prefixes ("" and "other:") to the
    stats it shows."""
    result = subprocess.run([PYTHON, BROWSER_CHECK, html, "--timeout", "120"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        fail(f"{name}: browser_check failed ({result.returncode}): {result.stderr.strip()}")
    page = json.loads(result.stdout)
    check(page["console_errors"] == [], f"{name}: no errors in the browser's console "
                                        f"({page['console_errors'][:3]})")
    check(page["requests"] == [], f"{name}: the page asks for nothing (self-contained)")
    images = page["images"]
    check(len(images) >= 4 and all(i["decoded"] and i["natural_width"] > 0 for i in images),
          f"{name}: all {len(images)} images decode")
    check(all(i["alt"] for i in images), f"{name}: every image has a text alternative")
    check(page["tables"] >= 3, f"{name}: {page['tables']} tables")
    shown = 0
    for number in page["numbers"]:
        key = number["key"]
        prefix = "other:" if key.startswith("other:") else ""
        expected = value_at(files[prefix], key[len(prefix):])
        if number["value"] is None:
            continue
        value = json.loads(number["value"])
        if value != expected:
            fail(f"{name}: {key} shows {value}, the stats file has {expected}")
        said = parse_human(number["kind"], number["text"].strip())
        tolerance = 0 if number["kind"] == "count" else 0.05 * abs(value) + (
            1e9 if number["kind"] == "date" else 1)
        if abs(said - value) > tolerance:
            fail(f"{name}: {key} = {value} reads as '{number['text']}'")
        shown += 1
    check(shown >= 40, f"{name}: the {shown} numbers on the page equal the stats file's values "
                       "and their text says the same")
    for key in report_check:
        check(any(n["key"] == key for n in page["numbers"]), f"{name}: the page shows {key}")


def check_accounting(name, stats):
    served = stats["served"]
    sources = ("self_bytes", "node_bytes", "remote_bytes", "loaded_bytes", "fallback_bytes")
    check(sum(served[s] for s in sources) == stats["app"]["bytes_read"],
          f"{name}: where reads were served adds up to the bytes the application read")
    series = stats["timeline"]["series"]
    check(sum(series["app_bytes"]) == stats["app"]["bytes_read"] and
          sum(series["pfs_bytes"]) == stats["pfs"]["bytes_read"] and
          sum(series["fallback_bytes"]) == served["fallback_bytes"],
          f"{name}: the timeline's series add up to their counters")
    pfs_ops = sum(stats["pfs"][k] for k in ("read_ops", "open_ops", "stat_ops", "list_ops"))
    check(sum(series["pfs_ops"]) == pfs_ops, f"{name}: the timeline counts every PFS operation")
    check(stats["job"]["duration_ns"] > 0 and len(series["app_bytes"]) == stats["timeline"]["buckets"],
          f"{name}: the job's duration and a full timeline")


def main():
    parser = common_args(argparse.ArgumentParser())
    parser.add_argument("--report", required=True, help="the larder-report program")
    args = parser.parse_args()
    job = Job(args, "report")
    try:
        reader = os.path.join(job.root, "reader.py")
        with open(reader, "w") as f:
            f.write(READER)
        importer = os.path.join(job.root, "importer.py")
        with open(importer, "w") as f:
            f.write(IMPORTER)
        tree = os.path.join(job.data, "tree")
        make_tree(tree, 30, lambda i: 20_000 + 7_919 * i)
        big = os.path.join(job.data, "big")
        make_tree(big, 6, lambda i: 700_000 + i)
        make_package(os.path.join(job.data, "pkgs"))

        stats = {}
        # 1. The read job.
        out = os.path.join(job.root, "read")
        stats["read"] = os.path.join(job.root, "read.json")
        job.mpiexec(4, [PYTHON, reader, tree, out],
                    job.env(stats=stats["read"], extra={"LARDER_NODE_SIZE": "2"}))
        check(all(o == direct_digests(tree) for o in rank_outputs(out, 4)),
              "read job: every rank read the bytes a direct read gives")
        job.check_clean()
        # 2. The import storm.
        out = os.path.join(job.root, "import")
        stats["import"] = os.path.join(job.root, "import.json")
        job.mpiexec(4, [PYTHON, importer, os.path.join(job.data, "pkgs"), out],
                    job.env(stats=stats["import"], extra={"LARDER_NODE_SIZE": "2"}))
        check(all(o == str(sum(range(40))) for o in rank_outputs(out, 4)),
              "import storm: every rank imported the package tree")
        job.check_clean()
        # 3. Fallbacks: 4.2 MB to read, 1 MiB of memory per node, no disk tier.
        out = os.path.join(job.root, "fallback")
        stats["fallback"] = os.path.join(job.root, "fallback.json")
        job.mpiexec(2, [PYTHON, reader, big, out],
                    job.env(stats=stats["fallback"],
                            extra={"LARDER_MEM": "1M", "LARDER_DISK": "0"}))
        check(all(o == direct_digests(big) for o in rank_outputs(out, 2)),
              "fallback job: every rank read the bytes a direct read gives")
        job.check_clean()

        loaded = {name: read_stats(path) for name, path in stats.items()}
        for name, s in loaded.items():
            check_accounting(name, s)
        read = loaded["read"]
        check(read["job"]["nodes"] == 2 and read["job"]["ranks_per_node"] == 2 and read["ranks"] == 4,
              "read job: 4 ranks on 2 nodes")
        sizes = {os.path.join(d, n): os.path.getsize(os.path.join(d, n))
                 for d, _, names in os.walk(tree) for n in names}
        listed = read["top_files"]["by_bytes"]
        check(len(listed) == 20 and all(e["over"] == 0 and e["bytes"] == sizes[e["path"]]
                                        for e in listed),
              "read job: the PFS's top files by bytes are the largest, each read once, exactly")
        check(listed[0]["path"] == max(sizes, key=sizes.get), "read job: the largest file first")
        check(read["skew"]["bytes_served"]["nodes"]["log2"] is not None and
              sum(read["skew"]["bytes_served"]["ranks_log2"]) == 4,
              "read job: the load's spread counts every rank")
        storm = loaded["import"]
        check(storm["pfs"]["stat_ops"] > 0 and storm["top_files"]["by_ops"],
              "import storm: the files that cost the PFS most operations are listed")
        fb = loaded["fallback"]
        check(fb["fallback_causes"]["no_room"] > 0 and fb["served"]["fallback_bytes"] > 0,
              f"fallback job: reads fell back for want of room ({fb['fallback_causes']})")
        check(any(e["cause"] == "no_room" and e["path"].startswith(big)
                  for e in fb["fallback_files"]),
              "fallback job: the files that fell back are named with the cause")

        # The pages.
        headline = ["app.bytes_read", "pfs.bytes_read", "served.self_bytes", "job.nodes",
                    "latency.reads"]
        for name, path in stats.items():
            html = os.path.join(job.root, name + ".html")
            subprocess.run([args.report, path, "-o", html], check=True, timeout=120)
            extra = ["fallback_causes.no_room", "fallback_files.0.count"] if name == "fallback" \
                else ["top_files.by_bytes.0.bytes"]
            check_page(name, html, {"": loaded[name]}, headline + extra)
        html = os.path.join(job.root, "compare.html")
        subprocess.run([args.report, stats["read"], stats["fallback"], "-o", html], check=True,
                       timeout=120)
        check_page("comparison", html, {"": loaded["read"], "other:": loaded["fallback"]},
                   ["app.bytes_read", "other:app.bytes_read"])
        job.finish()
    finally:
        job.close()


if __name__ == "__main__":
    sys.exit(main())
