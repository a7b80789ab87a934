"""Opens a local HTML file in a real headless Chromium and reports what the page did, as JSON.

Usage:
    /usr/bin/python3 tests/support/browser_check.py PAGE.html [--json FILE] [--timeout SECONDS]
        [--screenshot PNG] [--width PIXELS] [--browser PATH]

The page is loaded as a file:// URL in a fresh Chromium (temporary profile, driven through the
Chrome DevTools Protocol with the websocket module, Debian's python3-websocket). After its load
event the report goes to stdout, or to FILE with --json:
    console_errors  console.error/warn/assert messages, uncaught exceptions, failed loads
                    (Network.loadingFailed) and browser log entries of level "error", as strings
    images          per <img>: alt, complete, natural_width, natural_height and decoded (whether
                    img.decode() resolved)
    numbers         per element with a data-key attribute: key, value (data-value, or null),
                    kind (data-kind), text (textContent) and class
    tables          the number of <table> elements
    title           document.title
    requests        the URL of every request the page made besides its own (data: URLs left out)
--screenshot saves a PNG of the whole page. The viewport is --width CSS pixels wide (default
1200) for the check as well. --timeout (default 60 s) bounds the whole run.

Exit status: 0 when the page loaded (what counts as an error is the caller's decision), 1 on any
other failure (a timeout, a page that does not load, Chromium dying), 2 when chromium or the
websocket module is missing. Chromium is killed and its profile removed in every case.
"""
import argparse
import base64
import itertools
import json
import math
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
DEVTOOLS_LINE = b"DevTools listening on "
MISSING = 2

# Runs in the page after its load event. An image not complete by then is lazy and off screen
# (its decode() would wait for ever), so only complete ones are decoded.
COLLECT = """(async () => {
  const decoded = img => img.complete ? img.decode().then(() => true, () => false) : false;
  const images = Array.from(document.images);
  const done = await Promise.all(images.map(decoded));
  return {
    images: images.map((img, i) => ({alt: img.alt, complete: img.complete,
      natural_width: img.naturalWidth, natural_height: img.naturalHeight, decoded: done[i]})),
    numbers: Array.from(document.querySelectorAll('[data-key]'), el => ({
      key: el.getAttribute('data-key'), value: el.getAttribute('data-value'),
      kind: el.getAttribute('data-kind'), text: el.textContent,
      class: el.getAttribute('class') || ''})),
    tables: document.getElementsByTagName('table').length,
    title: document.title};
})()"""


class CheckError(Exception):
    """A failure to report with exit status 1."""


class Timeout(CheckError):
    """The deadline passed."""


class Missing(Exception):
    """A missing prerequisite, reported with exit status 2."""


def find_browser(given):
    """The Chromium executable: --browser, or the first of BROWSERS on PATH."""
    for name in [given] if given else BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    raise Missing(f"no {given or ' / '.join(BROWSERS)} on PATH (Debian: apt-get install chromium)")


def import_websocket():
    """The websocket-client module, or Missing with what to install."""
    try:
        import websocket
    except ImportError:
        raise Missing(f"{sys.executable} has no websocket module (Debian: apt-get install "
                      "python3-websocket, then run this with /usr/bin/python3)") from None
    return websocket


def start_browser(browser, profile):
    """Chromium with remote debugging on a free port, in its own process group. Its TMPDIR is
    the profile directory: the singleton socket directories it makes there
    (org.chromium.Chromium.*) go with the profile instead of staying in /tmp."""
    env = dict(os.environ, TMPDIR=profile)
    return subprocess.Popen(
        [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
         f"--user-data-dir={profile}", "--no-first-run", "--disable-extensions",
         "--disable-background-networking", "about:blank"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True, env=env)


def devtools_url(proc, deadline):
    """The browser's websocket URL from the "DevTools listening on ws://..." line of Chromium's
    stderr, read until the deadline; the rest of stderr is drained and discarded afterwards."""
    fd = proc.stderr.fileno()
    seen = b""
    while b"\n" not in seen.partition(DEVTOOLS_LINE)[2]:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise Timeout("timed out waiting for Chromium's DevTools line")
        if select.select([fd], [], [], remaining)[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                tail = seen.decode(errors="replace").strip().splitlines()[-5:]
                raise CheckError("Chromium exited before listening for DevTools:\n  "
                                 + "\n  ".join(tail))
            seen += chunk
    threading.Thread(target=drain, args=(fd,), daemon=True).start()
    return seen.partition(DEVTOOLS_LINE)[2].partition(b"\n")[0].decode().strip()


def drain(fd):
    """Reads fd until end of file, so Chromium never blocks on a full stderr pipe."""
    while os.read(fd, 65536):
        pass


def stop_browser(proc):
    """Terminates Chromium (which then stops its helper processes), waits up to 5 s, and kills
    whatever is left of its process group."""
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


class Session:
    """One page of the browser, attached through a flattened DevTools session. Every event of
    the page that arrives while waiting for something goes to on_event."""

    def __init__(self, websocket, url, deadline, on_event):
        self.ws_timeout = websocket.WebSocketTimeoutException
        self.ws_closed = websocket.WebSocketConnectionClosedException
        try:
            self.ws = websocket.create_connection(
                url, timeout=max(deadline - time.monotonic(), 0.1), suppress_origin=True)
        except websocket.WebSocketException as e:
            raise CheckError(f"connecting to Chromium at {url}: {e}") from None
        self.deadline = deadline
        self.on_event = on_event
        self.ids = itertools.count(1)
        self.session_id = None
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session_id = self.send("Target.attachToTarget", targetId=target,
                                    flatten=True)["sessionId"]

    def close(self):
        """Closes the connection (Chromium itself is stopped by the caller)."""
        self.ws.close()

    def send(self, method, **params):
        """Sends a command to the page (to the browser before attaching) and returns its result."""
        message = {"id": next(self.ids), "method": method, "params": params}
        if self.session_id:
            message["sessionId"] = self.session_id
        self.ws.send(json.dumps(message))
        reply = self.receive(method, lambda m: m.get("id") == message["id"])
        if "error" in reply:
            raise CheckError(f"{method}: {reply['error'].get('message')}")
        return reply["result"]

    def wait_for(self, event):
        """Waits for the page's next event of that name."""
        return self.receive(event, lambda m: m.get("method") == event)

    def receive(self, what, wanted):
        """Messages until the wanted one, passing the page's events on; fails at the deadline."""
        while True:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise Timeout(f"timed out waiting for {what}")
            self.ws.settimeout(remaining)
            try:
                message = json.loads(self.ws.recv())
            except self.ws_timeout:
                raise Timeout(f"timed out waiting for {what}") from None
            except self.ws_closed:
                raise CheckError(f"Chromium closed the connection while waiting for {what}") \
                    from None
            if "method" in message and message.get("sessionId") != self.session_id:
                continue
            if message.get("method") == "Inspector.targetCrashed":
                raise CheckError(f"the page crashed while waiting for {what}")
            if wanted(message):
                return message
            if "method" in message:
                self.on_event(message["method"], message["params"])


class Events:
    """What the page's events tell: its requests and the errors among them."""

    def __init__(self):
        self.errors = []
        self.requests = {}  # request id -> URL

    def __call__(self, method, params):
        handler = getattr(self, method.replace(".", "_"), None)
        if handler:
            handler(params)

    def Network_requestWillBeSent(self, p):
        self.requests.setdefault(p["requestId"], p["request"]["url"])

    def Network_loadingFailed(self, p):
        url = self.requests.get(p["requestId"], "?")
        self.errors.append(f"failed to load {shorten(url)}: {p.get('errorText', '')}"
                           + (f" ({p['blockedReason']})" if p.get("blockedReason") else ""))

    def Log_entryAdded(self, p):
        e = p["entry"]
        if e["level"] == "error":
            self.errors.append(f"log ({e['source']}): {e['text']}" + location(e))

    def Runtime_consoleAPICalled(self, p):
        if p["type"] in ("error", "warning", "assert"):
            text = " ".join(map(console_text, p["args"]))
            frames = p.get("stackTrace", {}).get("callFrames") or [{}]
            self.errors.append(f"console.{p['type']}: {text}" + location(frames[0]))

    def Runtime_exceptionThrown(self, p):
        d = p["exceptionDetails"]
        text = d.get("exception", {}).get("description") or d["text"]
        self.errors.append(f"uncaught exception: {text}" + location(d))


def console_text(arg):
    """How the console shows one argument of a console call (a Runtime.RemoteObject)."""
    if "value" not in arg:
        return arg.get("description", arg["type"])
    return arg["value"] if isinstance(arg["value"], str) else json.dumps(arg["value"])


def location(where):
    """' (url:line)' of a log entry, call frame or exception, whose lines count from 0."""
    url = where.get("url")
    if not url:
        return ""
    line = where.get("lineNumber")
    return f" ({shorten(url)}" + (f":{line + 1})" if line is not None else ")")


def shorten(url):
    """A URL short enough to read (data: URLs can be megabytes)."""
    return url if len(url) <= 100 else url[:97] + "..."


def check_page(session, events, page, width):
    """Loads the page and collects the report."""
    for domain in ("Runtime", "Log", "Network", "Page"):
        session.send(f"{domain}.enable")
    session.send("Emulation.setDeviceMetricsOverride", width=width, height=800,
                 deviceScaleFactor=1, mobile=False)
    navigation = session.send("Page.navigate", url=page.as_uri())
    if navigation.get("errorText"):
        raise CheckError(f"cannot open {page}: {navigation['errorText']}")
    session.wait_for("Page.loadEventFired")
    evaluated = session.send("Runtime.evaluate", expression=COLLECT, awaitPromise=True,
                             returnByValue=True)
    if "exceptionDetails" in evaluated:
        raise CheckError(f"collecting the page's contents: {evaluated['exceptionDetails']}")
    found = evaluated["result"]["value"]
    return {"console_errors": events.errors, "images": found["images"],
            "numbers": found["numbers"], "tables": found["tables"], "title": found["title"],
            "requests": [url for rid, url in events.requests.items()
                         if rid != navigation["loaderId"] and not url.startswith("data:")]}


def screenshot(session, width, png):
    """Saves the whole page, as tall as its content, to png."""
    size = session.send("Page.getLayoutMetrics")["cssContentSize"]
    height = math.ceil(size["height"])
    session.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
                 deviceScaleFactor=1, mobile=False)
    shot = session.send("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                        clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1})
    Path(png).write_bytes(base64.b64decode(shot["data"]))


def run(args):
    """The report for args.page; raises CheckError or Missing."""
    page = Path(args.page).resolve()
    if not page.is_file():
        raise CheckError(f"no such file: {page}")
    websocket = import_websocket()
    browser = find_browser(args.browser)
    deadline = time.monotonic() + args.timeout
    with tempfile.TemporaryDirectory(prefix="browser_check.", ignore_cleanup_errors=True) as tmp:
        proc = start_browser(browser, tmp)
        try:
            events = Events()
            session = Session(websocket, devtools_url(proc, deadline), deadline, events)
            try:
                report = check_page(session, events, page, args.width)
                if args.screenshot:
                    screenshot(session, args.width, args.screenshot)
            finally:
                session.close()
        finally:
            stop_browser(proc)
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("page", help="the HTML file to open")
    parser.add_argument("--json", metavar="FILE", help="write the report here, not to stdout")
    parser.add_argument("--timeout", type=float, default=60, metavar="SECONDS",
                        help="give up (exit 1) after this long (default 60)")
    parser.add_argument("--screenshot", metavar="PNG", help="save a full-page screenshot")
    parser.add_argument("--width", type=int, default=1200, metavar="PIXELS",
                        help="viewport width in CSS pixels (default 1200)")
    parser.add_argument("--browser", metavar="PATH",
                        help=f"Chromium executable (default: the first of {', '.join(BROWSERS)})")
    args = parser.parse_args()
    # A SIGTERM (a test's timeout) unwinds like an error, so Chromium is stopped all the same.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("browser_check: terminated"))
    try:
        text = json.dumps(run(args), indent=2) + "\n"
        if args.json:
            Path(args.json).write_text(text)
        else:
            sys.stdout.write(text)
    except Missing as e:
        print(f"browser_check: {e}", file=sys.stderr)
        return MISSING
    except Timeout as e:
        print(f"browser_check: {args.page}: {e} (--timeout {args.timeout:g} s)", file=sys.stderr)
        return 1
    except (CheckError, OSError) as e:
        print(f"browser_check: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
