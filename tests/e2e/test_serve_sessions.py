"""Sessions over HTTP (`pysnip serve`, /v1/sessions): the same engine as `pysnip session`,
each session a fork of its policy's zygote."""
import os
import re
import threading
import time

import pytest

from conftest import SANITIZER
from servekit import Server
from sessionkit import PRIVATE_UIDS, needs_root, procs_of_uid


@pytest.fixture(scope="module")
def srv():
    s = Server("--policy", PRIVATE_UIDS, "--workers", "2", "--max-sessions", "4")
    yield s
    s.stop()


def new(srv, **body):
    st, _, r = srv.request("POST", "/v1/sessions", body)
    assert st == 201, r
    return r["id"]


def run(srv, sid, code, **kw):
    st, _, v = srv.request("POST", "/v1/sessions/%s/exec" % sid, dict(code=code, **kw))
    assert st == 200, v
    return v


def delete(srv, sid):
    st, _, r = srv.request("DELETE", "/v1/sessions/" + sid)
    assert st == 200 and r == {"deleted": sid}


def metric(srv, name):
    st, _, text = srv.request("GET", "/metrics")
    m = re.search(r"^%s (\d+)$" % name, text, re.M)
    return int(m.group(1))


def test_state_kept_and_rolled_back_over_http(srv):
    sid = new(srv)
    assert re.fullmatch(r"[0-9a-f]{32}", sid)
    assert run(srv, sid, "x = 41")["state"] == "kept"
    v = run(srv, sid, "x += 1; x")
    assert v["result"]["data"]["text/plain"] == "42" and v["execution_count"] == 2
    v = run(srv, sid, "x = 0\nimport os\nos.kill(os.getpid(), 9)")
    assert v["state"] == "rolled_back" and v["signal_name"] == "SIGKILL"
    assert run(srv, sid, "x")["result"]["data"]["text/plain"] == "42"
    st, _, info = srv.request("GET", "/v1/sessions/" + sid)
    assert st == 200 and info["id"] == sid and info["cells"] == 4
    delete(srv, sid)
    st, _, r = srv.request("POST", "/v1/sessions/%s/exec" % sid, {"code": "x"})
    assert st == 404, r


def test_sessions_are_apart(srv):
    a, b = new(srv), new(srv)
    try:
        run(srv, a, "secret = 'a'")
        v = run(srv, b, "'secret' in globals()")
        assert v["result"]["data"]["text/plain"] == "False"
        ua = run(srv, a, "import os\nos.getuid()")["result"]["data"]["text/plain"]
        ub = run(srv, b, "import os\nos.getuid()")["result"]["data"]["text/plain"]
        if os.geteuid() == 0:  # not root, every session keeps the caller's uid
            assert ua != ub
    finally:
        delete(srv, a)
        delete(srv, b)


def test_interrupt_over_http(srv):
    sid = new(srv)
    out = {}
    t = threading.Thread(target=lambda: out.update(
        v=run(srv, sid, "import time\nbefore = 1\ntime.sleep(4)\nafter = 1")))
    t.start()
    time.sleep(1.0)
    st, _, r = srv.request("POST", "/v1/sessions/%s/interrupt" % sid, {})
    assert st == 200, r
    t.join(30)
    assert out["v"]["exception"]["type"] == "KeyboardInterrupt"
    assert run(srv, sid, "(before, 'after' in globals())")["result"]["data"]["text/plain"] == \
        "(1, False)"
    delete(srv, sid)


def test_max_sessions_gives_429(srv):
    ids = [new(srv) for _ in range(4)]
    st, hdrs, r = srv.request("POST", "/v1/sessions", {})
    assert st == 429 and "max-sessions" in r["error"], r
    for sid in ids:
        delete(srv, sid)
    delete(srv, new(srv))  # a place is free again


@pytest.mark.parametrize("path,body,field", [
    ("/v1/sessions", {"policy": "nope"}, "policy"),
    ("/v1/sessions", {"limits": {"wall": "1h"}}, "limits"),
    ("/v1/sessions", {"session": {"idle": 5}}, "session"),
    ("/v1/sessions", {"session": {"bogus": "1s"}}, "session"),
])
def test_bad_session_requests_name_the_field(srv, path, body, field):
    st, _, r = srv.request("POST", path, body)
    assert st == 400 and r["field"] == field, r


# found by tests/fuzz/fuzz_session_http.c: each was taken (or undefined behaviour) before
@pytest.mark.parametrize("raw,field", [
    (b'{"policy": "default", "policy": "strict"}', None),
    (b'{"limits": {"wall": "1s", "wall": "2s"}}', "limits"),
    (b'{"session": {"cells": 1e300}}', "session"),
    (b'{"session": {"cells": 2.5}}', "session"),
    (b'{"policy": "default\\u0000x"}', None),
    (b'{"policy": "default"}\x00', None),
    (b'{"policy": "\xff"}', None),
    (b'{"limts": {"wall": "1s"}}', None),  # misspelt: the policy's limits, silently
])
def test_bad_session_bodies_are_refused(srv, raw, field):
    st, _, r = srv.request("POST", "/v1/sessions", raw=raw,
                           headers={"Content-Type": "application/json"})
    assert st == 400 and r["field"] == field, r


def test_unknown_id_is_404(srv):
    st, _, r = srv.request("POST", "/v1/sessions/%s/exec" % ("0" * 32), {"code": "1"})
    assert st == 404
    st, _, r = srv.request("GET", "/v1/sessions/short")
    assert st == 404


def test_idle_sessions_are_reaped(srv):
    live = metric(srv, "pysnip_sessions_live")
    sid = new(srv, session={"idle": "1s"})
    run(srv, sid, "a = 1")
    assert metric(srv, "pysnip_sessions_live") == live + 1
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        st, _, _ = srv.request("GET", "/v1/sessions/" + sid)
        if st == 404:
            break
        time.sleep(0.3)
    assert st == 404
    assert metric(srv, "pysnip_sessions_live") == live


def test_metrics_count_created_and_rolled_back(srv):
    c0 = metric(srv, "pysnip_sessions_created_total")
    r0 = metric(srv, "pysnip_session_rolled_back_total")
    sid = new(srv)
    run(srv, sid, "import os\nos.kill(os.getpid(), 9)")
    assert metric(srv, "pysnip_sessions_created_total") == c0 + 1
    assert metric(srv, "pysnip_session_rolled_back_total") == r0 + 1
    delete(srv, sid)


def test_a_session_is_a_fork_of_the_zygote(srv):
    """No interpreter start: the session host is a child of the policy's zygote running the
    zygote's own program (no exec of `pysnip session-host`)."""
    sid = new(srv)
    zpid = list(srv.zygotes().values())[0]
    with open("/proc/%d/cmdline" % zpid, "rb") as f:
        zcmd = f.read()
    hosts = []
    for c in srv.children(zpid):
        with open("/proc/%d/cmdline" % c, "rb") as f:
            cmd = f.read()
        assert b"session-host" not in cmd
        if cmd == zcmd:
            hosts.append(c)
    assert hosts, "no child of the zygote runs the zygote's program"
    delete(srv, sid)


@needs_root
def test_a_session_host_forked_ahead_is_idle_until_a_request_takes_it(srv):
    """The zygote's spare session host starts at SCHED_IDLE (background work that yields at
    once: zygote.c); the request that takes it puts it back to SCHED_OTHER, so a session
    never runs at idle priority. An exec alone in the front puts the host on the front's
    CPU (front.c, place_host)."""
    zpid = list(srv.zygotes().values())[0]
    with open("/proc/%d/cmdline" % zpid, "rb") as f:
        zcmd = f.read()

    def hosts():
        out = {}
        for c in srv.children(zpid):
            with open("/proc/%d/cmdline" % c, "rb") as f:
                if f.read() == zcmd:
                    out[c] = os.sched_getscheduler(c)
        return out

    a = new(srv)
    assert run(srv, a, "x = 1")["status"] == "ok"
    deadline = time.monotonic() + 10
    while os.SCHED_IDLE not in hosts().values() and time.monotonic() < deadline:
        time.sleep(0.05)
    before = hosts()
    spare = [pid for pid, pol in before.items() if pol == os.SCHED_IDLE]
    assert len(spare) == 1, before
    assert all(pol == os.SCHED_OTHER for pid, pol in before.items() if pid not in spare), before
    b = new(srv)
    assert run(srv, b, "x = 2")["status"] == "ok"
    assert os.sched_getscheduler(spare[0]) == os.SCHED_OTHER  # b's host now
    assert os.getpriority(os.PRIO_PROCESS, spare[0]) == 0
    if len(os.sched_getaffinity(0)) > 1:  # its exec alone in the front: on the front's CPU
        assert len(os.sched_getaffinity(spare[0])) == 1
    delete(srv, a)
    delete(srv, b)


def fds_and_rss(pid):
    with open("/proc/%d/status" % pid) as f:
        rss = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))
    return len(os.listdir("/proc/%d/fd" % pid)), rss


@needs_root
def test_100_sessions_created_and_ended_leave_nothing(srv):
    run_one = new(srv)
    delete(srv, run_one)  # warm: the table, and the session host forked ahead, are made
    time.sleep(1.0)
    def session_procs():
        return [p for k in range(64) for p in procs_of_uid(61000 + k)]

    # before and after: the zygote's spare one-shot workers (they share the policy's uid
    # range) and the one session host it keeps forked ahead, with its holder
    spares = len(session_procs())
    fd0, rss0 = fds_and_rss(srv.pid)
    desc0 = len(srv.descendants())
    for i in range(100):
        sid = new(srv)
        if i % 10 == 0:
            run(srv, sid, "import os\nopen('f', 'w').write('x')\nos.kill(os.getpid(), 9)")
        delete(srv, sid)
    deadline = time.monotonic() + 10
    while ((len(srv.descendants()) > desc0 or len(session_procs()) > spares) and
           time.monotonic() < deadline):
        time.sleep(0.1)
    fd1, rss1 = fds_and_rss(srv.pid)
    print("\nserver fds %d -> %d, RSS %d kB -> %d kB over 100 sessions" % (fd0, fd1, rss0, rss1))
    assert fd1 == fd0
    assert len(srv.descendants()) == desc0
    assert len(session_procs()) == spares
    if not SANITIZER:  # ASan's allocator keeps what is freed (quarantine)
        assert rss1 - rss0 < 4096, (rss0, rss1)
    leftover = [n for n in os.listdir(srv.tmp) if n.startswith("pysnip-run-")]
    for root, dirs, _ in os.walk(srv.tmp):
        leftover += [d for d in dirs if d.startswith("pysnip-run-")]
    assert leftover == []


def test_python_client_session(srv):
    import threading as th
    import pysnip_client
    c = pysnip_client.Client(srv.url)
    with c.session(wall="5s", idle="1m") as s:
        assert s.exec("x = 41")["state"] == "kept"
        assert s.exec("x += 1; x")["result"]["data"]["text/plain"] == "42"
        v = s.exec("import os\nos.kill(os.getpid(), 9)")
        assert v["state"] == "rolled_back"
        out = {}
        t = th.Thread(target=lambda: out.update(v=s.exec("import time\ntime.sleep(4)")))
        t.start()
        time.sleep(1.0)
        s.interrupt()
        t.join(30)
        assert out["v"]["exception"]["type"] == "KeyboardInterrupt"
        assert s.status()["cells"] == 4
        sid = s.id
    with pytest.raises(pysnip_client.SessionGone):
        pysnip_client.Session(c, {"id": sid}).exec("x")
    with pytest.raises(pysnip_client.BadRequest) as e:
        c.session(wall="1h")
    assert e.value.field == "limits"
    c.close()


def test_request_limits_hold_on_forked_ahead_and_fresh_sessions(srv):
    """A session host forked ahead has the policy's limits; the request's wall reaches it
    (configure); a request with another memory limit gets one forked for it."""
    sid = new(srv, limits={"wall": "1s"})
    v = run(srv, sid, "while True:\n    pass")
    assert v["status"] == "timeout" and 1000 <= v["usage"]["wall_ms"] < 3000, v["usage"]
    assert v["limits"]["wall_ms"] == 1000
    delete(srv, sid)
    if SANITIZER:
        return  # RLIMIT_AS cannot apply under ASan's shadow memory (needs_rlimit_as)
    sid = new(srv, limits={"memory": "128M"})
    v = run(srv, sid, "b = bytearray(150 << 20)")
    assert v["status"] == "memory_limit" and v["state"] == "rolled_back", v
    delete(srv, sid)
    sid = new(srv)  # positive control: the policy's 256M holds it
    assert run(srv, sid, "b = bytearray(150 << 20)")["state"] == "kept"
    delete(srv, sid)


def test_session_limits_of_a_request_never_loosen_the_server(srv):
    """0 never means "no limit" in a request (as for /v1/exec's limits): a session limit of 0
    is refused, and the idle time (reaped after 10 minutes) may only be shortened."""
    for sl in ({"idle": "0"}, {"idle": "0s"}, {"idle": "1h"}, {"lifetime": "0"}, {"cells": 0},
               {"cpu": "0ms"}):
        st, _, r = srv.request("POST", "/v1/sessions", {"session": sl})
        key = "session." + next(iter(sl))
        assert st == 400 and r["field"] == "session" and r["error"].startswith(key), (sl, r)
    st, _, r = srv.request("POST", "/v1/sessions", {"session": {"idle": "5m", "cells": 3}})
    assert st == 201 and r["session"]["idle_ms"] == 300000 and r["session"]["cells"] == 3, r
    delete(srv, r["id"])
