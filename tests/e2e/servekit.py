"""Start and stop a real `pysnip serve` for tests (used by test_serve, test_client, tests/load)."""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYSNIP = os.environ.get("PYSNIP", os.path.join(ROOT, "pysnip"))
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))


PF_EXITING = 0x4  # the kernel's task flag, set first thing in do_exit()


SIGKILL_BIT = 1 << (9 - 1)  # in /proc/PID/status's SigPnd and ShdPnd masks


def exiting(pid):
    """In its own exit already (PF_EXITING in /proc/PID/stat's flags), or with a SIGKILL
    pending (its zygote's death, PR_SET_PDEATHSIG, on a process not scheduled since): it
    cannot run again. A worker that answered steps down to SCHED_IDLE (host/run/worker.c), a
    spare waits at nice 19, and on a loaded machine either can still be short of do_exit()
    when a server stopped by SIGKILL to its zygote is gone; that is not a run that outlived
    its supervision."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            if int(f.read().rsplit(")", 1)[1].split()[6]) & PF_EXITING:
                return True
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(("SigPnd:", "ShdPnd:")) and \
                        int(line.split()[1], 16) & SIGKILL_BIT:
                    return True
        return False
    except (OSError, ValueError, IndexError):
        return False


class Server:
    """A running `pysnip serve` on 127.0.0.1 (port chosen by the kernel) or a Unix socket.

    Its TMPDIR is a private directory, so tests can check that no scratch directory is left."""

    def __init__(self, *args, unix=False, token=None, env=None, start_timeout=120,
                 tmp_parent=None, preexec_fn=None, new_session=False):
        self.tmp = tempfile.mkdtemp(prefix="pysnip-servetest-", dir=tmp_parent)
        os.chmod(self.tmp, 0o711)
        self.token = token
        argv = [PYSNIP, "serve"] + list(args)
        if token is not None:
            tf = os.path.join(self.tmp, "token")
            with open(tf, "w") as f:
                f.write(token + "\n")
            argv += ["--token-file", tf]
        if unix:
            self.sock_path = os.path.join(self.tmp, "pysnip.sock")
            argv += ["--listen", "unix:" + self.sock_path]
        else:
            self.sock_path = None
            argv += ["--listen", "127.0.0.1:0"]
        e = dict(os.environ)
        e["TMPDIR"] = self.tmp
        e.update(env or {})
        self.lines = []
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     env=e, preexec_fn=preexec_fn,
                                     start_new_session=new_session)
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        if not self._ready.wait(start_timeout) or self.proc.poll() is not None:
            err = "\n".join(self.lines)
            self.stop()
            raise RuntimeError("pysnip serve did not start:\n" + err)
        if unix:
            self.url = "unix:" + self.sock_path
        else:
            m = [re.search(r"listening on http://([\d.]+):(\d+)", l) for l in self.lines]
            m = [x for x in m if x][0]
            self.host, self.port = m.group(1), int(m.group(2))
            self.url = "http://%s:%d" % (self.host, self.port)

    def _read_stderr(self):
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace").rstrip("\n")
            self.lines.append(line)
            if "pysnip serve: ready" in line:
                self._ready.set()
        self._ready.set()

    @property
    def pid(self):
        return self.proc.pid

    def conn(self, timeout=60):
        if self.sock_path:
            import pysnip_client
            return pysnip_client._UnixHTTPConnection(self.sock_path, timeout=timeout)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, conn=None, raw=None):
        """(status, headers dict, parsed JSON or text). body: dict -> JSON; raw: bytes as is."""
        c = conn or self.conn()
        h = dict(headers or {})
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
        if self.token and "Authorization" not in h:
            h["Authorization"] = "Bearer " + self.token
        try:
            c.request(method, path, body=data, headers=h)
            r = c.getresponse()
            text = r.read()
            hdrs = {k.lower(): v for k, v in r.getheaders()}
        finally:
            if conn is None:
                c.close()
        if hdrs.get("content-type", "").startswith("application/json"):
            return r.status, hdrs, json.loads(text)
        return r.status, hdrs, text.decode()

    def exec(self, code, **kw):
        return self.request("POST", "/v1/exec", dict(code=code, **kw))

    def children(self, pid=None):
        """Direct children of pid (default: the server)."""
        pid = pid or self.pid
        out = []
        for task in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                    out += [int(x) for x in f.read().split()]
            except OSError:
                pass
        return out

    def zygotes(self):
        """{policy name: pid} of the zygotes."""
        out = {}
        for c in self.children():
            try:
                with open("/proc/%d/cmdline" % c, "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if b"zygote" in argv:
                pol = argv[argv.index(b"--policy") + 1].decode()
                out[os.path.basename(pol).rsplit(".json", 1)[0]] = c
        return out

    def descendants(self):
        return self.descendants_of(self.pid)

    def descendants_of(self, pid):
        todo, seen = [pid], []
        while todo:
            p = todo.pop()
            try:
                kids = self.children(p)
            except OSError:
                continue
            seen += kids
            todo += kids
        return seen

    def strays(self):
        """Processes of this server's runs (they carry the zygote's argv, `--parent PID`)
        that are no longer in its process tree: a run that outlived its supervision."""
        mark = b"--parent\0%d\0" % self.pid
        marked = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    if mark in f.read():
                        marked.append(int(d))
            except OSError:
                pass
        # the tree after the scan: a spare forked meanwhile is in it (the other way round, a
        # process forked between the two looks was taken for a stray)
        tree = set(self.descendants())
        return [p for p in marked if p not in tree and os.path.exists("/proc/%d" % p) and
                not exiting(p)]

    def fds(self):
        """{fd: target} of the server process."""
        out = {}
        for fd in os.listdir("/proc/%d/fd" % self.pid):
            try:
                out[int(fd)] = os.readlink("/proc/%d/fd/%s" % (self.pid, fd))
            except OSError:
                pass
        return out

    def settled_fds(self, timeout=5.0, still=0.5):
        """fds once no client connection is left open (closed keep-alives linger briefly) and
        the idle pool has stopped changing for `still` seconds: a run's replacement spare is
        forked once its worker is reaped, which may come after the run's answer."""
        end = time.monotonic() + timeout
        last, since = None, time.monotonic()
        while time.monotonic() < end:
            kinds = self.fd_kinds() if self.connections() == 0 else None
            if kinds != last:
                last, since = kinds, time.monotonic()
            elif kinds is not None and time.monotonic() - since >= still:
                break
            time.sleep(0.02)
        return self.fds()

    def fd_kinds(self):
        """Sorted kinds of the server's fds ("socket", "pipe", "/dev/null", "anon_inode:...")."""
        return sorted(t.split(":[")[0] for t in self.fds().values())

    def fds_back_to(self, kinds, timeout=10.0):
        """Wait until the server holds the same kinds and number of fds as before."""
        return wait_for(lambda: self.fd_kinds() == kinds, timeout)

    def connections(self):
        """Established TCP connections to the server's port (0 for a Unix socket server)."""
        if self.sock_path:
            return 0
        n = 0
        for path in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                with open(path) as f:
                    for line in f.readlines()[1:]:
                        parts = line.split()
                        local, state = parts[1], parts[3]
                        # anything but LISTEN and TIME_WAIT still holds a server fd
                        if int(local.split(":")[1], 16) == self.port and \
                                state not in ("0A", "06"):
                            n += 1
            except OSError:
                pass
        return n

    def rss_kb(self):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def scratch_left(self, settle=1.0):
        """Per-run scratch directories still present under the server's TMPDIR, but for those
        of workers forked ahead of demand (alive in the server's tree, the directory their cwd:
        made for a run that has not come yet), and anything at all inside a zygote's shared
        scratch mountpoint (pysnip-scratch: every run has its own tmpfs over it, so nothing of
        a run may ever land there). A worker being forked has its directory a few milliseconds
        before it enters it: what is unexplained is looked at again for `settle` s."""
        end = time.monotonic() + settle
        while True:
            held = set()
            for pid in self.descendants():
                try:
                    held.add(os.readlink("/proc/%d/cwd" % pid))
                except OSError:     # not root: a worker is not dumpable; its mounts tell
                    try:
                        with open("/proc/%d/mountinfo" % pid) as f:
                            held.update(l.split()[4] for l in f if " - tmpfs pysnip-scratch " in l)
                    except OSError:
                        pass
            left = []
            for root, dirs, files in os.walk(self.tmp):
                left += [os.path.join(root, d) for d in dirs if d.startswith("pysnip-run-")]
                if os.path.basename(root) == "pysnip-scratch":
                    left += [os.path.join(root, n) for n in dirs + files]
            left = [d for d in left if d not in held]
            if not left or time.monotonic() >= end:
                return left
            time.sleep(0.02)

    def terminate(self, timeout=30):
        """SIGTERM and wait; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        subprocess.run(["rm", "-rf", self.tmp])


def wait_for(pred, timeout=10.0, step=0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()
