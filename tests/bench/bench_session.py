"""Benchmark of sessions (run by `make bench`; figures printed, targets reported, never a
failed test), all against /usr/bin/python3.11 -I -S -c pass measured in the same run:

- session creation over HTTP (POST /v1/sessions: a fork of the policy's zygote), p50
  (target <= 0.1x);
- a cell `x += 1` over HTTP on one keep-alive connection, p50 and p99 (targets <= 0.15x and
  <= 0.3x);
  both measured in rounds interleaved with the baseline (a bare python start, a creation, a
  cell, round after round, as bench_scientific interleaves its cold runs: the machine's noise
  falls on both alike, and each request finds the time a client leaves between requests),
  and again back to back (no time between requests: then each cell also waits for the fork
  and teardown the previous one left, the throughput floor of a fork per cell on 2 cores,
  printed beside them: os.fork() + exit of a 16 MB interpreter, back to back);
- the same cell with 0, 50, 200 and 800 MB of numpy data in the state (a fork per cell: its
  cost grows with the state's page tables), and ipykernel's `x += 1` with 200 MB of numpy
  data, through jupyter_client, in the same run.

    /usr/bin/python3 tests/bench/bench_session.py --pysnip ./pysnip [--n 200]
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))

BARE = ["/usr/bin/python3.11", "-I", "-S", "-c", "pass"]
NUMPY_POLICY = os.path.join(HERE, "session_numpy.json")


def pct(samples, p):
    s = sorted(samples)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def timed(f, n, warm=5):
    out = []
    for i in range(n + warm):
        t0 = time.perf_counter()
        f()
        if i >= warm:
            out.append((time.perf_counter() - t0) * 1000)
    return out


def interleaved_figures(client, n):
    """(baseline, creation, cell) samples, one of each per round."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    base, creation, cell = [], [], []
    with client.session() as s:
        s.exec("x = 0")
        for i in range(n + 5):
            t0 = time.perf_counter()
            pid = os.posix_spawn(BARE[0], BARE, os.environ,
                                 file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
            os.waitpid(pid, 0)
            t1 = time.perf_counter()
            v = s.exec("x += 1")
            t2 = time.perf_counter()
            c = client.session()
            t3 = time.perf_counter()
            c.close()
            assert v["state"] == "kept", v
            if i >= 5:
                base.append((t1 - t0) * 1000)
                cell.append((t2 - t1) * 1000)
                creation.append((t3 - t2) * 1000)
        assert s.exec("x")["result"]["data"]["text/plain"] == str(n + 5)
    os.close(devnull)
    return base, creation, cell


def fork_floor(n):
    """Back-to-back fork + exit of this process's copy, grown to a ~16 MB interpreter like a
    session holder: what a kept cell costs the machine besides its own work."""
    ballast = bytearray(12 << 20)
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1
    out = []
    for i in range(n + 5):
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        if i >= 5:
            out.append((time.perf_counter() - t0) * 1000)
    del ballast
    return out


def http_figures(client, n):
    sessions = []

    def create():
        sessions.append(client.session())

    creation = []
    for i in range(n + 5):  # timed one at a time, deleted outside the timing
        t0 = time.perf_counter()
        create()
        dt = (time.perf_counter() - t0) * 1000
        sessions.pop().close()
        if i >= 5:
            creation.append(dt)
    with client.session() as s:
        s.exec("x = 0")
        cell = timed(lambda: s.exec("x += 1"), n, warm=10)
        v = s.exec("x")
        assert v["state"] == "kept"
    return creation, cell


def state_figures(client, sizes, n):
    out = {}
    for mb in sizes:
        with client.session(memory="3G") as s:
            v = s.exec("import numpy as np\nd = np.ones(%d << 17)\nx = 0\nd.nbytes" % mb)
            assert v["status"] == "ok", v
            out[mb] = timed(lambda: s.exec("x += 1"), n, warm=3)
            assert s.exec("x")["result"]["data"]["text/plain"] == str(n + 3)
    return out


def ipykernel_figures(mb, n):
    from jupyter_client.manager import start_new_kernel
    km, kc = start_new_kernel(kernel_name="python3")
    try:
        kc.execute_interactive("import numpy as np\nd = np.ones(%d << 17)\nx = 0" % mb,
                               timeout=60, output_hook=lambda m: None)
        return timed(lambda: kc.execute_interactive("x += 1", timeout=30,
                                                    output_hook=lambda m: None), n, warm=5)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def line(name, samples, base, target=None, p=50):
    v = pct(samples, p)
    t = "" if target is None else "  (target <= %.2fx: %s)" % (target, "met" if v / base <= target
                                                                    else "NOT met")
    print("  %-44s p%d %8.3f ms  %6.3fx%s" % (name, p, v, v / base, t))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pysnip", required=True)
    ap.add_argument("--n", type=int, default=200)
    args = ap.parse_args()
    os.environ["PYSNIP"] = os.path.abspath(args.pysnip)
    from servekit import Server
    from sessionkit import PRIVATE_UIDS
    import pysnip_client

    srv = Server("--policy", PRIVATE_UIDS + "," + NUMPY_POLICY, "--workers", "2",
                 "--max-sessions", "8")
    try:
        c = pysnip_client.Client(srv.url)
        bases, creation, cell = interleaved_figures(c, args.n)
        base = pct(bases, 50)
        print("bench_session: baseline %s p50 %.3f ms, interleaved with the requests below"
              % (" ".join(BARE), base))
        line("session creation (POST /v1/sessions)", creation, base, 0.1)
        line("cell x += 1 (POST .../exec)", cell, base, 0.15)
        line("cell x += 1 (POST .../exec)", cell, base, 0.3, p=99)
        creation, cell = http_figures(c, args.n)
        print("  back to back (no time between requests; each also waits for the fork and "
              "teardown the previous one left):")
        line("session creation", creation, base)
        line("cell x += 1", cell, base)
        line("cell x += 1", cell, base, p=99)
        line("floor: os.fork() + exit of a 16 MB python", fork_floor(args.n), base)
        c.close()
        c = pysnip_client.Client(srv.url)
        orig = c.session  # the numpy policy is served second: its sessions name it
        c.session = lambda **kw: orig(policy="session_numpy", **kw)
        sizes = state_figures(c, [0, 50, 200, 800], max(20, args.n // 5))
        print("  cell x += 1 with numpy data in the state (a fork per cell):")
        for mb, s in sizes.items():
            line("  %4d MB" % mb, s, base)
        c.close()
    finally:
        srv.stop()
    try:
        ipk = ipykernel_figures(200, max(20, args.n // 5))
        line("ipykernel x += 1, 200 MB numpy (jupyter_client)", ipk, base)
        print("  pysnip / ipykernel at 200 MB: %.2fx" % (pct(sizes[200], 50) / pct(ipk, 50)))
    except Exception as e:  # say why, visibly
        print("  ipykernel: not measured (%s: %s)" % (type(e).__name__, e))


if __name__ == "__main__":
    main()
