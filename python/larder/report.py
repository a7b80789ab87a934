"""larder report: one self-contained HTML page about a Larder job, made from its stats JSON.

Usage:
    python3 -m larder report STATS.json [OTHER.json] [-o REPORT.html]
    larder-report STATS.json [OTHER.json] [-o REPORT.html]

STATS.json is the file a job wrote with LARDER_STATS=... (docs/user-guide.md). The page opens
offline: inline CSS, the plots as PNG data: URIs, no script, nothing fetched. Its sections: the
job; what the application asked for against what the PFS served; where reads were served; the
job over time; the files that cost the PFS most; the load over ranks and nodes; read latency;
node files, shared objects, produced files, kept data and integrity; every counter. A section
whose keys the file lacks (written by an older Larder) says "not recorded by this version".
With OTHER.json, a last section puts the two jobs' numbers side by side with OTHER/STATS ratios.
The page is written to -o (- for stdout), by default STATS.html (STATS-vs-OTHER.html) in the
current directory.

Every number taken from the JSON is written as
    <span class="num" data-key="pfs.bytes_read" data-kind="bytes" data-value="1234">1.2 KiB</span>
data-key being its dotted path in the file ("other:..." for the second file), data-kind one of
bytes, count, duration (ns) and date (Unix ns). Numbers computed here (sums, shares, ratios) are
<span class="derived"> without a key.

From Python: render(stats, other=None) -> str (stats: the parsed JSON). Needs jinja2 and
matplotlib (Debian: python3-jinja2, python3-matplotlib); without them the command exits with
status 2, as it does for a file it cannot read or parse.
"""
import argparse
import base64
import datetime
import functools
import io
import json
import os
import sys
from collections import namedtuple

MISSING_PACKAGES = []
try:
    import jinja2
    from markupsafe import Markup
except ImportError:
    MISSING_PACKAGES.append("python3-jinja2")
try:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib import ticker
except ImportError:
    MISSING_PACKAGES.append("python3-matplotlib")

TEMPLATE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
TEMPLATE = "report.html.j2"
NOT_RECORDED = "not recorded by this version"
DPI = 100
WIDTH_IN = 8.6  # 860 px
HOT_SPOT = 2.0  # a maximum this many times the median is called a hot spot

# One colour per source of a read, the same in every chart and table (Okabe-Ito palette).
COLOURS = {
    "self": "#0072B2",
    "node": "#56B4E9",
    "remote": "#009E73",
    "loaded": "#E69F00",
    "fallback": "#D55E00",
    "kept": "#8E6BB8",
    "pfs": "#3A3A3A",
    "pfs_ops": "#CC79A7",
    "prefetch": "#009E73",
    "app": "#C8C8C8",
    "bars": "#5A6E8C",
    "max": "#B3261E",
}

Source = namedtuple("Source", "name label bytes_key pieces_key")
SOURCES = (
    Source("self", "own memory", "served.self_bytes", "hits.self"),
    Source("node", "a node peer (shared memory)", "served.node_bytes", "hits.node"),
    Source("remote", "another node", "served.remote_bytes", "hits.remote"),
    Source("loaded", "loaded from the PFS (misses)", "served.loaded_bytes", "misses"),
    Source("fallback", "fallback to the PFS", "served.fallback_bytes", "fallbacks"),
)

FALLBACK_CAUSES = (
    ("no_room", "no room in memory or on disk"),
    ("changed", "the file changed during the job"),
    ("directory", "the directory said: read it yourself"),
    ("transport", "the copy from its holder failed"),
    ("integrity", "the copy failed its content check"),
    ("other", "other"),
)
CAUSE_LABELS = dict(FALLBACK_CAUSES)

# skew.* measures: (name, what it counts per rank, kind of its values)
SKEW_MEASURES = (
    ("bytes_served", "bytes other ranks copied out of a rank's memory", "bytes"),
    ("directory_ops_received", "directory operations a rank's shard received", "count"),
    ("remote_fetches", "transfers a rank made from other nodes", "count"),
    ("wait_ns", "time a rank waited for another rank's load", "duration"),
)
SKEW_KINDS = {name: kind for name, _, kind in SKEW_MEASURES}

# Section 8: small tables, each shown when one of its counters is not zero.
DETAIL_GROUPS = (
    ("Node sharing", (
        ("node.answers", "answers found in the node's table"),
        ("node.ns", "time spent on them"),
        ("node.copies", "chunks of other nodes copied once for the whole node"),
        ("node.copy_bytes", "their bytes"),
        ("group.answers", "answers from the node's group"),
    )),
    ("Node files", (
        ("node.files", "node files made (one copy per node of a mapped file)"),
        ("node.file_bytes", "their bytes"),
        ("node.file_maps", "mappings served from them"),
        ("node.file_maps_workers", "of those, asked for by worker processes"),
        ("node.file_dup_bytes", "bytes held twice on a node"),
        ("node.file_no_room", "requests not served: no room"),
        ("node.file_failed", "requests not served: failed"),
    )),
    ("Worker processes", (
        ("workers.lookups", "stat answers the ranks gave their workers"),
        ("workers.places_sent", "of those, sent with the place of the file's first chunk"),
        ("workers.places", "places of chunks asked for on their own"),
        ("workers.reads", "reads the ranks made for their workers (bytes not on the node)"),
        ("workers.answers_found", "stat answers workers found in the node table themselves"),
        ("workers.places_found", "chunk places workers found in the node table themselves"),
    )),
    ("Told the order (schedules)", (
        ("prefetch.entries", "schedule entries handed to Larder"),
        ("prefetch.chunks", "chunks made ready on their node ahead of their reads"),
        ("prefetch.bytes", "their bytes"),
        ("prefetch.loaded_bytes", "of those, bytes read from the PFS for a schedule"),
        ("prefetch.ready", "chunk reads that found their chunk made ready"),
        ("prefetch.waited", "chunk reads that waited for their chunk's prefetch"),
        ("prefetch.wait_ns", "time they waited"),
        ("prefetch.unused_bytes", "bytes made ready (or staged) that no read used"),
        ("prefetch.unused_chunks", "their chunks"),
        ("prefetch.skipped", "entries naming nothing Larder caches"),
        ("prefetch.no_room", "batches past the node's budget"),
        ("prefetch.staged_bytes", "bytes read ahead into the ranks' stages past the budget"),
        ("prefetch.staged_chunks", "their chunks"),
        ("prefetch.staged_reads", "chunk reads served from a stage"),
        ("prefetch.stage_full", "times a stage had no room"),
    )),
    ("Shared objects", (
        ("loader.objects", "shared objects the loader opened from node files"),
        ("loader.absent", "search candidates answered 'does not exist' by the cache"),
        ("loader.original", "loads sent to the original path"),
    )),
    ("Produced files", (
        ("produce.files", "files published"),
        ("produce.bytes", "their bytes"),
        ("produce.pfs_bytes", "bytes written to the PFS"),
        ("produce.refused", "opens refused"),
        ("produce.waits", "reads that waited for a file not yet published"),
        ("produce.wait_ns", "time they waited"),
    )),
    ("Kept data (other steps of the allocation)", (
        ("kept.bytes_adopted", "bytes an earlier step kept, used instead of the PFS"),
        ("kept.chunks_adopted", "their chunks"),
        ("kept.files_adopted", "kept files a node took over"),
        ("kept.node_files", "node files that are a kept file, not a copy"),
        ("kept.bytes_kept", "bytes left on the nodes for later steps"),
        ("kept.bytes_evicted", "kept bytes evicted"),
        ("kept.bytes_demoted", "kept bytes moved from memory to the disk tier"),
        ("kept.bytes_dropped_changed", "kept bytes dropped: their file changed"),
        ("kept.bytes_dropped_unfinished", "kept bytes dropped: their writer did not finish"),
        ("kept.answers_adopted", "stat answers and listings an earlier step kept, used"),
        ("kept.answers_kept", "stat answers and listings left for later steps"),
        ("kept.paths_checked_ahead", "kept path answers checked against the PFS at the start"),
    )),
    ("Integrity", (
        ("integrity.checked", "chunks checked against their content hash"),
        ("integrity.bytes_hashed", "bytes hashed"),
        ("integrity.ns", "time spent hashing"),
        ("integrity.mismatches", "copies that did not match (discarded)"),
        ("integrity.refetched", "reads that took the bytes from another copy or the PFS"),
        ("integrity.reloaded", "chunks a node took from the PFS once for its ranks after a bad copy"),
    )),
)

# Top-level keys with a section of their own: not repeated in the list of every counter.
SECTION_KEYS = ("job", "latency", "skew", "timeline", "top_files", "fallback_files")

SECTIONS = (
    ("job", "The job"),
    ("headline", "What the PFS was spared"),
    ("served", "Where reads were served"),
    ("timeline", "The job over time"),
    ("files", "Files that cost the PFS most"),
    ("load", "Load over ranks and nodes"),
    ("latency", "Read latency"),
    ("details", "Node files, shared objects, produced files, kept data, integrity"),
)

_STYLE = {
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e4e4e4",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    "axes.edgecolor": "#888888",
    "legend.frameon": False,
    "legend.fontsize": 8,
}


class ReportError(Exception):
    """A report that cannot be made: one message for the user."""


# ---- Human text -------------------------------------------------------------------------------

SIZE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def _size_scale(value):
    """(divisor, unit) of the largest binary unit not above `value`."""
    unit = 0
    while value >= 1024 ** (unit + 1) and unit + 1 < len(SIZE_UNITS):
        unit += 1
    return 1024 ** unit, SIZE_UNITS[unit]


def size_text(n):
    """Bytes in binary units: '512 B', '1.5 KiB', '12.0 GiB'."""
    divisor, unit = _size_scale(abs(n))
    return f"{n:.0f} B" if divisor == 1 else f"{n / divisor:.1f} {unit}"


def count_text(n):
    """A count with thousands separators: '1,234,567'."""
    return f"{n:,.0f}"


def duration_text(ns):
    """Nanoseconds as '850 ns', '12.3 µs', '4.5 ms', '2.35 s', '12.5 min' or '1.25 h'."""
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.1f} µs"
    if ns < 1e9:
        return f"{ns / 1e6:.1f} ms"
    if ns < 60e9:
        return f"{ns / 1e9:.2f} s"
    if ns < 3600e9:
        return f"{ns / 60e9:.1f} min"
    return f"{ns / 3600e9:.2f} h"


def date_text(unix_ns):
    """A Unix time in ns as '2024-05-01 12:00:03 UTC'."""
    when = datetime.datetime.fromtimestamp(unix_ns / 1e9, tz=datetime.timezone.utc)
    return when.strftime("%Y-%m-%d %H:%M:%S UTC")


TEXT = {"bytes": size_text, "count": count_text, "duration": duration_text, "date": date_text}


def share_text(part, whole):
    """How much of `whole` `part` is, as in "the PFS served 1/37 of the bytes": 1/N below a
    half, a percentage up to the whole, N× beyond; None when either is unknown or whole is 0."""
    if part is None or whole is None or whole == 0:
        return None
    if part == 0:
        return "none"
    fraction = part / whole
    if fraction < 0.5:
        n = whole / part
        return f"1/{n:.1f}" if n < 10 else f"1/{n:,.0f}"
    if fraction <= 1:
        return f"{100 * fraction:.0f} %"
    return f"{fraction:.1f}×"


def percent_text(part, whole):
    """'12.5 %' ('< 0.1 %' for a part too small to show), or None when either is unknown or
    whole is 0."""
    if part is None or whole is None or whole == 0:
        return None
    percent = 100 * part / whole
    return "< 0.1 %" if 0 < percent < 0.05 else f"{percent:.1f} %"


def ratio_text(new, old):
    """new/old for the comparison: '4.00×', '0.027×'; '—' when either is unknown or old is 0."""
    if new is None or old is None or old == 0:
        return "—"
    r = new / old
    if r >= 100:
        return f"{r:,.0f}×"
    if r >= 10:
        return f"{r:.1f}×"
    if r >= 1:
        return f"{r:.2f}×"
    return f"{r:.3g}×"


def kind_of(key):
    """The kind of the number at dotted `key`: bytes, count, duration (ns) or date (Unix ns)."""
    parts = key.split(".")
    last = parts[-1]
    if last in ("max_rank", "max_node", "rank", "node"):
        return "count"
    if parts[0] == "skew" and len(parts) > 1:
        return SKEW_KINDS.get(parts[1], "count")
    if last.endswith("unix_ns"):
        return "date"
    if last == "ns" or last.endswith("_ns"):
        return "duration"
    if "bytes" in last:
        return "bytes"
    return "count"


# ---- The JSON ---------------------------------------------------------------------------------

def value_at(stats, key):
    """The value at dotted `key` ("skew.bytes_served.top_ranks.0.rank"), or None."""
    node = stats
    for part in key.split("."):
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number_at(stats, key):
    """The number at dotted `key`, or None when it is absent or not a number."""
    value = value_at(stats, key)
    return value if is_number(value) else None


def counter_keys(stats, prefix=""):
    """The dotted keys of the plain counters, in the file's order: every number outside the
    sections of their own (SECTION_KEYS)."""
    for name, value in stats.items():
        if not prefix and name in SECTION_KEYS:
            continue
        if isinstance(value, dict):
            yield from counter_keys(value, f"{prefix}{name}.")
        elif is_number(value):
            yield prefix + name


def load(path):
    """The stats file at `path` as a dict; ReportError when it cannot be read or parsed."""
    try:
        with open(path, encoding="utf-8") as f:
            stats = json.load(f)
    except OSError as e:
        raise ReportError(f"cannot read {path}: {e.strerror}") from e
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
        raise ReportError(f"{path} is not a Larder stats JSON object") from e
    if not isinstance(stats, dict):
        raise ReportError(f"{path} is not a Larder stats JSON object")
    return stats


# ---- HTML pieces ------------------------------------------------------------------------------

def number_html(key, value, kind):
    return Markup('<span class="num" data-key="{}" data-kind="{}" data-value="{}">{}</span>'
                  ).format(key, kind, json.dumps(value), TEXT[kind](value))


def derived(text, changed=False):
    """A number computed here: a sum, a share, a ratio (`changed`: a ratio far from 1)."""
    return Markup('<span class="derived{}">{}</span>').format(" changed" if changed else "", text)


def missing():
    return Markup('<span class="missing" title="{}">—</span>').format(NOT_RECORDED)


class JobView:
    """One stats file as the template reads it: its numbers by dotted key, as <span>s."""

    def __init__(self, stats, name, prefix=""):
        self.stats = stats
        self.name = name
        self.prefix = prefix  # of the data-keys: "other:" for the second file

    def get(self, key):
        return number_at(self.stats, key)

    def has(self, key):
        return value_at(self.stats, key) is not None

    def sum(self, *keys):
        """The sum of the counters at `keys`, None when one is missing."""
        values = [self.get(k) for k in keys]
        return None if None in values else sum(values)

    def n(self, key):
        """The number at `key` as its <span>, or a dash when the file lacks it."""
        value = self.get(key)
        if value is None:
            return missing()
        return number_html(self.prefix + key, value, kind_of(key))

    def s(self, key):
        """The string at `key`, or a dash."""
        value = value_at(self.stats, key)
        return value if isinstance(value, str) and value else missing()


def derived_sum(view, keys):
    """The sum of the counts at `keys` as a derived number, or a dash."""
    total = view.sum(*keys)
    return missing() if total is None else derived(count_text(total))


# ---- Plots ------------------------------------------------------------------------------------

def _figure(height, ncols=1, **kwargs):
    return plt.subplots(1, ncols, figsize=(WIDTH_IN, height), dpi=DPI, layout="constrained",
                        **kwargs)


def _png(fig):
    """The figure as a data: URI (and closed)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _compact(kind, value):
    """Short axis text: '4 KiB', '67 ms', '1.1 s', '12k'."""
    if kind == "count":
        for step, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
            if value >= step:
                n = value / step
                return f"{n:.0f}{suffix}" if n >= 10 else f"{n:.2g}{suffix}"
        return f"{value:g}"
    number, unit = (size_text if kind == "bytes" else duration_text)(value).split(" ")
    number = float(number)
    return f"{number:.0f} {unit}" if number >= 10 or number.is_integer() else f"{number:.1f} {unit}"


def headline_plot(rows):
    """Bars: what the PFS served as a percentage of what a job without the cache would have
    asked it for. rows: [(label, app, pfs)] with app > 0."""
    fig, ax = _figure(0.42 * len(rows) + 0.8)
    y = range(len(rows))
    pct = [100 * pfs / app for _, app, pfs in rows]
    ax.barh(y, [100] * len(rows), height=0.6, color=COLOURS["app"],
            label="a job without the cache")
    ax.barh(y, pct, height=0.6, color=COLOURS["pfs"], label="the PFS, with Larder")
    top = max(100, *pct)
    for yi, p, (_, app, pfs) in zip(y, pct, rows):
        ax.text(p + top * 0.01, yi, share_text(pfs, app), va="center", fontsize=8)
    ax.set_yticks(list(y), [label for label, _, _ in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, top * 1.1)
    ax.set_xlabel("% of what a job without the cache would have asked the PFS for")
    ax.grid(axis="y", visible=False)
    ax.legend(loc="lower right", bbox_to_anchor=(1, 1), ncol=2)
    return _png(fig)


def served_plot(bars, unit):
    """One 100 % bar per job: the shares of the sources. bars: [(label, [value per source])]."""
    fig, ax = _figure(0.45 * len(bars) + 0.55)
    for i, (_, values) in enumerate(bars):
        total = sum(values) or 1
        left = 0.0
        for source, value in zip(SOURCES, values):
            share = 100 * value / total
            ax.barh(i, share, left=left, height=0.6, color=COLOURS[source.name])
            if share >= 6:
                ax.text(left + share / 2, i, f"{share:.0f} %", ha="center", va="center",
                        fontsize=8, color="#111111")
            left += share
    ax.set_yticks(range(len(bars)), [label for label, _ in bars])
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel(f"% of the {unit}")
    ax.grid(axis="y", visible=False)
    return _png(fig)


def series_values(series, name, buckets):
    """timeline.series[name] as `buckets` numbers (missing ones 0)."""
    values = series.get(name)
    values = (values if isinstance(values, list) else [])[:buckets]
    return [v if is_number(v) else 0 for v in values] + [0] * (buckets - len(values))


def timeline_plot(series, buckets, bucket_ns):
    """Two panels over seconds since the start: bytes read per second by source (stacked), and
    the PFS's bytes and operations per second."""
    seconds = bucket_ns / 1e9
    x = [(i + 0.5) * seconds for i in range(buckets)]

    def rate(name):
        return [v / seconds for v in series_values(series, name, buckets)]

    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(WIDTH_IN, 5.0), dpi=DPI,
                                      layout="constrained", height_ratios=(3, 2))
    rates = [rate(f"{s.name}_bytes") for s in SOURCES]
    peak = max((sum(col) for col in zip(*rates)), default=0)
    divisor, unit = _size_scale(peak)
    top.stackplot(x, *[[v / divisor for v in r] for r in rates],
                  colors=[COLOURS[s.name] for s in SOURCES], labels=[s.label for s in SOURCES])
    kept = rate("kept_bytes")
    if any(kept):
        top.plot(x, [v / divisor for v in kept], color=COLOURS["kept"], linestyle="--",
                 label="of which from kept data")
    top.set_ylabel(f"read, {unit}/s")
    top.legend(loc="lower left", bbox_to_anchor=(0, 1), ncol=3)
    pfs_bytes = rate("pfs_bytes")
    prefetch = rate("prefetch_bytes")
    staged = rate("staged_bytes")  # absent from reports written before the stage: zeros
    divisor, unit = _size_scale(max(pfs_bytes + prefetch + staged, default=0))
    bottom.plot(x, [v / divisor for v in pfs_bytes], color=COLOURS["pfs"],
                label="PFS bytes/s (left)")
    if any(prefetch):  # told the order (larder_schedule): chunks made ready on their node ahead
        bottom.plot(x, [v / divisor for v in prefetch], color=COLOURS["prefetch"],
                    linestyle=":", label="made ready ahead by schedules, bytes/s (left)")
    if any(staged):  # past the budget: read ahead into the ranks' stages
        bottom.plot(x, [v / divisor for v in staged], color=COLOURS["prefetch"],
                    linestyle="-.", label="read ahead into stages past the budget, bytes/s (left)")
    bottom.set_ylabel(f"PFS, {unit}/s")
    ops = bottom.twinx()
    ops.spines["right"].set_visible(True)
    ops.grid(False)
    ops.plot(x, rate("pfs_ops"), color=COLOURS["pfs_ops"], linestyle="--",
             label="PFS operations/s (right)")
    ops.set_ylabel("PFS operations/s")
    bottom.legend(handles=bottom.get_lines() + ops.get_lines(), loc="upper right")
    bottom.set_xlabel("seconds since the start")
    bottom.set_xlim(0, buckets * seconds)
    for ax in (top, bottom, ops):
        ax.set_ylim(bottom=0)
    return _png(fig)


def _log2_bars(ax, counts, kind, who, max_value):
    """Bars of a log2 histogram (bucket 0: the zeros, b > 0: [2^(b-1), 2^b)); the bucket of
    `max_value` stands out."""
    counts = [c if is_number(c) else 0 for c in counts]
    used = [b for b, c in enumerate(counts) if c]
    if not used:
        ax.text(0.5, 0.5, "no values", ha="center", va="center", transform=ax.transAxes)
        return
    lo, hi = used[0], used[-1]
    if hi - lo < 5:  # a few bars of context
        lo, hi = max(0, hi - 5), max(hi, 5)
    buckets = list(range(lo, min(hi, len(counts) - 1) + 1))
    peak = 0 if not max_value else int(max_value).bit_length()
    ax.bar(buckets, [counts[b] for b in buckets], width=0.85,
           color=[COLOURS["max"] if b == peak else COLOURS["bars"] for b in buckets])
    labels = ["0" if b == 0 else _compact(kind, 2 ** (b - 1)) for b in buckets]
    ax.set_xticks(buckets, labels, rotation=45 if len(buckets) > 8 else 0,
                  ha="right" if len(buckets) > 8 else "center")
    ax.yaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    ax.set_ylabel(who)
    ax.set_xlabel("value at least")
    ax.grid(axis="x", visible=False)


def skew_plot(kind, ranks_log2, rank_max, nodes_log2=None, node_max=None):
    """The ranks (and nodes) by the log2 bucket of their value."""
    panels = 2 if nodes_log2 else 1
    fig, axes = _figure(2.4, ncols=panels, squeeze=False)
    _log2_bars(axes[0][0], ranks_log2, kind, "ranks", rank_max)
    if nodes_log2:
        _log2_bars(axes[0][1], nodes_log2, kind, "nodes", node_max)
    return _png(fig)


def latency_plot(histogram, marks):
    """The read-latency histogram on a log time axis, with lines at `marks` [(label, ns)]."""
    counts = [c if is_number(c) else 0 for c in histogram]
    used = [i for i, c in enumerate(counts) if c]
    fig, ax = _figure(2.6)
    lo, hi = used[0], used[-1]
    ax.bar([2 ** i for i in range(lo, hi + 1)], counts[lo:hi + 1],
           width=[2 ** i for i in range(lo, hi + 1)], align="edge", color=COLOURS["bars"],
           edgecolor="white", linewidth=0.5)
    ax.set_xscale("log")
    ax.set_xlim(2 ** lo, max([2 ** (hi + 1)] + [ns * 1.2 for _, ns in marks if ns]))
    ax.xaxis.set_major_locator(ticker.LogLocator(base=10))
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: _compact("duration", v)))
    for (label, ns), style in zip(marks, ("--", "-.", ":")):
        if ns:
            ax.axvline(ns, color="#222222", linestyle=style, linewidth=1,
                       label=f"{label} {duration_text(ns)}")
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: _compact("count", v)))
    ax.set_xlabel("read latency")
    ax.set_ylabel("reads")
    ax.grid(axis="x", visible=False)
    ax.legend(loc="lower right", bbox_to_anchor=(1, 1), ncol=3)
    return _png(fig)


# ---- Sections ---------------------------------------------------------------------------------

def job_section(a):
    """1. The job: size, time, software, settings."""
    rows = [
        ("ranks", a.n("ranks")),
        ("nodes", a.n("job.nodes")),
        ("ranks per node (the most on one node)", a.n("job.ranks_per_node")),
        ("started", a.n("job.start_unix_ns")),
        ("duration", a.n("job.duration_ns")),
        ("MPI", a.s("job.mpi")),
        ("transport between nodes", a.s("job.transport")),
        ("Larder version", a.s("job.version")),
        ("host of rank 0", a.s("job.host")),
    ]
    settings = value_at(a.stats, "job.settings")
    return {
        "recorded": isinstance(value_at(a.stats, "job"), dict),
        "rows": rows,
        "settings": sorted(settings.items()) if isinstance(settings, dict) else None,
    }


def headline_section(a):
    """2. What the application asked for against what the PFS served."""
    meta_app = a.sum("meta.hits", "meta.misses")
    meta_pfs = a.sum("pfs.stat_ops", "pfs.open_ops", "pfs.list_ops")
    measures = (
        ("bytes", a.get("app.bytes_read"), a.get("pfs.bytes_read")),
        ("read operations", a.get("app.read_calls"), a.get("pfs.read_ops")),
        ("metadata operations", meta_app, meta_pfs),
    )
    rows = [
        {"what": "bytes", "app": a.n("app.bytes_read"), "pfs": a.n("pfs.bytes_read")},
        {"what": "read operations", "app": a.n("app.read_calls"), "pfs": a.n("pfs.read_ops")},
        {"what": "metadata operations (lookups, opens, listings)",
         "app": Markup("{} <small>({} answered by the cache, {} by the PFS)</small>").format(
             derived_sum(a, ("meta.hits", "meta.misses")), a.n("meta.hits"), a.n("meta.misses")),
         "pfs": Markup("{} <small>({} lookups, {} opens, {} listings)</small>").format(
             derived_sum(a, ("pfs.stat_ops", "pfs.open_ops", "pfs.list_ops")),
             a.n("pfs.stat_ops"), a.n("pfs.open_ops"), a.n("pfs.list_ops"))},
    ]
    for row, (what, app, pfs) in zip(rows, measures):
        text = share_text(pfs, app)
        row["share"] = derived(text) if text else missing()
        row["phrase"] = Markup("{} of the {}").format(derived(text), what) if text else None
    plotted = [(what, app, pfs) for what, app, pfs in measures if app and pfs is not None]
    return {
        "rows": rows,
        "phrases": [row["phrase"] for row in rows if row["phrase"]],
        "image": headline_plot(plotted) if plotted else None,
    }


def served_section(a):
    """3. Where reads were served: bytes by source (read pieces in older files), the disk
    tier's share, data kept from an earlier step, fallbacks by cause."""
    in_bytes = a.has("served")
    keys = [s.bytes_key if in_bytes else s.pieces_key for s in SOURCES]
    values = [a.get(k) for k in keys]
    total = sum(v or 0 for v in values)
    rows = [{"source": s, "value": a.n(k), "share": derived(percent_text(v, total) or "—")}
            for s, k, v in zip(SOURCES, keys, values)]
    unit = "bytes the application read" if in_bytes else "read pieces"
    if in_bytes:  # the disk tier's part of what the cache served
        disk_key = "served.disk_bytes"
        cached = a.sum("served.self_bytes", "served.node_bytes", "served.remote_bytes")
    else:
        disk_key = "hits.tier.disk"
        cached = a.sum("hits.tier.mem", "hits.tier.disk")
    disk = a.get(disk_key)
    disk_share = percent_text(disk, cached)
    causes = None
    if a.has("fallback_causes"):
        causes = [(label, a.n(f"fallback_causes.{name}")) for name, label in FALLBACK_CAUSES]
    image = None
    if total:
        bars = [(a.name, [v or 0 for v in values])]
        image = served_plot(bars, unit)
    return {
        "in_bytes": in_bytes,
        "unit": unit,
        "rows": rows,
        "total": derived(TEXT["bytes" if in_bytes else "count"](total)),
        "disk": a.n(disk_key),
        "disk_value": disk,
        "disk_share": derived(disk_share) if disk_share else None,
        "kept": a.n("kept.bytes_adopted"),
        "kept_value": a.get("kept.bytes_adopted"),
        "kept_share": derived(percent_text(a.get("kept.bytes_adopted"),
                                           a.get("app.bytes_read")) or "—"),
        "fallbacks": a.n("fallbacks"),
        "fallbacks_value": a.get("fallbacks"),
        "causes": causes,
        "image": image,
    }


def timeline_section(a):
    """4. The job over time, from "timeline"."""
    timeline = value_at(a.stats, "timeline")
    if not isinstance(timeline, dict):
        return None
    series = timeline.get("series") if isinstance(timeline.get("series"), dict) else {}
    bucket_ns = a.get("timeline.bucket_ns")
    buckets = a.get("timeline.buckets")
    if buckets is None:
        buckets = max((len(v) for v in series.values() if isinstance(v, list)), default=0)
    section = {"buckets": a.n("timeline.buckets"), "bucket_ns": a.n("timeline.bucket_ns"),
               "start": a.n("timeline.start_unix_ns"), "image": None, "peaks": []}
    if not bucket_ns or not buckets or not series:
        return section
    buckets = int(buckets)
    section["image"] = timeline_plot(series, buckets, bucket_ns)
    seconds = bucket_ns / 1e9
    for name, what, kind in (("pfs_bytes", "PFS bytes", "bytes"),
                             ("pfs_ops", "PFS operations", "count"),
                             ("app_bytes", "application reads", "bytes")):
        values = series_values(series, name, buckets)
        if max(values) > 0:
            i = values.index(max(values))
            section["peaks"].append({
                "what": what, "rate": derived(TEXT[kind](max(values) / seconds) + "/s"),
                "at": derived(f"{_seconds(i * seconds)}–{_seconds((i + 1) * seconds)} s")})
    return section


def _seconds(s):
    return f"{s:,.0f}" if s >= 100 else f"{s:.3g}"


def _file_rows(a, key, fields):
    """The rows of the file list at `key` (path, cause and the numbers `fields`), or None."""
    entries = value_at(a.stats, key)
    if not isinstance(entries, list):
        return None
    rows = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            continue
        row = {"path": str(entry.get("path", "?"))}
        for field in fields:
            row[field] = a.n(f"{key}.{i}.{field}")
        if "cause" in entry:
            row["cause"] = CAUSE_LABELS.get(entry["cause"], str(entry["cause"]))
        # "over": how much the list's measure may overstate (a rank's bounded list replaced an
        # entry by this file and carried the count); 0 or absent: exact.
        row["approx"] = is_number(entry.get("over")) and entry["over"] > 0
        rows.append(row)
    return rows


def files_section(a):
    """5. The PFS's most expensive files, and the files that fell back to it."""
    return {
        "by_bytes": _file_rows(a, "top_files.by_bytes", ("bytes", "ops")),
        "by_ops": _file_rows(a, "top_files.by_ops", ("bytes", "ops")),
        "fallbacks": _file_rows(a, "fallback_files", ("count",)),
    }


def _spread(a, base, value_key, median_key, where_key):
    """Where the maximum sits and how far above the median: for one measure's ranks or nodes."""
    top, median = a.get(f"{base}.{value_key}"), a.get(f"{base}.{median_key}")
    if top is None or median is None:
        return None
    where = a.get(f"{base}.{where_key}")
    return {
        "max": a.n(f"{base}.{value_key}"),
        "median": a.n(f"{base}.{median_key}"),
        "where": a.n(f"{base}.{where_key}") if where is not None and where >= 0 else None,
        "node": None,  # the node of a rank: set by load_section
        "zero": top == 0,
        "hot": top > 0 and (median == 0 or top / median >= HOT_SPOT),
        "factor": derived(f"{top / median:.1f}×") if median else None,
    }


def _top_ranks(a, key):
    """The largest ranks of a measure: rank, node (None when not recorded) and value."""
    top = value_at(a.stats, key)
    if not isinstance(top, list):
        return None
    return [{"rank": a.n(f"{key}.{i}.rank"),
             "node": a.n(f"{key}.{i}.node") if a.has(f"{key}.{i}.node") else None,
             "value": a.n(f"{key}.{i}.value")} for i in range(len(top))]


def load_section(a):
    """6. How each skew measure spreads over the ranks and the nodes."""
    if not isinstance(value_at(a.stats, "skew"), dict):
        return None
    measures = []
    for name, label, kind in SKEW_MEASURES:
        base = f"skew.{name}"
        if not isinstance(value_at(a.stats, base), dict):
            continue
        ranks = _spread(a, base, "max", "median", "max_rank")
        if ranks is not None:
            node = a.get(f"{base}.max_node")
            ranks["node"] = a.n(f"{base}.max_node") if node is not None and node >= 0 else None
        nodes = _spread(a, f"{base}.nodes", "max", "median", "max_node")
        ranks_log2 = value_at(a.stats, f"{base}.ranks_log2")
        nodes_log2 = value_at(a.stats, f"{base}.nodes.log2")
        image = None
        if isinstance(ranks_log2, list) and any(ranks_log2):
            image = skew_plot(kind, ranks_log2, a.get(f"{base}.max"),
                              nodes_log2 if isinstance(nodes_log2, list) and any(nodes_log2)
                              else None, a.get(f"{base}.nodes.max"))
        measures.append({
            "name": name, "label": label, "ranks": ranks, "nodes": nodes,
            "total": a.n(f"{base}.total"), "image": image,
            "histogram_recorded": isinstance(ranks_log2, list),
            "top": _top_ranks(a, f"{base}.top_ranks"),
        })
    return {"measures": measures,
            "histograms": any(m["histogram_recorded"] for m in measures)}


def latency_section(a):
    """7. Read latency: the histogram and its quantiles."""
    histogram = value_at(a.stats, "latency.histogram_log2_ns")
    image = None
    if isinstance(histogram, list) and any(v for v in histogram if is_number(v)):
        image = latency_plot(histogram, [("p50 <", a.get("latency.p50_ns")),
                                         ("p99 <", a.get("latency.p99_ns")),
                                         ("max", a.get("latency.max_ns"))])
    return {"recorded": a.has("latency"), "image": image,
            "rows": [(label, a.n(f"latency.{key}")) for label, key in (
                ("reads", "reads"), ("mean", "mean_ns"), ("p50 below", "p50_ns"),
                ("p99 below", "p99_ns"), ("slowest", "max_ns"))]}


def details_section(a):
    """8. The small tables: each group's counters, or why there is none."""
    groups = []
    for title, rows in DETAIL_GROUPS:
        values = [a.get(key) for key, _ in rows]
        if all(v is None for v in values):
            status = NOT_RECORDED
        elif not any(values):
            status = "none in this job"
        else:
            status = None
        groups.append({"title": title, "status": status,
                       "rows": [(label, a.n(key)) for key, label in rows]})
    return {"groups": groups}


def counters_section(a):
    """Every plain counter of the file."""
    return [(key, a.n(key)) for key in counter_keys(a.stats)]


# ---- Section 9: two jobs side by side ---------------------------------------------------------

def _ratio(new, old):
    """second/first as a derived number, marked when it is off 1 by more than 10 %."""
    text = ratio_text(new, old)
    return derived(text, text != "—" and not 0.9 <= new / old <= 1.1)


def _row(a, b, key):
    identifier = key.rsplit(".", 1)[-1] in ("max_rank", "max_node")  # no ratio of rank numbers
    return {"label": key, "code": True, "a": a.n(key), "b": b.n(key),
            "ratio": "" if identifier else _ratio(b.get(key), a.get(key))}


def _derived_row(label, value_a, value_b, kind):
    def cell(value):
        return missing() if value is None else derived(TEXT[kind](value))
    return {"label": label, "code": False, "a": cell(value_a), "b": cell(value_b),
            "ratio": _ratio(value_b, value_a)}


def _text_row(a, b, key, label):
    return {"label": label, "code": False, "a": a.s(key), "b": b.s(key), "ratio": ""}


def _settings(view):
    """The file's LARDER_* settings, None when it has none."""
    settings = value_at(view.stats, "job.settings")
    return settings if isinstance(settings, dict) else None


def _setting(settings, name):
    """A LARDER_* setting's value for the comparison: "unset", or a dash when the file has no
    settings."""
    if settings is None:
        return missing()
    return settings.get(name, "unset")


def _present_rows(a, b, keys):
    """Rows of the keys either file holds."""
    return [_row(a, b, k) for k in keys if a.has(k) or b.has(k)]


def _nonzero_rows(a, b, keys):
    """Rows of the keys not zero in one of the files."""
    return [_row(a, b, k) for k in keys if a.get(k) or b.get(k)]


def _fallback_file_count(view):
    files = view.stats.get("fallback_files")
    return len(files) if isinstance(files, list) else None


def comparison_section(a, b):
    """9. Every section's numbers for both jobs, with second/first ratios."""
    skew_keys = [f"skew.{name}.{field}" for name, _, _ in SKEW_MEASURES
                 for field in ("max", "median", "total", "max_rank", "nodes.max",
                               "nodes.median")]
    detail_keys = [key for _, rows in DETAIL_GROUPS for key, _ in rows]
    shown = set()  # the keys of the groups, left out of "Other counters"
    groups = []

    def group(title, rows, empty="not recorded in either file"):
        shown.update(row["label"] for row in rows if row["code"])
        groups.append({"title": title, "rows": rows, "empty": empty})

    settings_a, settings_b = _settings(a), _settings(b)
    group("The job", [_row(a, b, "ranks"), _row(a, b, "job.nodes"),
                      _row(a, b, "job.ranks_per_node"), _row(a, b, "job.duration_ns"),
                      _text_row(a, b, "job.version", "Larder version"),
                      _text_row(a, b, "job.mpi", "MPI"),
                      _text_row(a, b, "job.transport", "transport"),
                      _text_row(a, b, "job.host", "host of rank 0")] + [
        {"label": name, "code": True, "a": _setting(settings_a, name),
         "b": _setting(settings_b, name), "ratio": ""}
        for name in sorted(set(settings_a or ()) | set(settings_b or ()))])
    group("What the PFS was spared",
          [_row(a, b, k) for k in ("app.bytes_read", "app.read_calls", "meta.hits",
                                   "meta.misses", "pfs.bytes_read", "pfs.read_ops",
                                   "pfs.stat_ops", "pfs.open_ops", "pfs.list_ops")] +
          [_derived_row("metadata operations of the application",
                        a.sum("meta.hits", "meta.misses"), b.sum("meta.hits", "meta.misses"),
                        "count"),
           _derived_row("metadata operations of the PFS",
                        a.sum("pfs.stat_ops", "pfs.open_ops", "pfs.list_ops"),
                        b.sum("pfs.stat_ops", "pfs.open_ops", "pfs.list_ops"), "count")])
    group("Where reads were served", _present_rows(
        a, b, [s.bytes_key for s in SOURCES] + ["served.disk_bytes"] +
        [s.pieces_key for s in SOURCES] + ["hits.tier.mem", "hits.tier.disk",
                                           "kept.bytes_adopted"] +
        [f"fallback_causes.{name}" for name, _ in FALLBACK_CAUSES]))
    group("The job over time", _present_rows(a, b, ("timeline.buckets", "timeline.bucket_ns")))
    group("Files that cost the PFS most",
          _present_rows(a, b, ("top_files.by_bytes.0.bytes", "top_files.by_ops.0.ops")) +
          [_derived_row("files that fell back or failed a check", _fallback_file_count(a),
                        _fallback_file_count(b), "count")])
    group("Load over ranks and nodes", _present_rows(a, b, skew_keys))
    group("Read latency", [_row(a, b, f"latency.{k}")
                           for k in ("reads", "mean_ns", "p50_ns", "p99_ns", "max_ns")])
    group("Node files, shared objects, produced files, kept data, integrity",
          _nonzero_rows(a, b, detail_keys), "none in either job")
    rest = [k for k in counter_keys(a.stats) if k not in shown]
    rest += [k for k in counter_keys(b.stats) if k not in shown and k not in rest]
    group("Other counters", _nonzero_rows(a, b, rest), "none in either job")

    in_bytes = a.has("served") and b.has("served")
    bars = [(v.name, [v.get(s.bytes_key if in_bytes else s.pieces_key) or 0 for s in SOURCES])
            for v in (a, b)]
    image = None
    if all(sum(values) for _, values in bars):
        image = served_plot(bars, "bytes the application read" if in_bytes else "read pieces")
    return {"groups": groups, "image": image, "in_bytes": in_bytes}


# ---- The page ---------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _environment():
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATE_DIR), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True,
                              lstrip_blocks=True)


def _missing_message():
    return ("needs " + " and ".join(MISSING_PACKAGES) + " (Debian: apt-get install "
            + " ".join(MISSING_PACKAGES) + ")")


def render(stats, other=None, names=None):
    """The report page (HTML text) of the stats dict `stats`, compared with `other` when given.
    `names` (first, second) name the two files in titles."""
    if MISSING_PACKAGES:
        raise ReportError(_missing_message())
    names = names or ("first job", "second job")
    a = JobView(stats, names[0])
    b = JobView(other, names[1], "other:") if other is not None else None
    sections = SECTIONS + ((("compare", "The two jobs side by side"),) if b else ())
    with plt.rc_context(_STYLE):
        context = {
            "a": a,
            "b": b,
            "sections": sections,
            "numbers": {key: i + 1 for i, (key, _) in enumerate(sections)},
            "titles": dict(sections),
            "sources": SOURCES,
            "colours": COLOURS,
            "not_recorded": NOT_RECORDED,
            "hot_spot": HOT_SPOT,
            "job": job_section(a),
            "headline": headline_section(a),
            "served": served_section(a),
            "timeline": timeline_section(a),
            "files": files_section(a),
            "load": load_section(a),
            "latency": latency_section(a),
            "details": details_section(a),
            "counters": counters_section(a),
            "compare": comparison_section(a, b) if b else None,
        }
    return _environment().get_template(TEMPLATE).render(**context)


def _stem(path):
    name = os.path.basename(path)
    return name[:-5] if name.endswith(".json") else name


def _parser():
    parser = argparse.ArgumentParser(
        prog="larder report",
        description="One self-contained HTML page about a Larder job, from its stats JSON "
                    "(LARDER_STATS); with OTHER.json, the two jobs side by side.")
    parser.add_argument("stats", metavar="STATS.json")
    parser.add_argument("other", metavar="OTHER.json", nargs="?")
    parser.add_argument("-o", "--output", metavar="REPORT.html",
                        help="where to write the page, - for stdout (default: STATS.html, or "
                             "STATS-vs-OTHER.html, in the current directory)")
    return parser


def main(argv=None):
    """The command line; returns the exit status (2: bad usage, a missing package, a file that
    cannot be read or written)."""
    args = _parser().parse_args(argv)
    if MISSING_PACKAGES:
        print(f"larder report: {_missing_message()}", file=sys.stderr)
        return 2
    try:
        stats = load(args.stats)
        other = load(args.other) if args.other else None
        names = (os.path.basename(args.stats),
                 os.path.basename(args.other) if args.other else None)
        page = render(stats, other, names)
    except ReportError as e:
        print(f"larder report: {e}", file=sys.stderr)
        return 2
    output = args.output or (f"{_stem(args.stats)}-vs-{_stem(args.other)}.html" if args.other
                             else f"{_stem(args.stats)}.html")
    if output == "-":
        sys.stdout.write(page)
        return 0
    try:
        with open(output, "w", encoding="utf-8") as f:
            f.write(page)
    except OSError as e:
        print(f"larder report: cannot write {output}: {e.strerror}", file=sys.stderr)
        return 2
    print(f"larder report: wrote {output}")
    return 0


if __name__ == "__main__":  # run as a file by larder-report: the package's liblarder.so unloaded
    sys.exit(main())
