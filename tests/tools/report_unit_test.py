#!/usr/bin/env python3
"""The job report (python/larder/report.py) on synthetic stats files: formatting, comparison,
old and full files, a page that opens offline, numbers that match their JSON.

Usage: /usr/bin/python3 tests/tools/report_unit_test.py [-v]
(Debian's python3 with python3-jinja2 and python3-matplotlib.) full_stats() and old_stats()
build realistic stats files; other tools may import them.
"""
import base64
import contextlib
import html.parser
import importlib.util
import io
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON_DIR = os.path.join(ROOT, "python")
REPORT_PY = os.path.join(PYTHON_DIR, "larder", "report.py")
WRAPPER = os.path.join(ROOT, "apps", "larder-report", "larder-report")

sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from report_numbers import parse_human  # noqa: E402

_spec = importlib.util.spec_from_file_location("larder_report", REPORT_PY)
report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(report)

GiB = 1 << 30
MiB = 1 << 20
KiB = 1 << 10
START_NS = 1714564800_000_000_000  # 2024-05-01 12:00:00 UTC


# ---- Synthetic stats files ----------------------------------------------------------------------

def _spread(values, node_of, buckets=64):
    """A skew measure the way the runtime computes it (runtime/stats/stats.cpp, spread_of)."""
    def bucket(v):
        return min(buckets - 1, v.bit_length())

    def histogram(vs):
        h = [0] * buckets
        for v in vs:
            h[bucket(v)] += 1
        return h

    sums = [0] * (max(node_of) + 1)
    for r, v in enumerate(values):
        sums[node_of[r]] += v
    max_rank = max(range(len(values)), key=lambda r: (values[r], -r))
    top = sorted(range(len(values)), key=lambda r: (-values[r], r))[:10]
    max_node = max(range(len(sums)), key=lambda n: (sums[n], -n))
    return {
        "max": values[max_rank], "median": sorted(values)[len(values) // 2],
        "total": sum(values), "max_rank": max_rank, "max_node": node_of[max_rank],
        "ranks_log2": histogram(values),
        "top_ranks": [{"rank": r, "node": node_of[r], "value": values[r]} for r in top],
        "nodes": {"max": sums[max_node], "median": sorted(sums)[len(sums) // 2],
                  "max_node": max_node, "log2": histogram(sums)},
    }


def _split(total, weights):
    """`total` shared out in proportion to `weights`, as integers summing to `total`."""
    whole = sum(weights)
    parts = [int(total * w / whole) for w in weights]
    parts[weights.index(max(weights))] += total - sum(parts)
    return parts


def _latency(rng, reads):
    """A bimodal latency histogram of `reads` reads, with its quantiles as the runtime has them."""
    weights = [0] * 40
    for bucket, w in ((12, 4), (13, 30), (14, 26), (15, 8), (16, 5), (17, 9), (18, 8), (19, 4),
                      (21, 0.6), (22, 1.2), (23, 1.0), (24, 0.4), (25, 0.05)):
        weights[bucket] = w * rng.uniform(0.9, 1.1)
    histogram = _split(reads, weights)

    def quantile(q):
        seen, target = 0, int(q * reads)
        for i, count in enumerate(histogram):
            seen += count
            if seen > target:
                return 2 << i
        return 0

    return {"reads": reads, "mean_ns": 94_113, "p50_ns": quantile(0.5), "p99_ns": quantile(0.99),
            "max_ns": 51_234_567, "histogram_log2_ns": histogram}


def old_stats():
    """A file of a Larder before the job report: the existing keys only."""
    rng = random.Random(7)
    return {
        "ranks": 16,
        "pfs": {"bytes_read": 6 * GiB, "read_ops": 1536, "stat_ops": 1100, "open_ops": 1536,
                "list_ops": 12},
        "hits": {"self": 30_000, "node": 52_000, "remote": 61_000,
                 "tier": {"mem": 143_000, "disk": 0}},
        "misses": 1536, "prefetches": 64, "fallbacks": 0, "waits": 812,
        "meta": {"hits": 88_000, "misses": 1112, "revalidations": 0, "changed": 0},
        "transport": {"bytes": 14 * GiB, "gets": 61_000, "errors": 0, "messages": 9_100},
        "directory": {"ops": 160_000, "retries": 3, "overflow_entries": 0,
                      "overflow_requests": 0, "refused": 0},
        "cache": {"bytes": 6 * GiB, "chunks": 1536},
        "app": {"read_calls": 144_536, "bytes_read": 36 * GiB},
        "wait_ns": 4_200_000_000,
        "node": {"answers": 40_000, "copies": 0, "copy_bytes": 0, "ns": 900_000_000,
                 "files": 0, "file_bytes": 0, "file_maps": 0, "file_dup_bytes": 0,
                 "file_maps_workers": 0, "file_no_room": 0, "file_failed": 0},
        "group": {"answers": 0}, "stale_chunks": 0,
        "loader": {"objects": 0, "absent": 0, "original": 0},
        "produce": {"files": 0, "bytes": 0, "pfs_bytes": 0, "refused": 0, "waits": 0,
                    "wait_ns": 0},
        "kept": {"bytes_adopted": 0, "chunks_adopted": 0, "files_adopted": 0, "bytes_evicted": 0,
                 "bytes_dropped_changed": 0, "bytes_dropped_unfinished": 0, "bytes_kept": 0},
        "integrity": {"checked": 0, "bytes_hashed": 0, "mismatches": 0, "refetched": 0, "ns": 0},
        "latency": _latency(rng, 144_536),
        "skew": {
            "bytes_served": {"max": 3 * GiB, "median": 880 * MiB, "total": 14 * GiB,
                             "max_rank": 5},
            "directory_ops_received": {"max": 14_000, "median": 9_900, "total": 160_000,
                                       "max_rank": 0},
            "remote_fetches": {"max": 4_400, "median": 3_800, "total": 61_000, "max_rank": 11},
            "wait_ns": {"max": 900_000_000, "median": 240_000_000, "total": 4_200_000_000,
                        "max_rank": 2},
        },
    }


def full_stats(seed=31, memory="8G", no_room=0.0):
    """A file with every key: 64 ranks on 8 nodes read a 48 GiB data set 36 times in an hour.
    `memory` is LARDER_MEM; `no_room` the share of reads that fell back for want of room."""
    rng = random.Random(seed)
    ranks, nodes, per_node = 64, 8, 8
    node_of = [r // per_node for r in range(ranks)]
    chunk = 4 * MiB
    app_bytes = 36 * 48 * GiB
    read_size = 256 * KiB
    calls = app_bytes // read_size
    kept = 6 * GiB
    fallback = int(app_bytes * no_room) // read_size * read_size + 77 * read_size
    loaded = 48 * GiB
    cached = app_bytes - loaded - fallback
    self_b, node_b, remote_b = _split(cached, [0.15, 0.26, 0.59])
    pfs_bytes = loaded - kept + fallback
    read_ops = (loaded - kept) // chunk + fallback // read_size
    stat_ops, open_ops, list_ops = 1_100, (loaded - kept) // chunk, 40
    pieces = [v // read_size for v in (self_b, node_b, remote_b)]
    causes = {"no_room": fallback // read_size - 77, "changed": 41, "directory": 12,
              "transport": 0, "integrity": 24, "other": 0}

    # The timeline: 120 intervals of 30 s; the first epoch loads, later ones read the cache.
    buckets, bucket_ns = 120, 30_000_000_000
    wave = [0.55 + 0.45 * abs(((i * 30) % 100) - 50) / 50 * rng.uniform(0.85, 1.0)
            for i in range(buckets)]
    first = [3.0, 2.6, 1.4, 0.3] + [0.0] * (buckets - 4)
    steady = [0.0, 0.2, 0.7] + [w for w in wave[3:]]
    blips = [rng.choice((0, 0, 0, 1)) * rng.uniform(0.2, 1) for _ in range(buckets)]
    pfs_weights = [f + 0.02 * b for f, b in zip(first, blips)]
    series = {
        "self_bytes": _split(self_b, steady), "node_bytes": _split(node_b, steady),
        "remote_bytes": _split(remote_b, steady), "loaded_bytes": _split(loaded, first),
        "fallback_bytes": _split(fallback, [0.1 + b for b in blips]),
        "pfs_bytes": _split(pfs_bytes, pfs_weights),
        "pfs_ops": _split(read_ops + stat_ops + open_ops + list_ops, pfs_weights),
        "kept_bytes": _split(kept, [1.0, 0.4] + [0.0] * (buckets - 2)),
    }
    series["app_bytes"] = [sum(series[k][i] for k in ("self_bytes", "node_bytes", "remote_bytes",
                                                      "loaded_bytes", "fallback_bytes"))
                           for i in range(buckets)]

    def per_rank(mean, hot_rank, hot_factor):
        return [int(mean * (hot_factor if r == hot_rank else rng.uniform(0.7, 1.3)))
                for r in range(ranks)]

    shard = "/lus/proj/imagenet/train/shard-{:05d}.tar"
    by_bytes = [{"path": shard.format(n), "bytes": (48 * MiB) + rng.randrange(0, 8) * chunk,
                 "ops": 13 + rng.randrange(0, 6)} for n in rng.sample(range(1024), 20)]
    by_bytes.sort(key=lambda e: -e["bytes"])
    by_ops = ([{"path": "/lus/proj/imagenet/train/index.json", "bytes": 2 * MiB, "ops": 96},
               {"path": "/lus/proj/imagenet/meta", "bytes": 0, "ops": 64}] +
              [{"path": e["path"], "bytes": e["bytes"], "ops": e["ops"] + 20}
               for e in by_bytes[:18]])
    by_ops.sort(key=lambda e: -e["ops"])
    stats = {
        "ranks": ranks,
        "pfs": {"bytes_read": pfs_bytes, "read_ops": read_ops, "stat_ops": stat_ops,
                "open_ops": open_ops, "list_ops": list_ops},
        "hits": {"self": pieces[0], "node": pieces[1], "remote": pieces[2],
                 "tier": {"mem": sum(pieces) * 91 // 100,
                          "disk": sum(pieces) - sum(pieces) * 91 // 100}},
        "misses": loaded // chunk, "prefetches": 1024, "fallbacks": sum(causes.values()),
        "waits": 5_310,
        "meta": {"hits": 1_843_900, "misses": 1_140, "revalidations": 0, "changed": 0},
        "transport": {"bytes": remote_b, "gets": remote_b // chunk, "errors": 0,
                      "messages": 48_211, "ns": 5_400_000_000_000},
        "directory": {"ops": 1_311_000, "retries": 14, "overflow_entries": 0,
                      "overflow_requests": 0, "refused": 0, "ns": 2_900_000_000_000},
        "cache": {"bytes": 48 * GiB, "chunks": 12_288},
        "app": {"read_calls": calls, "bytes_read": app_bytes},
        "wait_ns": 93_000_000_000,
        "node": {"answers": 980_000, "copies": 10_240, "copy_bytes": 40 * GiB,
                 "ns": 310_000_000_000, "files": 3, "file_bytes": 120 * MiB, "file_maps": 192,
                 "file_dup_bytes": 0, "file_maps_workers": 128, "file_no_room": 0,
                 "file_failed": 0},
        "group": {"answers": 0}, "stale_chunks": 0,
        "loader": {"objects": 180, "absent": 2_400, "original": 0},
        "produce": {"files": 0, "bytes": 0, "pfs_bytes": 0, "refused": 0, "waits": 0,
                    "wait_ns": 0},
        "kept": {"bytes_adopted": kept, "chunks_adopted": kept // chunk, "files_adopted": 8,
                 "bytes_evicted": 0, "bytes_dropped_changed": 3 * chunk,
                 "bytes_dropped_unfinished": 0, "bytes_kept": 48 * GiB},
        "integrity": {"checked": 11_776, "bytes_hashed": 48 * GiB, "mismatches": 1,
                      "refetched": 1, "ns": 12_400_000_000},
        "served": {"self_bytes": self_b, "node_bytes": node_b, "remote_bytes": remote_b,
                   "loaded_bytes": loaded, "fallback_bytes": fallback,
                   "disk_bytes": cached // 11},
        "fallback_causes": causes,
        "latency": _latency(rng, calls),
        "skew": {
            "bytes_served": _spread(per_rank(remote_b // ranks, 19, 4.1), node_of),
            "directory_ops_received": _spread(per_rank(1_311_000 // ranks, 0, 1.25), node_of),
            "remote_fetches": _spread(per_rank(remote_b // chunk // ranks, 41, 1.2), node_of),
            "wait_ns": _spread(per_rank(93_000_000_000 // ranks, 3, 2.7), node_of),
        },
        "job": {"nodes": nodes, "ranks_per_node": per_node, "start_unix_ns": START_NS,
                "duration_ns": 3_604_250_000_000,
                "mpi": "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: "
                       "v4.1.4, May 26, 2022",
                "transport": "ucx", "version": "0.9.0", "host": "gpu-node-0001",
                "settings": {"LARDER_MEM": memory, "LARDER_PREFIX": "/lus/proj/imagenet",
                             "LARDER_DISK": "/local/nvme/larder", "LARDER_INTEGRITY": "1",
                             "LARDER_KEEP": "1", "LARDER_STATS": "/home/u/larder-4711.json"}},
        "timeline": {"start_unix_ns": START_NS, "bucket_ns": bucket_ns, "buckets": buckets,
                     "series": series},
        "top_files": {"by_bytes": by_bytes, "by_ops": by_ops},
        "fallback_files": [
            {"path": "/lus/proj/imagenet/train/shard-00417.tar", "cause": "integrity",
             "count": 24},
            {"path": "/lus/proj/imagenet/train/labels.csv", "cause": "changed", "count": 41},
            {"path": "/lus/proj/imagenet/train/shard-00998.tar", "cause": "directory",
             "count": 12},
        ] + ([{"path": "/lus/proj/imagenet/train/shard-00012.tar", "cause": "no_room",
               "count": causes["no_room"]}] if causes["no_room"] else []),
    }
    return stats


# ---- Reading the page back ----------------------------------------------------------------------

class Page(html.parser.HTMLParser):
    """The parts of a report page the tests check: number spans, images, links, tags."""

    def __init__(self, text):
        super().__init__()
        self.numbers = []  # (attrs, text) of <span class="num">
        self.images = []   # attrs of <img>
        self.links = []    # (tag, attribute, value) of every src and href
        self.tags = set()
        self._open = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.add(tag)
        for name in ("src", "href"):
            if name in attrs:
                self.links.append((tag, name, attrs[name]))
        if tag == "img":
            self.images.append(attrs)
        if tag == "span" and "num" in (attrs.get("class") or "").split():
            self._open = [attrs, ""]

    def handle_data(self, data):
        if self._open is not None:
            self._open[1] += data

    def handle_endtag(self, tag):
        if tag == "span" and self._open is not None:
            self.numbers.append(tuple(self._open))
            self._open = None


def close(a, b, tolerance):
    return abs(a - b) <= tolerance * max(abs(a), abs(b))


class PageTest(unittest.TestCase):
    """assertHas/assertHasNot: a string in a page, without printing the page when it fails."""

    def assertHas(self, part, text):
        self.assertTrue(part in text, f"{part!r} is not in the page")

    def assertHasNot(self, part, text):
        self.assertFalse(part in text, f"{part!r} is in the page")


class FormattingTest(unittest.TestCase):
    def test_sizes(self):
        self.assertEqual(report.size_text(0), "0 B")
        self.assertEqual(report.size_text(1023), "1023 B")
        self.assertEqual(report.size_text(1024), "1.0 KiB")
        self.assertEqual(report.size_text(1536 * KiB), "1.5 MiB")
        self.assertEqual(report.size_text(48 * GiB), "48.0 GiB")
        self.assertEqual(report.size_text(3 << 40), "3.0 TiB")

    def test_counts(self):
        self.assertEqual(report.count_text(0), "0")
        self.assertEqual(report.count_text(999), "999")
        self.assertEqual(report.count_text(7_077_888), "7,077,888")

    def test_durations(self):
        self.assertEqual(report.duration_text(850), "850 ns")
        self.assertEqual(report.duration_text(1_500), "1.5 µs")
        self.assertEqual(report.duration_text(262_144), "262.1 µs")
        self.assertEqual(report.duration_text(27_356_330), "27.4 ms")
        self.assertEqual(report.duration_text(2_350_000_000), "2.35 s")
        self.assertEqual(report.duration_text(750 * 10**9), "12.5 min")
        self.assertEqual(report.duration_text(4500 * 10**9), "1.25 h")

    def test_dates(self):
        self.assertEqual(report.date_text(START_NS + 3 * 10**9), "2024-05-01 12:00:03 UTC")

    def test_shares(self):
        self.assertEqual(report.share_text(1, 37), "1/37")
        self.assertEqual(report.share_text(10, 37), "1/3.7")
        self.assertEqual(report.share_text(3, 4), "75 %")
        self.assertEqual(report.share_text(5, 4), "1.2×")
        self.assertEqual(report.share_text(0, 4), "none")
        self.assertIsNone(report.share_text(4, 0))
        self.assertIsNone(report.share_text(None, 4))

    def test_ratios(self):
        self.assertEqual(report.ratio_text(128, 32), "4.00×")
        self.assertEqual(report.ratio_text(1, 37), "0.027×")
        self.assertEqual(report.ratio_text(5000, 2), "2,500×")
        self.assertEqual(report.ratio_text(0, 5), "0×")
        self.assertEqual(report.ratio_text(5, 0), "—")
        self.assertEqual(report.ratio_text(0, 0), "—")
        self.assertEqual(report.ratio_text(None, 5), "—")

    def test_kinds(self):
        for key, kind in (("pfs.bytes_read", "bytes"), ("served.self_bytes", "bytes"),
                          ("cache.bytes", "bytes"), ("app.read_calls", "count"),
                          ("wait_ns", "duration"), ("directory.ns", "duration"),
                          ("job.start_unix_ns", "date"), ("skew.bytes_served.max", "bytes"),
                          ("skew.bytes_served.max_rank", "count"),
                          ("skew.wait_ns.nodes.median", "duration"),
                          ("skew.bytes_served.top_ranks.0.node", "count"),
                          ("top_files.by_ops.3.ops", "count"),
                          ("fallback_files.0.count", "count")):
            self.assertEqual(report.kind_of(key), kind, key)

    def test_value_at(self):
        stats = full_stats()
        self.assertEqual(report.value_at(stats, "pfs.bytes_read"), stats["pfs"]["bytes_read"])
        self.assertEqual(report.value_at(stats, "top_files.by_bytes.0.path"),
                         stats["top_files"]["by_bytes"][0]["path"])
        self.assertIsNone(report.value_at(stats, "top_files.by_bytes.99.bytes"))
        self.assertIsNone(report.value_at(stats, "pfs.bytes_read.x"))
        self.assertIsNone(report.number_at(stats, "job.host"))


class ComparisonTest(PageTest):
    def rows(self, first, second):
        a = report.JobView(first, "a.json")
        b = report.JobView(second, "b.json", "other:")
        section = report.comparison_section(a, b)
        return {row["label"]: row for group in section["groups"] for row in group["rows"]}

    def test_ratios(self):
        first = full_stats()
        second = full_stats()
        second["pfs"]["read_ops"] = first["pfs"]["read_ops"] * 4
        second["pfs"]["bytes_read"] = first["pfs"]["bytes_read"] // 2
        rows = self.rows(first, second)
        self.assertIn(">4.00×<", rows["pfs.read_ops"]["ratio"])
        self.assertIn(">0.5×<", rows["pfs.bytes_read"]["ratio"])
        self.assertIn('data-key="other:pfs.read_ops"', rows["pfs.read_ops"]["b"])
        self.assertIn(">1.00×<", rows["app.bytes_read"]["ratio"])

    def test_a_key_missing_in_one_file(self):
        rows = self.rows(old_stats(), full_stats())
        served = rows["served.self_bytes"]
        self.assertIn("—", served["a"])
        self.assertIn('data-key="other:served.self_bytes"', served["b"])
        self.assertIn(">—<", served["ratio"])
        rows = self.rows(full_stats(), old_stats())
        self.assertIn(">—<", rows["served.self_bytes"]["ratio"])
        self.assertIn("—", rows["job.nodes"]["b"])

    def test_zero_denominators(self):
        first, second = old_stats(), old_stats()
        second["fallbacks"] = 5
        second["produce"]["files"] = 3
        rows = self.rows(first, second)
        self.assertIn(">—<", rows["fallbacks"]["ratio"])     # 5 / 0
        self.assertIn(">—<", rows["produce.files"]["ratio"])  # 3 / 0
        self.assertNotIn("produce.bytes", rows)  # 0 in both: left out of its group

    def test_page(self):
        first, second = full_stats(), full_stats(seed=5, memory="4G", no_room=0.01)
        text = report.render(first, second, ("before.json", "after.json"))
        self.assertHas("before.json", text)
        self.assertHas("after.json", text)
        self.assertHas('id="compare"', text)
        check_page(self, text, first, second)
        keys = {attrs["data-key"] for attrs, _ in Page(text).numbers}
        self.assertIn("other:pfs.bytes_read", keys)
        self.assertIn("other:skew.bytes_served.max", keys)


def check_page(test, text, stats, other=None):
    """What every page must be: offline, images inline, numbers true to their JSON."""
    page = Page(text)
    test.assertNotIn("script", page.tags)
    test.assertNotIn("<script", text.lower())
    test.assertNotIn("link", page.tags)
    test.assertNotRegex(text, r"(?i)(src|href)\s*=\s*[\"']?\s*(https?:)?//")
    for tag, name, value in page.links:
        test.assertTrue(value.startswith("data:image/png;base64,") if name == "src"
                        else value.startswith("#"), f"{tag} {name}={value[:60]}")
    for attrs in page.images:
        test.assertTrue(attrs.get("alt"), "an <img> without alt text")
        png = base64.b64decode(attrs["src"].split(",", 1)[1])
        test.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
        width, _ = struct.unpack(">II", png[16:24])
        test.assertLessEqual(width, 900)
    test.assertTrue(page.numbers)
    for attrs, human in page.numbers:
        key, kind = attrs["data-key"], attrs["data-kind"]
        source = stats
        if key.startswith("other:"):
            test.assertIsNotNone(other, key)
            source, key = other, key[len("other:"):]
        value = report.value_at(source, key)
        test.assertEqual(json.loads(attrs["data-value"]), value, key)
        said = parse_human(kind, human)
        if kind == "count":
            test.assertEqual(said, value, key)
        elif kind == "date":
            test.assertLess(abs(said - value), 1e9, key)
        else:
            test.assertTrue(close(said, value, 0.05), f"{key}: {human} for {value}")


class RenderTest(PageTest):
    def test_full_file(self):
        stats = full_stats()
        text = report.render(stats, names=("job-4711.json", None))
        check_page(self, text, stats)
        page = Page(text)
        keys = {attrs["data-key"] for attrs, _ in page.numbers}
        for key in ("pfs.bytes_read", "app.bytes_read", "served.self_bytes", "job.nodes",
                    "job.duration_ns", "skew.bytes_served.max", "skew.bytes_served.max_rank",
                    "skew.bytes_served.max_node", "latency.p99_ns",
                    "top_files.by_bytes.0.bytes", "fallback_files.0.count",
                    "fallback_causes.integrity", "kept.bytes_adopted", "integrity.mismatches"):
            self.assertIn(key, keys)
        # headline, served, timeline, one per skew measure, latency
        self.assertEqual(len(page.images), 1 + 1 + 1 + 4 + 1)
        order = [text.index(f'id="{key}"') for key, _ in report.SECTIONS]
        self.assertEqual(order, sorted(order), "sections in order")
        self.assertHas("LARDER_MEM", text)
        self.assertHas("Hot spot: rank", text)  # bytes_served: rank 19 at 4.1x the median
        self.assertHas("/lus/proj/imagenet/train/labels.csv", text)
        self.assertHas("the file changed during the job", text)
        self.assertHas("None in this job", text)  # produced files
        self.assertHasNot(report.NOT_RECORDED, text.replace(
            f'title="{report.NOT_RECORDED}"', "").replace(
            f"{report.NOT_RECORDED} of Larder.</footer>", ""))
        share = round(stats["app"]["bytes_read"] / stats["pfs"]["bytes_read"])
        self.assertHas(f"1/{share}", text)

    def test_old_file(self):
        stats = old_stats()
        text = report.render(stats)
        check_page(self, text, stats)
        self.assertHas(report.NOT_RECORDED, text)
        self.assertHas("read pieces", text)
        self.assertHas('data-key="hits.self"', text)
        self.assertHasNot('data-key="served.', text)
        self.assertHas("The timeline: not recorded", text)
        self.assertHas("Which files the PFS served: not recorded", text)
        self.assertHas("How the ranks spread (the histograms, the largest ranks, the nodes): "
                       "not recorded", text)
        self.assertEqual(len(Page(text).images), 3)  # headline, served, latency

    def test_nearly_empty_file(self):
        stats = {"ranks": 2, "pfs": {"bytes_read": 1024}}
        text = report.render(stats)
        check_page(self, text, stats)
        self.assertHas("Read latency: not recorded", text)


class CommandTest(PageTest):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.full = self.write("full.json", full_stats())
        self.old = self.write("old.json", old_stats())

    def write(self, name, content):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(content if isinstance(content, str) else json.dumps(content))
        return path

    def run_cmd(self, *args, env=None):
        return subprocess.run(args, capture_output=True, text=True, timeout=120,
                              cwd=self.dir.name, env=env)

    def test_main(self):
        out = os.path.join(self.dir.name, "r.html")
        with contextlib.redirect_stdout(io.StringIO()) as said:
            self.assertEqual(report.main([self.full, self.old, "-o", out]), 0)
        self.assertEqual(said.getvalue(), f"larder report: wrote {out}\n")
        with open(out, encoding="utf-8") as f:
            check_page(self, f.read(), full_stats(), old_stats())

    def test_errors(self):
        bad = self.write("bad.json", "{ not json")
        array = self.write("array.json", "[1, 2]")
        for args, message in (([os.path.join(self.dir.name, "missing.json")], "cannot read"),
                              ([bad], "is not a Larder stats JSON object"),
                              ([array], "is not a Larder stats JSON object"),
                              ([self.full, "-o", os.path.join(self.dir.name, "no", "x.html")],
                               "cannot write")):
            r = self.run_cmd(sys.executable, REPORT_PY, *args)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(message, r.stderr)
        r = self.run_cmd(sys.executable, REPORT_PY, self.full, self.old, self.old)
        self.assertEqual(r.returncode, 2)

    def test_python_m_larder(self):
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
        r = self.run_cmd(sys.executable, "-m", "larder", "report", self.old, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.dir.name, "old.html")))
        r = self.run_cmd(sys.executable, "-m", "larder", "frobnicate", env=env)
        self.assertEqual(r.returncode, 2)
        self.assertIn("usage: python3 -m larder report", r.stderr)
        r = self.run_cmd(sys.executable, "-m", "larder", env=env)
        self.assertEqual(r.returncode, 2)

    def test_wrapper(self):
        r = self.run_cmd(WRAPPER, self.full, "-o", "-")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("<!DOCTYPE html>"))

    def test_missing_package(self):
        for module, package in (("jinja2", "python3-jinja2"),
                                ("matplotlib", "python3-matplotlib")):
            code = (f"import sys, runpy; sys.modules[{module!r}] = None; "
                    f"sys.argv = ['report.py', {self.full!r}]; "
                    f"runpy.run_path({REPORT_PY!r}, run_name='__main__')")
            r = self.run_cmd(sys.executable, "-c", code)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(package, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


if __name__ == "__main__":
    unittest.main()
