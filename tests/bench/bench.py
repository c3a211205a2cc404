"""pysnip exec benchmark: figures printed from one run, ratios against a baseline measured in
the same run. Not a test: nothing here fails on a slow machine.

    make bench            (or: /usr/bin/python3 tests/bench/bench.py --pysnip ./pysnip)

Every variant runs once per round, round after round, so that the machine's noise falls on all
of them alike; the figures are medians over the rounds.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

BARE = ["/usr/bin/python3.11", "-I", "-S"]
KERNEL_LAYERS = ("identity", "landlock", "seccomp", "namespaces")


def once(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - t0) * 1000


def off(*layers):
    return sum((["--disable-layer", layer] for layer in layers), [])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pysnip", default=os.path.join(os.getcwd(), "pysnip"))
    ap.add_argument("-n", type=int, default=80, help="rounds")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        hello = os.path.join(d, "hello.py")
        with open(hello, "w") as f:
            f.write("print('hello')\n")
        verdict = json.loads(subprocess.run([a.pysnip, "exec", hello], capture_output=True,
                                            check=True).stdout)
        assert verdict["status"] == "ok", verdict
        variants = [("python3.11 -I -S hello.py", BARE + [hello]),
                    ("pysnip exec hello.py, every layer", [a.pysnip, "exec", hello]),
                    ("pysnip exec, kernel layers off", [a.pysnip, "exec"] + off(*KERNEL_LAYERS)
                     + [hello])]
        variants += [("pysnip exec, %s off" % layer, [a.pysnip, "exec"] + off(layer) + [hello])
                     for layer in KERNEL_LAYERS]
        samples = {name: [] for name, _ in variants}
        for _ in range(3):  # warm-up
            for _, cmd in variants:
                once(cmd)
        for _ in range(a.n):
            for name, cmd in variants:
                samples[name].append(once(cmd))
    med = {name: statistics.median(v) for name, v in samples.items()}
    base = med[variants[0][0]]
    allon = med[variants[1][0]]
    print("pysnip exec bench: %d interleaved rounds, median wall ms (%s, load %.2f)"
          % (a.n, time.strftime("%Y-%m-%d"), os.getloadavg()[0]))
    for name, _ in variants:
        extra = ""
        if name.endswith(" off") and "kernel" not in name:
            extra = "   (the layer costs %+.2f ms)" % (allon - med[name])
        print("  %-40s %7.2f ms  %5.3fx%s" % (name, med[name], med[name] / base, extra))
    print("  ratio, every layer on:   %.3f   (issue 3 target <= 1.25)" % (allon / base))
    print("  ratio, kernel layers off: %.3f   (issue 2 target <= 1.15)"
          % (med[variants[2][0]] / base))
    s = verdict["sandbox"]
    print("  held in the measured run: seccomp=%s landlock_abi=%s namespaces=%s uid=%s"
          % (s.get("seccomp"), s.get("landlock_abi"), ",".join(s.get("namespaces", [])),
             s.get("uid")))


if __name__ == "__main__":
    sys.exit(main())
