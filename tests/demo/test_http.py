# SPDX-License-Identifier: Apache-2.0
"""test_http.py — tiny-llm-server's HTTP front end, over real HTTP on
127.0.0.1: answers (whole and streamed), every kind of bad input answered with
a 4xx JSON error and no crash, overload answered 503, a client that leaves
mid-stream has its request aborted and its KV blocks freed, and a clean stop
(exit status 0, so no leak under ASan)."""
import json
import socket
import threading
import time
import unittest

from support.demo_util import SLACK, SMALL_MODEL, Server


class HttpTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server([*SMALL_MODEL, "--max-model-len", "512", "--num-blocks", "256"])

    @classmethod
    def tearDownClass(cls):
        rc = cls.srv.stop()
        out = cls.srv.output()
        assert rc == 0, f"server exit status {rc}:\n{out}"
        assert "stopped:" in out, out

    def test_health(self):
        h = self.srv.health()
        self.assertEqual(h["status"], "ok")
        self.assertEqual(h["model"], "tiny-llm")
        self.assertEqual(h["kv_total_blocks"], 256)

    def test_whole_answer(self):
        status, headers, body = self.srv.complete({"prompt": "the quick brown fox", "max_tokens": 7})
        self.assertEqual(status, 200, body)
        ans = json.loads(body)
        self.assertEqual(ans["usage"], {"prompt_tokens": 4, "completion_tokens": 7, "total_tokens": 11})
        self.assertEqual(ans["choices"][0]["finish_reason"], "length")
        self.assertEqual(len(ans["choices"][0]["text"].split()), 7)
        self.assertEqual(headers["X-Request-Id"], ans["id"])
        self.assertEqual(ans["profiled"], 0)  # no profiler config: nothing recorded
        # Same prompt, same tokens: the model is a function of the seed.
        _, _, body2 = self.srv.complete({"prompt": "the quick brown fox", "max_tokens": 7})
        self.assertEqual(json.loads(body2)["choices"][0]["text"], ans["choices"][0]["text"])

    def test_stream(self):
        status, headers, body = self.srv.complete({"prompt_tokens": [1, 2, 3, 4, 5], "max_tokens": 9,
                                                   "stream": True})
        self.assertEqual(status, 200, body)
        self.assertEqual(headers["Content-Type"], "text/event-stream")
        events = [l[6:] for l in body.decode().split("\n") if l.startswith("data: ")]
        self.assertEqual(events[-1], "[DONE]")
        chunks = [json.loads(e) for e in events[:-1]]
        self.assertEqual(sum(1 for c in chunks if c["choices"][0]["finish_reason"] is None), 9)
        self.assertEqual(chunks[-1]["usage"]["completion_tokens"], 9)
        self.assertTrue(all(c["id"] == headers["X-Request-Id"] for c in chunks))

    def check_error(self, status, body, want_status, want_text):
        self.assertEqual(status, want_status, body)
        err = json.loads(body)["error"]
        self.assertIn(want_text, err["message"])
        self.assertEqual(err["code"], want_status)

    def test_bad_input(self):
        cases = [
            (b'{"prompt": "hi", ', "malformed JSON at line 1 column"),
            (b'', "malformed JSON"),
            (b'\xff\xfe{"prompt": "x"}', "malformed JSON"),
            (b'{"prompt": "a\x00b"}', "malformed JSON"),
            (b'[' * 100000 + b']' * 100000, "malformed JSON"),
            (b'{"prompt": "x", "prompt": "y"}', "malformed JSON"),
            (b'{"prompt": "x", "max_tokens": 100000000000000000000000000000}', "malformed JSON"),
            (b'[1, 2]', "must be a JSON object"),
            (b'"just a string"', "malformed JSON"),
            (b'{"max_tokens": 3}', "exactly one of"),
            (b'{"prompt": "x", "prompt_tokens": [1]}', "exactly one of"),
            (b'{"prompt": "x", "max_tokens": -5}', "'max_tokens' must be in 1.."),
            (b'{"prompt": "x", "max_tokens": 0}', "'max_tokens' must be in 1.."),
            (b'{"prompt": "x", "max_tokens": 1000000000}', "'max_tokens' must be in 1.."),
            (b'{"prompt": "x", "max_tokens": 9223372036854775807}', "'max_tokens' must be in 1.."),
            (b'{"prompt": "x", "max_tokens": "5"}', "'max_tokens' must be an integer"),
            (b'{"prompt": "x", "max_tokens": 5.5}', "'max_tokens' must be an integer"),
            (b'{"prompt": "x", "max_tokens": null}', "'max_tokens' must be an integer"),
            (b'{"prompt": "x", "stream": "yes"}', "'stream' must be true or false"),
            (b'{"prompt": 42}', "must be a string or an array"),
            (b'{"prompt": ""}', "the prompt is empty"),
            (b'{"prompt": "   \\n "}', "the prompt is empty"),
            (b'{"prompt_tokens": []}', "the prompt is empty"),
            (b'{"prompt_tokens": "abc"}', "'prompt_tokens' must be an array"),
            (b'{"prompt_tokens": [1, -1]}', "prompt token 1 must be an integer in 0..1023"),
            (b'{"prompt_tokens": [1, 99999]}', "prompt token 1 must be an integer"),
            (b'{"prompt_tokens": ["a"]}', "prompt token 0 must be an integer"),
            (b'{"prompt_tokens": [1.5]}', "prompt token 0 must be an integer"),
            (json.dumps({"prompt": "w " * 600}).encode(), "the prompt has more than"),
            (json.dumps({"prompt_tokens": [1] * 500, "max_tokens": 100}).encode(), "the prompt has more than"),
        ]
        for body, text in cases:
            with self.subTest(body=body[:60]):
                status, headers, ans = self.srv.complete(body)
                self.check_error(status, ans, 400, text)
                self.assertEqual(headers["Content-Type"], "application/json")
        status, _, ans = self.srv.complete(b'{"prompt": "' + b"x" * (2 << 20) + b'"}')
        self.check_error(status, ans, 413, "larger than")
        status, _, ans = self.srv.request("GET", "/v1/completions")
        self.check_error(status, ans, 405, "use POST")
        status, _, ans = self.srv.request("POST", "/health", body="{}")
        self.check_error(status, ans, 405, "use GET")
        status, _, ans = self.srv.request("GET", "/nope")
        self.check_error(status, ans, 404, "no such path")
        # Still serving.
        status, _, ans = self.srv.complete({"prompt": "still alive", "max_tokens": 2})
        self.assertEqual(status, 200, ans)
        self.assertIsNone(self.srv.proc.poll())

    def test_client_leaves_mid_stream(self):
        before = self.srv.health()
        s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=30 * SLACK)
        body = json.dumps({"prompt_tokens": list(range(1, 40)), "max_tokens": 450, "stream": True})
        s.sendall(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
        got = b""
        while b"data: " not in got:
            chunk = s.recv(4096)
            self.assertTrue(chunk, "server closed before the first token")
            got += chunk
        self.assertIn(b"X-Request-Id: cmpl-", got)
        mid = self.srv.health()
        self.assertLess(mid["kv_free_blocks"], mid["kv_total_blocks"])  # it holds blocks
        s.close()
        h = self.srv.wait_health(lambda h: h["aborted"] > before["aborted"] and h["running"] == 0
                                 and h["waiting"] == 0, 20)
        self.assertEqual(h["aborted"], before["aborted"] + 1, h)
        self.assertEqual(h["running"] + h["waiting"], 0, h)
        self.assertEqual(h["kv_free_blocks"], h["kv_total_blocks"], h)  # cached blocks count as free
        self.assertLess(h["output_tokens"] - before["output_tokens"], 450)


class OverloadTest(unittest.TestCase):
    def test_503_when_full(self):
        with Server([*SMALL_MODEL, "--max-inflight", "2", "--max-num-seqs", "1"]) as srv:
            results = []
            lock = threading.Lock()

            def one():
                r = srv.complete({"prompt_tokens": [5] * 20, "max_tokens": 300})
                with lock:
                    results.append(r)

            threads = [threading.Thread(target=one) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            codes = sorted(r[0] for r in results)
            self.assertTrue(set(codes) <= {200, 503}, codes)
            self.assertIn(503, codes)
            self.assertIn(200, codes)
            for status, _, body in results:
                if status == 503:
                    err = json.loads(body)["error"]
                    self.assertIn("overloaded", err["message"])
                    self.assertEqual(err["type"], "overloaded_error")
            h = srv.health()
            self.assertEqual(h["rejected"], codes.count(503))
            self.assertEqual(srv.stop(), 0, srv.output())


class OptionsTest(unittest.TestCase):
    def test_bad_options_exit_with_message(self):
        import subprocess
        from support.demo_util import SERVER
        for args, text in [(["--port", "99999"], "--port wants an integer"),
                           (["--d-model", "30", "--heads", "4"], "multiple of --heads"),
                           (["--num-blocks", "2"], "raise --num-blocks"),
                           (["--host", "not-an-ip", "--port", "0"], "bad address"),
                           (["--bogus"], "usage")]:
            with self.subTest(args=args):
                p = subprocess.run([SERVER, *args], capture_output=True, text=True, timeout=60 * SLACK)
                self.assertNotEqual(p.returncode, 0)
                self.assertIn(text, p.stderr)


class LoadGeneratorTest(unittest.TestCase):
    """servprof-load itself: a fixed number of whole answers, its CSV and
    JSON summary, no server to talk to, and bad options."""

    def run_load(self, *args):
        import subprocess
        from support.demo_util import LOAD
        return subprocess.run([LOAD, *args], capture_output=True, text=True, timeout=120 * SLACK)

    def test_counts_csv_and_summary(self):
        import csv
        import os
        import tempfile
        with Server(SMALL_MODEL) as srv:
            d = tempfile.mkdtemp(prefix="tl-load-")
            out, js = os.path.join(d, "r.csv"), os.path.join(d, "s.json")
            p = self.run_load("--port", str(srv.port), "--requests", "12", "--rate", "50",
                              "--no-stream", "--prompt-len", "8:16", "--output-len", "3:5", "--shared-prefix", "0",
                              "--vocab", "1024", "--out", out, "--summary-json", js)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("12 sent, 12 ok", p.stdout)
            with open(out, newline="") as f:
                rows = list(csv.DictReader(f))
            self.assertEqual(len(rows), 12)
            for r in rows:
                self.assertEqual(r["status"], "200")
                self.assertTrue(r["id"].startswith("cmpl-"))
                self.assertTrue(3 <= int(r["output_tokens"]) <= 5)
                self.assertTrue(8 <= int(r["prompt_tokens"]) <= 16)
                self.assertEqual(float(r["ttft_ms"]), -1.0)  # whole answers: no TTFT
            with open(js) as f:
                summary = json.loads(f.read())
            self.assertEqual(summary["ok"], 12)
            self.assertEqual(summary["output_tokens"], sum(int(r["output_tokens"]) for r in rows))
            self.assertEqual(srv.health()["completed"], 12)

    def test_no_server(self):
        import socket as so
        s = so.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        p = self.run_load("--port", str(port), "--requests", "3", "--rate", "100")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("3 connection errors", p.stdout)

    def test_bad_options(self):
        for args, text in [(["--rate", "0"], "--rate wants a number"),
                           (["--prompt-len", "9:3"], "--prompt-len wants MIN:MAX"),
                           (["--prefix-fraction", "2"], "--prefix-fraction wants a number"),
                           (["--concurrency", "x"], "--concurrency wants a number"),
                           (["extra"], "unexpected argument")]:
            with self.subTest(args=args):
                p = self.run_load(*args)
                self.assertEqual(p.returncode, 2)
                self.assertIn(text, p.stderr)


if __name__ == "__main__":
    unittest.main()
