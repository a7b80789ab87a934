"""python3 -m larder COMMAND ...: Larder's command-line tools written in Python.

    python3 -m larder report STATS.json [OTHER.json] [-o REPORT.html]   the job report page

Note: `python3 -m larder` runs the package's __init__.py first, and that loads liblarder.so
(LARDER_LIBRARY, or the one built or installed next to the package). Where the library is not
at hand, run the report as a file instead, as the larder-report wrapper does:
    python3 <package dir>/larder/report.py STATS.json
"""
import sys

COMMANDS = ("report",)
USAGE = "usage: python3 -m larder report STATS.json [OTHER.json] [-o REPORT.html]"


def main(argv):
    if argv and argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if not argv or argv[0] not in COMMANDS:
        what = f"unknown command {argv[0]!r}" if argv else "no command"
        print(f"larder: {what}\n{USAGE}", file=sys.stderr)
        return 2
    from . import report  # only the command asked for is imported (it needs matplotlib)
    return report.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
