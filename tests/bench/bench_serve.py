"""Benchmark of `pysnip serve` (run by `make bench`; figures printed, targets reported, never
a failed test):

- warm latency of POST /v1/exec {"code": "print(1)"} over one keep-alive connection, p50/p99,
  against /usr/bin/python3.11 -I -S -c 'print(1)' process start measured in the same run
  (targets: p50 <= 0.15x, p99 <= 0.3x);
- throughput with every layer on, several keep-alive clients (target >= 2000/s on 2 cores),
  next to its floor measured in the same run: the same interpreter with the same modules
  imported, forking a child per print(1) with no sandbox, no HTTP and no verdict, one such
  loop per core (what any fork-per-snippet design costs on this machine before it adds
  anything);
- Private_Dirty of a running worker for print(1) (smaps_rollup; target <= 1 MB).

    /usr/bin/python3 tests/bench/bench_serve.py --pysnip ./pysnip [--n 2000] [--seconds 5]
"""
import argparse
import json
import multiprocessing
import os
import socket
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))

BARE = ["/usr/bin/python3.11", "-I", "-S", "-c", "print(1)"]
BODY = json.dumps({"code": "print(1)"}).encode()


def pct(samples, p):
    s = sorted(samples)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def bare_python(n):
    """Wall time (ms) of n process starts, spawned directly (no shell, no subprocess module)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    out = []
    for i in range(n + 5):
        t0 = time.perf_counter()
        pid = os.posix_spawn(BARE[0], BARE, os.environ,
                             file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
        os.waitpid(pid, 0)
        if i >= 5:
            out.append((time.perf_counter() - t0) * 1000)
    os.close(devnull)
    return out


# One loop of the floor: argv[1] seconds, argv[2] the modules to import first (the zygote's).
FORK_LOOP = r"""
import gc, os, sys, time
for name in sys.argv[2].split(","):
    try:
        __import__(name)
    except BaseException:
        pass
gc.collect()
gc.freeze()
devnull = os.open(os.devnull, os.O_WRONLY)
n, end = 0, time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    pid = os.fork()
    if pid == 0:
        os.dup2(devnull, 1)
        exec(compile("print(1)", "<snippet>", "exec"), {"__name__": "__main__"})
        sys.stdout.flush()
        os._exit(0)
    os.waitpid(pid, 0)
    n += 1
print(n)
"""


def fork_floor(modules, loops, seconds):
    """Snippets/s of `loops` parallel fork-per-snippet loops of bare python3.11 (FORK_LOOP)."""
    import subprocess
    procs = [subprocess.Popen(BARE[:3] + ["-c", FORK_LOOP, str(seconds), ",".join(modules)],
                              stdout=subprocess.PIPE) for _ in range(loops)]
    t0 = time.monotonic()
    total = sum(int(p.communicate()[0]) for p in procs)
    return total / (time.monotonic() - t0)


def served_modules(srv):
    """The modules a served worker starts with: the zygote's pre-imports."""
    st, _, v = srv.exec("import sys\nprint(','.join(sorted(sys.modules)))")
    assert st == 200 and v["status"] == "ok", v
    return v["stdout"].strip().split(",")


class KeepAlive:
    """A minimal HTTP/1.1 keep-alive client: the whole request in one send, the response read
    to its Content-Length. The figures are the server's, not http.client's: its header parsing
    costs 0.1-0.2 ms of Python a request on this machine, and with every core busy that is
    also the server's CPU. (tests/e2e/test_serve.py checks the server with http.client.)"""

    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def _more(self):
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("the server closed the connection")
        self.buf += data

    def post(self, path, body):
        self.sock.sendall(b"POST %s HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                          b"Content-Length: %d\r\n\r\n%s" % (path.encode(), len(body), body))
        while b"\r\n\r\n" not in self.buf:
            self._more()
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        length = [int(l.split(b":", 1)[1]) for l in lines[1:]
                  if l.lower().startswith(b"content-length:")][0]
        while len(self.buf) < length:
            self._more()
        body, self.buf = self.buf[:length], self.buf[length:]
        return int(lines[0].split()[1]), body

    def close(self):
        self.sock.close()


def serve_latency(host, port, n):
    """Milliseconds per request, n sequential requests (after 50 of warm-up). Every answer is
    checked, after the timed loop: parsing them in it would take CPU from the server, which
    the sequential test is bound by on 2 cores (a client elsewhere would not)."""
    c = KeepAlive(host, port)
    out, answers = [], []
    for i in range(n + 50):
        t0 = time.perf_counter()
        answers.append(c.post("/v1/exec", BODY))
        dt = (time.perf_counter() - t0) * 1000
        if i >= 50:
            out.append(dt)
    c.close()
    for status, body in answers:
        v = json.loads(body)
        assert status == 200 and v["status"] == "ok" and v["stdout"] == "1\n", v
    return out


def _client(args):
    host, port, seconds = args
    c = KeepAlive(host, port)
    n = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        status, _ = c.post("/v1/exec", BODY)
        n += status == 200
    c.close()
    return n


def throughput(host, port, clients, seconds):
    with multiprocessing.Pool(clients) as pool:
        t0 = time.monotonic()
        counts = pool.map(_client, [(host, port, seconds)] * clients)
        return sum(counts) / (time.monotonic() - t0)


def rollup(pid):
    out = {}
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[2] == "kB":
                out[parts[0].rstrip(":")] = int(parts[1])
    return out


def in_read_of_fd0(pid):
    """A worker forked ahead of demand waits in read(0, ...) for its request."""
    try:
        with open("/proc/%d/syscall" % pid) as f:
            parts = f.read().split()
    except OSError:
        return False
    return len(parts) > 1 and parts[0] == "0" and int(parts[1], 16) == 0


def worker_private_dirty(srv):
    """Private_Dirty (kB) of a worker running print(1) (it then waits, so it can be measured),
    and of a worker forked ahead of demand, waiting for its request."""
    code = "print(1)\nimport time\ntime.sleep(1.5)"
    t = threading.Thread(target=srv.exec, args=(code,))
    t.start()
    z = srv.zygotes()["default"]
    time.sleep(0.5)
    kids = [k for k in srv.children(z)
            if open("/proc/%d/comm" % k).read().strip() != "pysnip-init"]  # the PID ns's init
    running = [k for k in kids if not in_read_of_fd0(k)]
    idle = [k for k in kids if in_read_of_fd0(k)]
    assert running and idle, (kids, running, idle)
    w, i = rollup(running[0])["Private_Dirty"], rollup(idle[0])["Private_Dirty"]
    t.join()
    return w, i


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pysnip", default=os.path.join(os.path.dirname(os.path.dirname(HERE)),
                                                     "pysnip"))
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--bare-n", type=int, default=300)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--clients", type=int, default=4)
    a = ap.parse_args()
    os.environ["PYSNIP"] = a.pysnip
    from servekit import Server

    # Where the server puts its scratch directories when TMPDIR is unset, as deployed: /dev/shm
    # when it is a tmpfs (host/util.c, ps_scratch_base). Server() gives it a private TMPDIR
    # (to check nothing is left) under the same parent.
    with open("/proc/self/mounts") as f:
        shm = any(l.split()[1:3] == ["/dev/shm", "tmpfs"] for l in f)
    srv = Server("--policy", "default",
                 tmp_parent="/dev/shm" if shm and os.access("/dev/shm", os.W_OK) else None)
    try:
        cores = os.cpu_count()
        bare = bare_python(a.bare_n // 2)
        lat = serve_latency(srv.host, srv.port, a.n)
        bare += bare_python(a.bare_n // 2)      # before and after: share the machine's noise
        b50, b99 = pct(bare, 50), pct(bare, 99)
        s50, s99 = pct(lat, 50), pct(lat, 99)
        tput = throughput(srv.host, srv.port, a.clients, a.seconds)
        floor = fork_floor(served_modules(srv), cores, a.seconds)
        wpd, rpd = worker_private_dirty(srv)
        print("pysnip serve benchmark (%d cores, workers %d, every layer on; command: %s)"
              % (cores, cores, " ".join(["/usr/bin/python3", "tests/bench/bench_serve.py"]
                                          + sys.argv[1:])))
        print("  python3.11 -I -S -c 'print(1)'      p50 %7.3f ms   p99 %7.3f ms   (%d runs)"
              % (b50, b99, len(bare)))
        print("  POST /v1/exec print(1), keep-alive  p50 %7.3f ms   p99 %7.3f ms   (%d requests)"
              % (s50, s99, len(lat)))

        def verdict(ok):
            return "met" if ok else "NOT met"
        print("  latency ratio p50 %.3fx (target <= 0.15x: %s), p99 %.3fx (target <= 0.3x: %s)"
              % (s50 / b50, verdict(s50 / b50 <= 0.15), s99 / b99, verdict(s99 / b99 <= 0.3)))
        print("  throughput %.0f snippets/s with %d keep-alive clients (target >= 2000/s: %s)"
              % (tput, a.clients, verdict(tput >= 2000)))
        print("  floor: os.fork() per print(1) of python3.11 with the zygote's %d modules, no "
              "sandbox/HTTP, %d loops: %.0f/s (serve %.2fx of it)"
              % (len(served_modules(srv)), cores, floor, tput / floor))
        print("  Private_Dirty of a running worker %d kB (target <= 1024 kB: %s); "
              "of one forked ahead, waiting %d kB" % (wpd, verdict(wpd <= 1024), rpd))
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
