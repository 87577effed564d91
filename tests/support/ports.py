# SPDX-License-Identifier: Apache-2.0
"""ports.py — TCP ports for servers that a test starts as other processes.

Binding port 0 and closing the socket only says the port was free then:
the server binds it later, and under `ctest -j` another test can be handed
the same number in between: one server then fails to start, and until it
exits the other one's server answers on its port. So a port given out here is
also reserved: an exclusive flock on a file named after it, in one folder
every test of every build on this machine shares, held until release() or
the process's exit (the kernel drops the lock with the process, so a
killed test leaks nothing). A test that asks for a port skips numbers
another live test holds.

That covers the tests of this tree. What it cannot cover — a process
outside them taking the port before the server binds it — a caller
handles by starting its server again on fresh ports when it did not get
them (chlib.Node.start reads the server's log and the kernel's listener
table: see owns_listeners()).
"""
import atexit
import fcntl
import os
import socket
import tempfile

LOCK_DIR = os.path.join(tempfile.gettempdir(), "servprof-test-ports")
_HELD = {}  # port -> open lock file


def _bound_zero():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def reserve(tries=200):
    """A free 127.0.0.1 port, held for this process until release(port)."""
    os.makedirs(LOCK_DIR, exist_ok=True)
    for _ in range(tries):
        port = _bound_zero()
        if port in _HELD:
            continue
        f = open(os.path.join(LOCK_DIR, str(port)), "a")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()  # another test holds it: its server may not listen yet
            continue
        _HELD[port] = f
        return port
    raise RuntimeError("no free port reservable in %d tries (%s)" % (tries, LOCK_DIR))


def release(port):
    f = _HELD.pop(port, None)
    if f:
        f.close()


@atexit.register
def _release_all():
    for p in list(_HELD):
        release(p)


def _children(pid):
    out = []
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def _socket_inodes(pid):
    """The socket inodes open in pid and its descendants."""
    inodes = set()
    for c in _children(pid):
        inodes |= _socket_inodes(c)
    fd_dir = "/proc/%d/fd" % pid
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return inodes
    for n in names:
        try:
            t = os.readlink(os.path.join(fd_dir, n))
        except OSError:
            continue
        if t.startswith("socket:["):
            inodes.add(t[8:-1])
    return inodes


def listeners(port):
    """The socket inodes listening on 127.0.0.1:port or 0.0.0.0:port (Linux)."""
    out = []
    want = {"0100007F:%04X" % port, "00000000:%04X" % port}
    try:
        with open("/proc/net/tcp") as f:
            next(f)
            for line in f:
                c = line.split()
                if c[1] in want and c[3] == "0A":  # 0A: LISTEN
                    out.append(c[9])
    except OSError:
        pass
    return out


def owns_listeners(pid, ports):
    """True when process pid listens on every port and nothing else does:
    the server answering there is this one, alone. None where /proc/net/tcp
    cannot tell (not Linux)."""
    if not os.path.exists("/proc/net/tcp"):
        return None
    mine = _socket_inodes(pid)
    for p in ports:
        ls = listeners(p)
        if not ls or any(i not in mine for i in ls):
            return False
    return True
