"""End-to-end: where a run's processes sit. A one-shot worker starts a session of its own (the
caller's is a shell, whose stopped jobs any member could SIGCONT). A zygote's worker leads only a
process group (the supervisor kills it whole) in the server's session: a session of its own would
be a scheduler autogroup of its own, in which its nice and SCHED_IDLE weigh only against itself
and the group against the front as an equal. Neither has a controlling terminal: the zygote's
gives the server's up and, not a session leader, cannot take one."""
import os
import subprocess
import threading
import time

from conftest import PYSNIP, descendants
from servekit import Server


def stat(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return {"ppid": int(fields[1]), "pgrp": int(fields[2]), "sid": int(fields[3]),
            "tty": int(fields[4])}


def autogroup(pid):
    try:
        with open("/proc/%d/autogroup" % pid) as f:
            return f.read().split()[0]
    except OSError:  # a kernel without CONFIG_SCHED_AUTOGROUP
        return None


def seccomp_mode(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Seccomp:"):
                return int(line.split()[1])
    return 0


def sandboxed_descendants(pid, want, timeout=20.0):
    """[(pid, stat)] of pid's descendants once `want` of them run under their seccomp filter
    (their last phase: the process group and the terminal were settled long before)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = []
        for d in descendants(pid):
            try:
                if seccomp_mode(d) == 2:
                    got.append((d, stat(d)))
            except OSError:
                pass
        if len(got) >= want:
            return got
        time.sleep(0.01)
    raise AssertionError("fewer than %d sandboxed descendants of %d after %.0f s"
                         % (want, pid, timeout))


def check_no_terminal(procs):
    for pid, st in procs:
        assert st["tty"] == 0, ("pid %d has a controlling terminal" % pid, st)


def check_in_servers_session(leader, procs):
    top = stat(leader)
    ag = autogroup(leader)
    for pid, st in procs:
        assert st["sid"] == top["sid"], ("pid %d has a session of its own" % pid, st, top)
        if ag is not None:
            assert autogroup(pid) == ag, (pid, autogroup(pid), ag)


def pty():
    """(master fd, a preexec_fn that makes the pty the new session's controlling terminal)"""
    master, slave = os.openpty()
    name = os.ttyname(slave)
    os.close(slave)

    def take():  # a session leader without a terminal that opens one (no O_NOCTTY) gets it
        os.close(os.open(name, os.O_RDWR))
    return master, name, take


def test_an_exec_worker_has_a_session_of_its_own_and_no_terminal():
    master, name, take = pty()
    p = subprocess.Popen([PYSNIP, "exec", "-", "--wall-time", "30s"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                         preexec_fn=take)
    try:
        p.stdin.write(b"import time\ntime.sleep(60)\n")
        p.stdin.close()
        procs = sandboxed_descendants(p.pid, 1)
        top = stat(p.pid)
        # positive control: the caller really has the pty as its controlling terminal
        assert top["tty"] == os.stat(name).st_rdev and top["sid"] == p.pid, top
        check_no_terminal(procs)
        assert all(st["sid"] != top["sid"] for pid, st in procs), (procs, top)
    finally:
        p.kill()
        p.wait(timeout=30)
        p.stdout.close()
        p.stderr.close()
        os.close(master)


def test_served_workers_and_session_hosts_stay_in_the_servers_session_with_no_terminal():
    master, name, take = pty()
    srv = Server("--workers", "2", new_session=True, preexec_fn=take)
    try:
        # positive control: the server really has the pty as its controlling terminal
        assert stat(srv.pid)["tty"] == os.stat(name).st_rdev, stat(srv.pid)
        out = {}

        def one_shot():
            out["run"] = srv.exec("import time\ntime.sleep(1.5)")

        def session_cell():
            st, _, s = srv.request("POST", "/v1/sessions", {})
            assert st == 201, s
            out["cell"] = srv.request("POST", "/v1/sessions/%s/exec" % s["id"],
                                      {"code": "import time\ntime.sleep(1.5)"})
            srv.request("DELETE", "/v1/sessions/" + s["id"])

        ts = [threading.Thread(target=f) for f in (one_shot, session_cell)]
        for t in ts:
            t.start()
        # the served worker, the session's holder and its cell (and any spare that is ready)
        procs = sandboxed_descendants(srv.pid, 3)
        check_no_terminal(procs)
        check_in_servers_session(srv.pid, procs)
        # and everything else the server forked: zygotes, session hosts, spares
        for pid in srv.descendants():
            try:
                assert stat(pid)["sid"] == stat(srv.pid)["sid"], (pid, stat(pid))
            except FileNotFoundError:
                pass
        for t in ts:
            t.join(60)
        assert out["run"][0] == 200 and out["run"][2]["status"] == "ok", out["run"]
        assert out["cell"][0] == 200 and out["cell"][2]["status"] == "ok", out["cell"]
    finally:
        srv.stop()
        os.close(master)
