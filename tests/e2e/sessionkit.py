"""Drive `pysnip session` (JSON lines on stdio) from a test: one reader thread, events per id."""
import json
import os

import pytest
import queue
import subprocess
import threading
import time

from conftest import FIXTURES, PYSNIP

PRIVATE_UIDS = os.path.join(FIXTURES, "policies", "session", "private_uids.json")

# A uid of its own per session, and finding a session's processes by it, need root: not root,
# every run keeps the caller's uid (a user namespace maps only it), and so does pytest itself.
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="not root: sessions keep the caller's "
                                "uid (a user namespace maps only it), so neither distinct uids "
                                "nor a session's processes found by its uid can be shown")


class Session:
    def __init__(self, *args, policy=PRIVATE_UIDS, env=None):
        cmd = [PYSNIP, "session"] + (["--policy", policy] if policy else []) + list(args)
        e = dict(os.environ)
        e.update(env or {})
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=e)
        self.q = queue.Queue()
        self.n = 0
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in self.p.stdout:
            self.q.put(json.loads(line))
        self.q.put(None)

    def send(self, obj):
        self.p.stdin.write((json.dumps(obj) + "\n").encode())
        self.p.stdin.flush()

    def send_raw(self, text):
        self.p.stdin.write(text.encode() + b"\n")
        self.p.stdin.flush()

    def next_event(self, timeout=60):
        return self.q.get(timeout=timeout)

    def start(self, code, limits=None):
        self.n += 1
        msg = {"id": self.n, "code": code}
        if limits is not None:
            msg["limits"] = limits
        self.send(msg)
        return self.n

    def wait(self, cid, timeout=60):
        """(verdict, [events before it]) of cell cid."""
        events, deadline = [], time.monotonic() + timeout
        while True:
            ev = self.next_event(max(0.1, deadline - time.monotonic()))
            assert ev is not None, "pysnip session ended early: %s" % self.stderr()
            if ev.get("id") == cid and ev.get("event") == "verdict":
                return ev["verdict"], events
            assert not (ev.get("id") == cid and ev.get("event") == "error"), ev
            events.append(ev)

    def run(self, code, limits=None, timeout=60):
        return self.wait(self.start(code, limits), timeout)[0]

    def close(self, timeout=30):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        rc = self.p.wait(timeout)
        self.t.join(5)
        return rc

    def stderr(self):
        try:
            return self.p.stderr.read().decode(errors="replace") if self.p.poll() is not None else ""
        except ValueError:
            return ""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.p.poll() is None:
            try:
                self.close()
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def value(s, expr):
    """The text/plain result of expr in session s."""
    v = s.run(expr)
    assert v["status"] == "ok", v
    return v["result"]["data"]["text/plain"] if v["result"] else None


def procs_of_uid(uid):
    """Pids of live processes whose real uid is uid (zombies excluded)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/status" % d) as f:
                st = f.read()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in st.splitlines() if ":" in line)
        if fields.get("State", "").strip().startswith("Z"):
            continue
        if int(fields.get("Uid", "-1").split()[0]) == uid:
            out.append(int(d))
    return out
