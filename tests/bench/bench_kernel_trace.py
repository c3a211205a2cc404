"""Where a `1+1` execute's time goes in pysnip kernel: per step, the median over N rounds.
Not a test: figures are printed, never asserted.

    /usr/bin/python3 tests/bench/bench_kernel_trace.py --pysnip ./pysnip [--execs 300]

The kernel writes a line per message received and sent, and around its call into the session
engine (PYSNIP_KERNEL_TRACE=PATH, host/kernel/channel.c); the client (jupyter_client's
execute_interactive, as bench_kernel.py drives it) stamps the request and its return. Both
on this machine's clock. The steps:
  client -> recv            the request's header date to the kernel having parsed and verified it
  recv -> busy ... idle     each message the kernel sends, from the one before
  engine                    the session engine's exec (the kernel's request to its verdict), and
                            of it, as the engine's own verdict says: wall (fork to the cell's end),
                            setup (until the cell's process said it exists) and run
  idle -> client back       jupyter_client taking the last messages and returning"""
import argparse
import collections
import os
import statistics
import subprocess
import sys
import tempfile
import time

from jupyter_client import KernelManager


def rounds(trace_path, n_clients):
    """The trace's lines of each execute_request, from its recv to its idle."""
    out, cur = [], None
    with open(trace_path) as f:
        for line in f:
            t, what, *detail = line.split()
            ev = (float(t), what, " ".join(detail))
            if what == "recv" and ev[2] == "execute_request":
                cur = [ev]
                out.append(cur)
            elif cur is not None:
                cur.append(ev)
                if what == "send" and ev[2] == "status" and len(cur) > 3:
                    cur = None
    return out[-n_clients:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pysnip", default=os.path.join(os.getcwd(), "pysnip"))
    ap.add_argument("--execs", type=int, default=300)
    ap.add_argument("--code", default="1+1")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run([a.pysnip, "kernel", "install", "--prefix", d, "--name",
                            "pysnip-trace"], capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(p.stderr)
        os.environ["JUPYTER_PATH"] = os.path.join(d, "share", "jupyter")
        trace = os.path.join(d, "trace.txt")
        km = KernelManager(kernel_name="pysnip-trace")
        km.start_kernel(env=dict(os.environ, PYSNIP_KERNEL_TRACE=trace))
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=60)
            for _ in range(20):
                kc.execute_interactive(a.code, timeout=60, output_hook=lambda m: None)
            client = []
            for _ in range(a.execs):
                t0 = time.time()
                r = kc.execute_interactive(a.code, timeout=60, output_hook=lambda m: None)
                client.append((t0, r["parent_header"]["date"].timestamp(), time.time()))
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=False)
        steps = collections.OrderedDict()
        usage = collections.defaultdict(list)
        for (t0, sent, back), ev in zip(client, rounds(trace, len(client))):
            steps.setdefault("client -> recv (parsed, verified)", []).append(ev[0][0] - sent)
            prev, seen = ev[0][0], collections.Counter()
            for t, what, detail in ev[1:]:
                if what == "usage":
                    for kv in detail.split():
                        k, v = kv.split("=")
                        usage[k].append(float(v))
                    continue
                name = detail if what == "send" else "engine " + detail
                if detail == "status":
                    seen["status"] += 1
                    name = "status busy" if seen["status"] == 1 else "status idle"
                steps.setdefault("  -> " + name, []).append(t - prev)
                prev = t
            steps.setdefault("idle -> client back", []).append(back - prev)
            steps.setdefault("TOTAL (client's round trip)", []).append(back - t0)
    print(f"bench_kernel_trace: {len(client)} x {a.code!r}, median of each step (ms)")
    for name, xs in steps.items():
        print(f"  {name:<36} {statistics.median(xs) * 1000:7.3f}")
    if usage:
        print("  the engine's verdict says: " + ", ".join(
            f"{k} {statistics.median(v):.3f}" for k, v in usage.items()))


if __name__ == "__main__":
    sys.exit(main())
