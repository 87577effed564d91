# SPDX-License-Identifier: Apache-2.0
"""chlib.py — ClickHouse servers for the tests, as plain processes.

Each Node is one `clickhouse-server --config-file=DIR/config.xml` with a
generated config, its data, logs and tmp in a temporary folder, listening
on 127.0.0.1 ports chosen here (bound once to port 0, then handed to the
server; a server that loses that race is started again on other ports).
The system service and /etc/clickhouse-server are never touched. A Cluster
is N such nodes, each one shard of a `remote_servers` cluster named in
every node's config, so a Distributed table on any node reads them all.

Always stopped: nodes are context managers, and an atexit hook stops any
node a test forgot (SIGTERM, then SIGKILL after a wait). Readiness is a
condition (GET /ping answers "Ok."), never a sleep.

SKIP: `available()` says whether clickhouse-server is installed; tests call
`require(testcase)` which skips with the Debian package names.
"""
import atexit
import http.client
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse

SERVER = shutil.which("clickhouse-server") or ("/usr/sbin/clickhouse-server"
                                               if os.path.exists("/usr/sbin/clickhouse-server") else None)
SLACK = 10.0 if os.environ.get("SERVPROF_SANITIZE") else 1.0
PASSWORD = "s3cret pw"  # a space and no quote: it must survive HTTP basic auth and the XML
_LIVE = []


def available():
    return SERVER is not None


def require(tc):
    if not available():
        tc.skipTest("clickhouse-server is not installed (Debian packages clickhouse-server "
                    "clickhouse-client; scripts/install-deps.sh installs them)")


def main():
    """unittest.main(), or exit 77 (ctest's SKIP_RETURN_CODE) when there is no ClickHouse."""
    import sys
    import unittest
    if not available():
        print("SKIP: clickhouse-server is not installed (Debian packages clickhouse-server "
              "clickhouse-client; scripts/install-deps.sh installs them)")
        sys.exit(77)
    unittest.main()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _xml_escape(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class Node:
    """One ClickHouse server; `cluster` is a list of (host, tcp_port) shards
    written into its remote_servers as cluster `name`."""

    def __init__(self, root, name="n0", password=PASSWORD):
        self.dir = os.path.join(root, name)
        os.makedirs(self.dir, exist_ok=True)
        self.name = name
        self.password = password
        self.http_port = free_port()
        self.tcp_port = free_port()
        self.proc = None
        self.log = None

    def url(self, db="servprof"):
        return "clickhouse://127.0.0.1:%d/%s" % (self.http_port, db)

    def write_config(self, clusters=None):
        d = self.dir
        shards = ""
        for cname, members in (clusters or {}).items():
            body = "".join(
                "<shard><replica><host>%s</host><port>%d</port><user>default</user>"
                "<password>%s</password></replica></shard>" % (h, p, _xml_escape(self.password))
                for h, p in members)
            shards += "<%s>%s</%s>" % (cname, body, cname)
        config = f"""<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{d}/server.log</log><errorlog>{d}/error.log</errorlog>
    <size>10M</size><count>1</count></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>{self.http_port}</http_port>
  <tcp_port>{self.tcp_port}</tcp_port>
  <max_connections>64</max_connections>
  <keep_alive_timeout>3</keep_alive_timeout>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <mark_cache_size>67108864</mark_cache_size>
  <path>{d}/data/</path>
  <tmp_path>{d}/tmp/</tmp_path>
  <user_files_path>{d}/user_files/</user_files_path>
  <format_schema_path>{d}/format_schemas/</format_schema_path>
  <users_config>{d}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <remote_servers>{shards}</remote_servers>
  <builtin_dictionaries_reload_interval>3600</builtin_dictionaries_reload_interval>
</yandex>
"""
        users = f"""<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage>
    <allow_experimental_low_cardinality_type>1</allow_experimental_low_cardinality_type>
  </default></profiles>
  <users><default><password>{_xml_escape(self.password)}</password>
    <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>
    <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time>
  </interval></default></quotas>
</yandex>
"""
        with open(os.path.join(d, "config.xml"), "w") as f:
            f.write(config)
        with open(os.path.join(d, "users.xml"), "w") as f:
            f.write(users)

    def start(self, timeout=30):
        assert self.proc is None or self.proc.poll() is not None
        self.log = open(os.path.join(self.dir, "stdout.log"), "ab")
        self.proc = subprocess.Popen([SERVER, "--config-file=" + os.path.join(self.dir, "config.xml")],
                                     cwd=self.dir, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        _LIVE.append(self)
        deadline = time.time() + timeout * SLACK
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("clickhouse-server %s exited at start (status %s):\n%s"
                                   % (self.name, self.proc.returncode, self.errors()))
            if self.ping():
                return self
            if time.time() > deadline:
                self.stop()
                raise RuntimeError("clickhouse-server %s did not answer /ping:\n%s" % (self.name, self.errors()))
            time.sleep(0.05)

    def ping(self):
        c = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=2)
        try:
            c.request("GET", "/ping")
            r = c.getresponse()
            return r.status == 200 and r.read() == b"Ok.\n"
        except OSError:
            return False
        finally:
            c.close()

    def errors(self):
        out = []
        for n in ("error.log", "stdout.log"):
            p = os.path.join(self.dir, n)
            if os.path.exists(p):
                with open(p, "rb") as f:
                    out.append(f.read()[-3000:].decode(errors="replace"))
        return "\n".join(out)

    def stop(self, sig=signal.SIGTERM):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=30 * SLACK)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self in _LIVE:
            _LIVE.remove(self)
        if self.log:
            self.log.close()
            self.log = None

    def kill(self):
        """Stops the node abruptly (a shard going down)."""
        self.stop(signal.SIGKILL)

    def query(self, sql, data=None, password=None, check=True):
        """Runs sql over HTTP; returns the body (bytes). Raises on an error unless check=False."""
        import base64
        pw = self.password if password is None else password
        auth = base64.b64encode(("default:" + pw).encode()).decode()
        c = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=60 * SLACK)
        q = urllib.parse.urlencode({"query": sql})
        try:
            c.request("POST", "/?" + q, body=data or b"", headers={"Authorization": "Basic " + auth})
            r = c.getresponse()
            body = r.read()
        finally:
            c.close()
        if check and r.status != 200:
            raise RuntimeError("ClickHouse %s: HTTP %d: %s\nquery: %s" % (self.name, r.status, body[:2000], sql))
        return body

    def scalar(self, sql):
        return self.query(sql).decode().strip()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class Cluster:
    """nshards nodes, each one shard of cluster `name`; node 0 is the entry."""

    def __init__(self, nshards=2, name="two", root=None):
        self.root = root or tempfile.mkdtemp(prefix="sp-ch-")
        self.name = name
        self.nodes = [Node(self.root, "shard%d" % i) for i in range(nshards)]
        members = [("127.0.0.1", n.tcp_port) for n in self.nodes]
        for n in self.nodes:
            n.write_config({name: members})

    def start(self):
        try:
            for n in self.nodes:
                n.start()
        except Exception:
            self.stop()
            raise
        return self

    def stop(self):
        for n in self.nodes:
            n.stop()

    def node_urls(self, db="servprof"):
        return ",".join(n.url(db) for n in self.nodes)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def single(root=None):
    """One node, no cluster: a context manager like Cluster."""
    c = Cluster(1, "one", root)
    return c


@atexit.register
def _stop_all():
    for n in list(_LIVE):
        n.stop(signal.SIGKILL)
