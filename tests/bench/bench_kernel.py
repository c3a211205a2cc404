"""pysnip kernel against Debian's ipykernel, both driven by jupyter_client in the same run.
Not a test: figures are printed, never asserted.

    make bench     (or: /usr/bin/python3 tests/bench/bench_kernel.py --pysnip ./pysnip)

  start   KernelManager.start_kernel() to the first kernel_info reply (client's libzmq
          reconnect interval, 100 ms, is a floor for both)
  1+1     execute_interactive round trip, every layer on: p50 and p99
  numpy   the first `import numpy` cell of a fresh kernel (pysnip: the scientific policy)

Rounds alternate the two kernels so that the machine's noise falls on both alike."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from jupyter_client import KernelManager


def start_once(name):
    t0 = time.perf_counter()
    km = KernelManager(kernel_name=name)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.kernel_info(reply=True, timeout=60)
    took = (time.perf_counter() - t0) * 1000
    kc.wait_for_ready(timeout=60)	# iopub subscribed too, before anything is executed
    return km, kc, took


def stop(km, kc):
    kc.stop_channels()
    km.shutdown_kernel(now=False)


def execute_ok(kc, code, timeout=120):
    """The reply, and the kernel's own time: its idle status's date less the request's (both
    stamped on this machine's clock), i.e. the round trip without the client's share."""
    idle = []

    def hook(m):
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            idle.append(m["header"]["date"])
    r = kc.execute_interactive(code, timeout=timeout, output_hook=hook)
    if r["content"]["status"] != "ok":
        raise SystemExit(f"bench: {code!r} failed: {r['content']}")
    inside = (idle[0] - r["parent_header"]["date"]).total_seconds() * 1000 if idle else 0
    return r, inside


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pysnip", default=os.path.join(os.getcwd(), "pysnip"))
    ap.add_argument("--starts", type=int, default=10)
    ap.add_argument("--execs", type=int, default=300)
    ap.add_argument("--imports", type=int, default=3)
    a = ap.parse_args()
    kernels = {"pysnip": "pysnip-bench", "ipykernel": "python3"}
    with tempfile.TemporaryDirectory() as d:
        def install(name, *extra):
            return subprocess.run([a.pysnip, "kernel", "install", "--prefix", d, "--name",
                                   name, *extra], capture_output=True, text=True)
        p = install("pysnip-bench")
        if p.returncode != 0:
            raise SystemExit(p.stderr)
        sci = install("pysnip-bench-sci", "--policy", "scientific").returncode == 0
        os.environ["JUPYTER_PATH"] = os.path.join(d, "share", "jupyter")

        for spec in kernels.values():	# jupyter_client's own first-use costs, untimed
            stop(*start_once(spec)[:2])
        starts = {k: [] for k in kernels}
        for _ in range(a.starts):
            for k, spec in kernels.items():
                km, kc, took = start_once(spec)
                starts[k].append(took)
                stop(km, kc)

        lat = {k: [] for k in kernels}
        inside = {k: [] for k in kernels}
        running = {k: start_once(spec)[:2] for k, spec in kernels.items()}
        for km, kc in running.values():
            for _ in range(20):	# warm both
                execute_ok(kc, "1+1")
        for _ in range(a.execs):
            for k, (km, kc) in running.items():
                t0 = time.perf_counter()
                _, kernel_ms = execute_ok(kc, "1+1")
                lat[k].append((time.perf_counter() - t0) * 1000)
                inside[k].append(kernel_ms)
        for km, kc in running.values():
            stop(km, kc)

        imports = {k: [] for k in kernels}
        specs = {"pysnip": "pysnip-bench-sci" if sci else None, "ipykernel": "python3"}
        for _ in range(a.imports):
            for k, spec in specs.items():
                if spec is None:
                    continue
                km, kc, _ = start_once(spec)
                execute_ok(kc, "1")	# the session is up: time the import alone
                t0 = time.perf_counter()
                execute_ok(kc, "import numpy")
                imports[k].append((time.perf_counter() - t0) * 1000)
                stop(km, kc)

    def line(what, p, i, target, unit="ms"):
        ratio = p / i if i else float("nan")
        ok = "meets" if ratio <= target else "MISSES"
        print(f"  {what:<28} pysnip {p:8.2f} {unit}   ipykernel {i:8.2f} {unit}   "
              f"ratio {ratio:5.2f} (target <= {target}: {ok})")

    print(f"bench_kernel: {a.starts} starts, {a.execs} executes, {a.imports} numpy imports "
          "per kernel, alternating")
    line("start to kernel_info (p50)", statistics.median(starts["pysnip"]),
         statistics.median(starts["ipykernel"]), 0.35)
    slow = sum(t > 100 for t in starts["pysnip"])
    print(f"  {'':<28} pysnip min {min(starts['pysnip']):.1f} max {max(starts['pysnip']):.1f} ms;"
          f" {slow} of {len(starts['pysnip'])} starts over the 100 ms libzmq reconnect floor"
          " (a start under it: the kernel was bound before the client's first connect)")
    line("1+1 execute p50", pct(lat["pysnip"], 50), pct(lat["ipykernel"], 50), 0.5)
    line("1+1 execute p99", pct(lat["pysnip"], 99), pct(lat["ipykernel"], 99), 1.0)
    print(f"  {'':<28} of the p50, inside the kernel (request to idle): pysnip "
          f"{pct(inside['pysnip'], 50):.2f} ms, ipykernel {pct(inside['ipykernel'], 50):.2f} ms; "
          "the rest is jupyter_client's, the same for both")
    if imports["pysnip"]:
        line("first import numpy (p50)", statistics.median(imports["pysnip"]),
             statistics.median(imports["ipykernel"]), 0.2)
    else:
        print("  first import numpy: skipped, no scientific policy in this tree")


if __name__ == "__main__":
    sys.exit(main())
