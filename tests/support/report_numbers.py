"""What a reader takes from a number's text on the job report (python/larder/report.py writes
each number as <span data-kind=... data-value=...>text</span>): the tests parse the text back
and compare it with the value."""
import datetime

SIZES = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50,
         "EiB": 1 << 60}
TIMES = {"ns": 1, "µs": 1e3, "ms": 1e6, "s": 1e9, "min": 60e9, "h": 3600e9}


def parse_human(kind, text):
    """The value a number's text says: kind "count" ('1,234'), "date" ('2024-05-01 12:00:03
    UTC', as Unix ns), "bytes" ('1.5 MiB') or "duration" ('12.3 µs')."""
    if kind == "count":
        return int(text.replace(",", ""))
    if kind == "date":
        when = datetime.datetime.strptime(text, "%Y-%m-%d %H:%M:%S UTC")
        return when.replace(tzinfo=datetime.timezone.utc).timestamp() * 1e9
    value, unit = text.split(" ")
    return float(value) * (SIZES if kind == "bytes" else TIMES)[unit]
