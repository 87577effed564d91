# SPDX-License-Identifier: Apache-2.0
"""test_hooks_aiohttp.py — an aiohttp application nobody instrumented,
profiled from a hook file alone.

The app (written by the test) has two routes and knows nothing of
servprof. It runs under `python -m servprof run --hooks F` with hooks on
aiohttp itself (Application._handle: every request, whatever the app) and
on one of the app's own handlers. After real HTTP requests on 127.0.0.1
and a SIGTERM, the store must hold one span per request with its method
and path, and one per call of the hooked handler with its result's
status.
"""

import os
import selectors
import signal
import subprocess
import time
import unittest
import urllib.request

import hooklib as H
from hooklib import T

H.need("yaml", "aiohttp")

APP = '''
import asyncio, signal, sys
from aiohttp import web
import handlers

async def main():
    app = web.Application()
    app.router.add_get("/hello/{name}", handlers.hello)
    app.router.add_post("/echo", handlers.echo)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print("listening on %d" % runner.addresses[0][1], flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await runner.cleanup()

asyncio.run(main())
'''

HANDLERS = '''
from aiohttp import web

async def hello(request):
    return web.Response(text="hello " + request.match_info["name"])

async def echo(request):
    body = await request.read()
    return web.Response(body=body, status=201)
'''

HOOKS = '''
- symbol: aiohttp.web_app:Application._handle
  domain: Request
  name: httpRequest
  min_version: "3.0"
  attributes:
    - {name: method, expr: "request | attr method"}
    - {name: path, expr: "request | attr path"}
    - {name: status, expr: "return | attr status"}
- symbol: handlers:echo
  domain: Request
  name: echo
  attributes: {status: "return.status", size: "return.body | len"}
'''


class AiohttpApp(unittest.TestCase):

    def test_every_request_is_a_span(self):
        d = T.tmpdir(self)
        H.write(d, "app.py", APP)
        H.write(d, "handlers.py", HANDLERS)
        hooks = H.write(d, "hooks.yaml", HOOKS)
        cfg = T.make_config(d, enable=1)
        e = dict(os.environ, **H.env(d, cfg))
        p = subprocess.Popen(H.run_cmd([hooks], H.PY, os.path.join(d, "app.py")), env=e, cwd=d,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: p.poll() is None and (p.kill(), p.communicate(timeout=30)))
        sel = selectors.DefaultSelector()
        sel.register(p.stdout, selectors.EVENT_READ)
        line, end = "", time.monotonic() + 60 * T.SLACK
        while not line and time.monotonic() < end and p.poll() is None:
            if sel.select(timeout=1.0):
                line = p.stdout.readline()
        sel.close()
        self.assertTrue(line.startswith("listening on "), line + (p.stderr.read() if p.poll() is not None else ""))
        port = int(line.split()[-1])
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        sent = []
        for i in range(5):
            with direct.open("http://127.0.0.1:%d/hello/n%d" % (port, i), timeout=30) as r:
                self.assertEqual(r.read(), b"hello n%d" % i)
            sent.append(("GET", "/hello/n%d" % i, 200))
        for i in range(3):
            req = urllib.request.Request("http://127.0.0.1:%d/echo" % port, data=b"x" * (i + 1))
            with direct.open(req, timeout=30) as r:
                self.assertEqual((r.status, r.read()), (201, b"x" * (i + 1)))
            sent.append(("POST", "/echo", 201))
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60 * T.SLACK)
        self.assertEqual(p.returncode, 0, err)
        self.assertRegex(err, r"hooks.yaml: 2 hooks: 0 bound, 2 waiting")
        self.assertNotIn("WARNING", err)

        rows = H.records(os.path.join(d, "prof"))
        spans = sorted((r["a"]["method"], r["a"]["path"], r["a"]["status"], r["timestamp"])
                       for r in rows if r["name"] == "httpRequest")
        self.assertEqual(sorted(s[:3] for s in spans), sorted(sent))
        self.assertTrue(all(r["duration"] > 0 for r in rows if r["name"] == "httpRequest"))
        echo = [r["a"] for r in rows if r["name"] == "echo"]
        self.assertEqual(sorted((a["status"], a["size"]) for a in echo), [(201, 1), (201, 2), (201, 3)])


if __name__ == "__main__":
    H.main()
