# SPDX-License-Identifier: Apache-2.0
"""chlib.py — ClickHouse servers for the tests, as plain processes.

Each Node is one `clickhouse-server --config-file=DIR/config.xml` with a
generated config, its data, logs and tmp in a temporary folder, listening
on 127.0.0.1 ports reserved for this test (tests/support/ports.py: no two
tests of this tree get the same port at once). A server that still does
not get its ports — its log says "Address already in use", or a listener
on them is not its own (a /ping answered by the process holding the port,
before ours exits; or a listener with SO_REUSEPORT sharing it) — is
started again on fresh ports, at its first start: after that its URL is
out and a restart keeps the ports.
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
import subprocess
import tempfile
import time
import urllib.parse

from support import ports

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


START_TRIES = 5


class PortTaken(RuntimeError):
    """The server did not get its ports (to itself)."""


def free_port():
    """A port nothing of this tree's tests uses now (reserved until exit)."""
    return ports.reserve()


def _xml_escape(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class Node:
    """One ClickHouse server; `cluster` is a list of (host, tcp_port) shards
    written into its remote_servers as cluster `name`."""

    def __init__(self, root, name="n0", password=PASSWORD, settings=None):
        self.settings = dict(settings or {})  # more settings of the default profile
        self.dir = os.path.join(root, name)
        os.makedirs(self.dir, exist_ok=True)
        self.name = name
        self.password = password
        self.http_port = free_port()
        self.tcp_port = free_port()
        self.proc = None
        self.log = None
        self.clusters = None
        self.started = False  # once up, its URL is out: a restart keeps its ports

    def new_ports(self):
        """Fresh ports (the config is to be written again)."""
        ports.release(self.http_port)
        ports.release(self.tcp_port)
        self.http_port = free_port()
        self.tcp_port = free_port()

    def url(self, db="servprof"):
        return "clickhouse://127.0.0.1:%d/%s" % (self.http_port, db)

    def write_config(self, clusters=None):
        self.clusters = clusters
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
        profile = dict({"max_memory_usage": 2000000000, "allow_experimental_low_cardinality_type": 1}, **self.settings)
        profile = "".join("<%s>%s</%s>" % (k, _xml_escape(str(v)), k) for k, v in profile.items())
        users = f"""<?xml version="1.0"?>
<yandex>
  <profiles><default>{profile}</default></profiles>
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

    def start(self, timeout=30, move=True):
        """Starts the server and waits for it. At the first start, when it
        did not get its ports, it is started again on fresh ones (move=False:
        PortTaken is raised instead, for a Cluster, whose configs name every
        node's port)."""
        for attempt in range(START_TRIES):
            try:
                return self._start_once(timeout)
            except PortTaken:
                if self.started or not move or attempt == START_TRIES - 1:
                    raise
                self.new_ports()
                self.write_config(self.clusters)

    def _start_once(self, timeout):
        assert self.proc is None or self.proc.poll() is not None
        marks = self._log_sizes()
        self.log = open(os.path.join(self.dir, "stdout.log"), "ab")
        self.proc = subprocess.Popen([SERVER, "--config-file=" + os.path.join(self.dir, "config.xml")],
                                     cwd=self.dir, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        _LIVE.append(self)
        deadline = time.time() + timeout * SLACK
        while True:
            if self.proc.poll() is not None:
                err = self.errors(marks)
                self.stop()
                if "Address already in use" in err:
                    raise PortTaken("clickhouse-server %s: ports %d/%d taken"
                                    % (self.name, self.http_port, self.tcp_port))
                raise RuntimeError("clickhouse-server %s exited at start (status %s):\n%s"
                                   % (self.name, self.proc.returncode, err))
            if self.ping():
                # The answer may be another server's on this port: ours must
                # be the only listener on both ports.
                if ports.owns_listeners(self.proc.pid, (self.http_port, self.tcp_port)) is False:
                    self.stop(signal.SIGKILL)
                    raise PortTaken("clickhouse-server %s: another server listens on %d or %d"
                                    % (self.name, self.http_port, self.tcp_port))
                self.started = True
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

    LOGS = ("error.log", "stdout.log")

    def _log_sizes(self):
        sizes = {}
        for n in self.LOGS:
            try:
                sizes[n] = os.path.getsize(os.path.join(self.dir, n))
            except OSError:
                sizes[n] = 0
        return sizes

    def errors(self, since=None):
        """The logs' last lines; `since` (sizes from _log_sizes): what came after."""
        out = []
        for n in self.LOGS:
            p = os.path.join(self.dir, n)
            if os.path.exists(p):
                with open(p, "rb") as f:
                    f.seek((since or {}).get(n, 0))
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

    def __init__(self, nshards=2, name="two", root=None, settings=None):
        self.root = root or tempfile.mkdtemp(prefix="sp-ch-")
        self.name = name
        self.nodes = [Node(self.root, "shard%d" % i, settings=settings) for i in range(nshards)]
        self.started = False
        self.write_configs()

    def write_configs(self):
        members = [("127.0.0.1", n.tcp_port) for n in self.nodes]
        for n in self.nodes:
            n.write_config({self.name: members})

    def start(self):
        """Starts every node; when one did not get its ports, all stop, that
        one takes fresh ports, every config is written again, and all start."""
        for attempt in range(START_TRIES):
            try:
                for n in self.nodes:
                    n.start(move=False)
                self.started = True
                return self
            except PortTaken:
                self.stop()
                if attempt == START_TRIES - 1 or self.started:
                    raise
                for n in self.nodes:
                    n.started = False  # its URL was not handed out yet
                    n.new_ports()
                self.write_configs()
            except Exception:
                self.stop()
                raise

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


def single(root=None, settings=None):
    """One node, no cluster: a context manager like Cluster; settings: more
    settings of its users' default profile (e.g. {"log_queries": 1})."""
    c = Cluster(1, "one", root, settings)
    return c


@atexit.register
def _stop_all():
    for n in list(_LIVE):
        n.stop(signal.SIGKILL)
