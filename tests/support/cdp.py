# SPDX-License-Identifier: Apache-2.0
"""cdp.py — drives Debian's headless Chromium through the DevTools protocol.

For the report's browser tests and its benchmark: start /usr/bin/chromium
headless on a private profile, open a file:// page, record every console
error, uncaught exception, failed load and request that is not file:/data:,
wait (bounded) for a condition, evaluate JavaScript, take a screenshot.
Nothing is installed at run time: the websocket is python3-aiohttp's (a
Debian package listed in scripts/install-deps.sh), the browser is Debian's.

Only 127.0.0.1 is ever contacted (the browser's DevTools port).
"""
import asyncio
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time

import aiohttp

CHROMIUM = os.environ.get("SERVPROF_CHROMIUM", "/usr/bin/chromium")


def find_chromium():
    """The browser's path, or None when it is not installed."""
    if os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    return shutil.which("chromium")


class PageRun:
    """What happened while a page was open."""

    def __init__(self):
        self.console_errors = []   # console.error/assert and warnings the browser logged as errors
        self.exceptions = []       # uncaught exceptions
        self.failed_loads = []     # Network.loadingFailed and HTTP errors
        self.requests = []         # every URL the page asked for (besides itself)


class Browser:
    """One headless Chromium with one page. Use as a context manager."""

    def __init__(self, width=1400, height=1000, timeout=60.0):
        self.width, self.height, self.timeout = width, height, timeout
        self.proc = None
        self.profile = None
        self.loop = asyncio.new_event_loop()
        self.session = self.ws = None
        self.msg_id = 0
        self.pending = {}
        self.events = []
        self.reader = None

    # ----------------------------------------------------------- lifecycle
    def __enter__(self):
        exe = find_chromium()
        if not exe:
            raise RuntimeError(f"Chromium not found at {CHROMIUM} (install the Debian package chromium)")
        self.profile = tempfile.mkdtemp(prefix="servprof-chromium-")
        args = [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                "--hide-scrollbars", "--mute-audio", f"--user-data-dir={self.profile}",
                "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
                f"--window-size={self.width},{self.height}", "about:blank"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + self.timeout
        while not (os.path.exists(port_file) and open(port_file).read().count("\n") >= 1):
            if self.proc.poll() is not None:
                raise RuntimeError("Chromium exited at start: " + self.proc.stderr.read().decode(errors="replace")[-2000:])
            if time.monotonic() > deadline:
                raise RuntimeError("Chromium did not open its DevTools port within %.0f s" % self.timeout)
            time.sleep(0.05)  # polling a file another process writes; bounded by the deadline
        self.port = int(open(port_file).read().split("\n")[0])
        self.loop.run_until_complete(self._connect())
        return self

    def __exit__(self, *exc):
        try:
            if self.ws is not None:
                self.loop.run_until_complete(self._close())
        finally:
            if self.proc and self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=10)
            if self.proc and self.proc.stderr:
                self.proc.stderr.close()
            self.loop.close()
            shutil.rmtree(self.profile, ignore_errors=True)

    async def _connect(self):
        self.session = aiohttp.ClientSession()
        async with self.session.get(f"http://127.0.0.1:{self.port}/json/list") as r:
            targets = await r.json()
        page = next(t for t in targets if t.get("type") == "page")
        self.ws = await self.session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
        self.reader = asyncio.ensure_future(self._read())
        for domain in ("Runtime", "Log", "Network", "Page"):
            await self._send(domain + ".enable")
        await self._send("Emulation.setDeviceMetricsOverride", width=self.width, height=self.height,
                         deviceScaleFactor=1, mobile=False)

    async def _close(self):
        await self.ws.close()
        self.reader.cancel()
        try:
            await self.reader
        except (asyncio.CancelledError, Exception):
            pass
        await self.session.close()

    async def _read(self):
        async for msg in self.ws:
            data = json.loads(msg.data)
            if "id" in data and data["id"] in self.pending:
                self.pending.pop(data["id"]).set_result(data)
            elif "method" in data:
                self.events.append(data)

    async def _send(self, method, **params):
        self.msg_id += 1
        fut = self.loop.create_future()
        self.pending[self.msg_id] = fut
        await self.ws.send_str(json.dumps({"id": self.msg_id, "method": method, "params": params}))
        data = await asyncio.wait_for(fut, self.timeout)
        if "error" in data:
            raise RuntimeError(f"{method}: {data['error']}")
        return data.get("result", {})

    def send(self, method, **params):
        return self.loop.run_until_complete(self._send(method, **params))

    # --------------------------------------------------------------- pages
    def open(self, path):
        """Navigates to a local file and waits for its load event (bounded)."""
        self.events.clear()
        url = "file://" + os.path.abspath(path)
        self.url = url
        self.send("Page.navigate", url=url)
        self.wait_for("document.readyState === 'complete'")
        return url

    def evaluate(self, expr):
        """The value of a JavaScript expression (JSON-able), awaiting a promise."""
        r = self.send("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"evaluating {expr[:80]!r}: {r['exceptionDetails'].get('text')} "
                               f"{r['exceptionDetails'].get('exception', {}).get('description', '')}")
        return r["result"].get("value")

    def wait_for(self, expr, timeout=None):
        """Waits until expr is truthy, in the page (a promise polled on animation frames), bounded."""
        limit = int(1000 * (timeout or self.timeout))
        js = ("new Promise(res => { const t0 = performance.now(); (function f() {"
              f" let ok = false; try {{ ok = !!({expr}); }} catch (e) {{}}"
              f" if (ok) res(true); else if (performance.now() - t0 > {limit}) res(false);"
              " else setTimeout(f, 20); })(); })")
        if not self.evaluate(js):
            raise TimeoutError(f"the page did not reach `{expr}` within {limit} ms")

    def run_report(self):
        """Sorts the events seen so far into a PageRun."""
        out = PageRun()
        for e in self.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.console_errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.exceptions.append(d.get("exception", {}).get("description") or d.get("text"))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.console_errors.append(p["entry"].get("text", ""))
            elif m == "Network.loadingFailed":
                out.failed_loads.append(f"{p.get('errorText')} ({p.get('requestId')})")
            elif m == "Network.responseReceived" and p.get("response", {}).get("status", 200) >= 400:
                out.failed_loads.append(f"HTTP {p['response']['status']} {p['response'].get('url')}")
            elif m == "Network.requestWillBeSent":
                u = p.get("request", {}).get("url", "")
                if u != self.url:
                    out.requests.append(u)
        return out

    def screenshot(self, path, full_page=True):
        """Saves a PNG of the page (the whole page when full_page)."""
        params = {"format": "png"}
        if full_page:
            h = self.evaluate("Math.ceil(document.documentElement.scrollHeight)")
            w = self.evaluate("Math.ceil(document.documentElement.scrollWidth)")
            params.update(captureBeyondViewport=True, clip={"x": 0, "y": 0, "width": w, "height": h, "scale": 1})
        data = self.send("Page.captureScreenshot", **params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path
