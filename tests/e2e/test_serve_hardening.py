"""`pysnip serve` against hostile clients and a hostile host (issue 9): descriptor exhaustion,
unauthenticated uploads, slow clients, batch amplification, signals to the process group,
token and routing tricks. Each test plays the attack with plain sockets and asserts magnitudes
(bytes, seconds, lines, processes), with a positive control where a denial is shown."""
import http.client
import json
import os
import resource
import signal
import socket
import subprocess
import threading
import time

import pytest

from servekit import PYSNIP, Server, wait_for


def raw_request(srv, method, path, body=b"", headers=None, timeout=10):
    """One request on a fresh connection, bytes as given: (status, parsed JSON or text)."""
    c = http.client.HTTPConnection(srv.host, srv.port, timeout=timeout)
    try:
        c.putrequest(method, path, skip_accept_encoding=True)
        for k, v in (headers or {}).items():
            c.putheader(k, v)
        if body or method == "POST":
            c.putheader("Content-Length", str(len(body)))
        c.endheaders(body)
        r = c.getresponse()
        text = r.read()
        if r.getheader("Content-Type", "").startswith("application/json"):
            return r.status, json.loads(text)
        return r.status, text.decode()
    finally:
        c.close()


def prlimit_nofile(pid, soft, hard):
    subprocess.run(["prlimit", "--pid", str(pid), "--nofile=%d:%d" % (soft, hard)], check=True)


def nofile_of(pid):
    with open("/proc/%d/limits" % pid) as f:
        for line in f:
            if line.startswith("Max open files"):
                return int(line.split()[3]), int(line.split()[4])
    raise AssertionError("no NOFILE line")


# ---------------------------------------------------------------- finding 2: descriptors

def test_fd_exhaustion_pool_heals_and_log_is_bounded():
    """The front at its NOFILE limit, connections waiting in the backlog, runs ending: every
    descriptor a run frees used to go to an accept at once, so the replacement worker the
    zygote sent could not be received (MSG_CTRUNC) and was dropped while the zygote still
    counted it as a spare: the pool emptied for good (every later request 500 after 15 s),
    and MHD's accept loop logged "Too many open files" millions of times."""
    s = Server("--workers", "1", "--policy", "default")
    held = []
    try:
        st, _, v = s.exec("print(1)")
        assert st == 200 and v["status"] == "ok"
        s.settled_fds()
        baseline = s.fd_kinds()
        reqs = [http.client.HTTPConnection(s.host, s.port, timeout=5) for _ in range(3)]
        for c in reqs:
            c.connect()
        held += [socket.create_connection((s.host, s.port)) for _ in range(10)]
        assert wait_for(lambda: s.connections() == 13, 5)
        lim = len(s.fds())              # no descriptor left below the limit
        prlimit_nofile(s.pid, lim, 4096)
        held += [socket.create_connection((s.host, s.port)) for _ in range(20)]  # backlog
        lines_before = len(s.lines)
        out = []
        for c in reqs:                  # one after another: each waits for a spare
            t0 = time.monotonic()
            try:
                c.request("POST", "/v1/exec", body=json.dumps({"code": "print(2)"}))
                r = c.getresponse()
                out.append((r.status, json.loads(r.read())["status"]))
            except OSError as e:
                out.append((repr(e), None))
            assert time.monotonic() - t0 < 5
        time.sleep(0.5)                 # the storm, if any, has had time to be loud
        storm = [l for l in s.lines[lines_before:] if "Too many open files" in l]
        assert 1 <= len(storm) <= 10, (len(storm), storm[:3])
        assert out == [(200, "ok")] * 3, out
        for c in held + reqs:
            c.close()
        held = []
        prlimit_nofile(s.pid, 4096, 4096)
        # the pool is whole again: requests are answered at once, the spares all back
        for i in range(4):
            t0 = time.monotonic()
            st, _, v = s.request("POST", "/v1/exec", {"code": "print(%d)" % i})
            assert st == 200 and v["stdout"] == "%d\n" % i, v
            assert time.monotonic() - t0 < 2
        assert s.fds_back_to(baseline), (baseline, s.fd_kinds())
    finally:
        for c in held:
            c.close()
        s.stop()


def test_zygote_replaces_a_spare_the_front_dropped():
    """The mechanism under the test above, alone: with no descriptor to spare the front cannot
    receive the spare that replaces a run's worker; what arrived is closed, the spare dies of
    EOF on its request pipe, and the zygote must count it lost and fork another."""
    s = Server("--workers", "1", "--policy", "default")
    try:
        s.settled_fds()
        baseline = s.fd_kinds()
        c = http.client.HTTPConnection(s.host, s.port, timeout=10)
        c.connect()
        assert wait_for(lambda: s.connections() == 1, 5)
        # the fds below 8 are held for good (stdio, the listener, the zygote's socket...): the
        # 7 the spare needs can never all arrive; 8 still lets every poll() of a run work
        prlimit_nofile(s.pid, 8, 4096)
        c.request("POST", "/v1/exec", body=json.dumps({"code": "print('a')"}))
        r = c.getresponse()
        assert r.status == 200 and json.loads(r.read())["stdout"] == "a\n"
        c.close()
        assert wait_for(lambda: any("did not all arrive" in l for l in s.lines), 5), s.lines
        prlimit_nofile(s.pid, 4096, 4096)
        # the pool is whole again: both spares (workers + 1), and every request answered at once
        assert s.fds_back_to(baseline, 5), (baseline, s.fd_kinds())
        for i in range(3):
            t0 = time.monotonic()
            st, _, v = s.request("POST", "/v1/exec", {"code": "print(%d)" % i},
                                 conn=None)
            assert st == 200 and v["stdout"] == "%d\n" % i
            assert time.monotonic() - t0 < 2
    finally:
        s.stop()


def test_front_raises_soft_nofile_to_hard():
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    s = Server("--workers", "1", "--policy", "default",
               preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard)))
    try:
        assert nofile_of(s.pid) == (hard, hard)
        st, _, v = s.exec("print(1)")
        assert st == 200 and v["status"] == "ok"
    finally:
        s.stop()


def test_connections_past_the_descriptor_budget_get_503():
    """Connections are refused with a 503 past what NOFILE leaves once the pools are counted,
    instead of taking the descriptors the pool needs."""
    s = Server("--workers", "1", "--policy", "default",
               preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128)))
    held = []
    try:
        # 128 - the pool's (2 * 1 + 2) * 7 - 64 of our own = 36 connections; each made
        # trusted by a request (no token here), so only the budget bounds them
        for _ in range(36):
            c = http.client.HTTPConnection(s.host, s.port, timeout=10)
            c.request("GET", "/healthz")
            r = c.getresponse()
            assert r.status == 200
            r.read()
            held.append(c)
        assert s.connections() == 36
        st, e = raw_request(s, "GET", "/healthz")
        assert st == 503 and e["error"] == "too many connections; retry later", e
        held.pop().close()
        assert wait_for(lambda: s.connections() == 35, 5)
        st, e = raw_request(s, "GET", "/healthz")       # control: one place free
        assert st == 200
    finally:
        for c in held:
            c.close()
        s.stop()
