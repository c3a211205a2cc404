"""Benchmark of the scientific policy (run by `make bench`; figures printed, targets reported,
never a failed test). Every ratio is against `/usr/bin/python3.11 -I` running the same job cold,
measured in the same run, rounds interleaved so the machine's noise falls on both alike:

- one-shot `pysnip exec --policy scientific` of the grayscale job (a PNG in through --input,
  the grayscale PNG out through --output-dir): median, target <= 1.2x;
- served, warm (the zygote pre-imports numpy, pandas, PIL.Image, matplotlib.pyplot), p50 of
    `import numpy as np; print(np.arange(10**6).sum())`       target <= 0.05x
    the grayscale job (the PNG in "files", the output back)   target <= 0.3x
    a 100-point line plot returned as a PNG display           target <= 0.15x
- Private_Dirty of a scientific worker running print(1) (smaps_rollup), target < 4 MB.

Beside each served job, its floor under a fork per run: the same job (and a plot's PNG) in a
fork of a warm python3.11 that imported numpy, pandas, PIL and pyplot and ran each job once
(no sandbox, no server), timed in the child from its start (a spare's fork is made ahead of the
request) to the end of the job, in the same rounds. A fork's first figure copies the pages it writes
of what the zygote's warm-up left (~3500 copy-on-write faults here), which a warm process's
second figure does not.

    /usr/bin/python3 tests/bench/bench_scientific.py --pysnip ./pysnip [-n 30] [--served 60]
"""
import argparse
import base64
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
sys.path.insert(0, HERE)

PY = "/usr/bin/python3.11"

GRAY = """from PIL import Image
Image.open("input/in.png").convert("L").save("output/out.png")
"""
ARANGE = "import numpy as np; print(np.arange(10**6).sum())"
PLOT = """import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.plot(range(100), [x * x for x in range(100)])
"""
# the cold python's plot: the same figure, saved as the PNG the display would carry
PLOT_COLD = ("import matplotlib\nmatplotlib.use('Agg')\n" + PLOT +
             "import io\nb = io.BytesIO()\nfig.savefig(b, format='png', bbox_inches='tight')\n")


# A warm python that forks one child per request on stdin ("JOB DIR": a job's name and the
# directory it runs in), the child running that job and saying how long it took (a plot also
# saves the PNG a display carries), from its first instruction: the fork itself, as a spare's,
# is not counted. Before the first fork it imports what the
# zygote does and runs each job once, as the zygote's warm-up (pyshim/run.py) draws a figure.
FLOOR_HELPER = """import io, os, sys, time
import numpy, pandas, PIL.Image
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt
PIL.Image.preinit()
JOBS = %r
def run(name):
    import contextlib
    with contextlib.redirect_stdout(io.StringIO()):  # stdout is our answers' channel
        exec(JOBS[name], {'__name__': '__main__'})
    if name == 'plot':
        b = io.BytesIO()
        plt.gcf().savefig(b, format='png', bbox_inches='tight')
    plt.close('all')
for line in sys.stdin:
    name, where = line.split()
    if name == 'warm':
        for job in JOBS:
            os.chdir(where)
            run(job)
        sys.stdout.write('0\\n')
        sys.stdout.flush()
        import gc
        gc.collect()
        gc.freeze()
        continue
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # timed from here: a spare's fork is done ahead of its request
        t0 = time.perf_counter()
        os.chdir(where)
        run(name)
        os.write(w, b'%%f' %% ((time.perf_counter() - t0) * 1000))
        os._exit(0)
    os.close(w)
    dt = os.read(r, 64)
    os.close(r)
    os.waitpid(pid, 0)
    sys.stdout.write(dt.decode() + '\\n')
    sys.stdout.flush()
"""


def job_dir(work):
    """A fresh cwd holding input/in.png and output/, as a run's."""
    d = tempfile.mkdtemp(dir=work)
    os.mkdir(os.path.join(d, "input"))
    os.mkdir(os.path.join(d, "output"))
    shutil.copy(os.path.join(work, "in.png"), os.path.join(d, "input", "in.png"))
    return d


class Floor:
    """The floor of a served job under a fork per run: FLOOR_HELPER's fork of a warm python."""

    def __init__(self, work, jobs):
        self.work = work
        self.p = subprocess.Popen([PY, "-I", "-c", FLOOR_HELPER % (jobs,)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.ask("warm", job_dir(work))

    def ask(self, name, where):
        self.p.stdin.write("%s %s\n" % (name, where))
        self.p.stdin.flush()
        return float(self.p.stdout.readline())

    def sample(self, name):
        d = job_dir(self.work)
        try:
            return self.ask(name, d)
        finally:
            shutil.rmtree(d)

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def pct(samples, p):
    s = sorted(samples)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def make_png(path):
    subprocess.run([PY, "-I", "-c", "from PIL import Image\nim = Image.new('RGB', (640, 480))\n"
                    "im.putdata([(x %% 256, y %% 256, (x * y) %% 256) for y in range(480) "
                    "for x in range(640)])\nim.save(%r)" % path], check=True)


def timed(argv, cwd=None, stdin=None):
    t0 = time.perf_counter()
    p = subprocess.run(argv, cwd=cwd, input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL)
    dt = (time.perf_counter() - t0) * 1000
    return dt, p


def cold_job(work, code):
    """python3.11 -I running code in a fresh cwd holding input/in.png and output/."""
    d = job_dir(work)
    dt, p = timed([PY, "-I", "-c", code], cwd=d)
    assert p.returncode == 0, code
    shutil.rmtree(d)
    return dt


def oneshot(pysnip, work, n):
    png = os.path.join(work, "in.png")
    job = os.path.join(work, "gray.py")
    with open(job, "w") as f:
        f.write(GRAY)
    cold, warm = [], []
    for i in range(n + 2):
        c = cold_job(work, GRAY)
        out = tempfile.mkdtemp(dir=work)
        dt, p = timed([pysnip, "exec", "--policy", "scientific", "--input", png,
                       "--output-dir", out, job])
        v = json.loads(p.stdout)
        assert v["status"] == "ok" and os.path.exists(os.path.join(out, "out.png")), v
        shutil.rmtree(out)
        if i >= 2:
            cold.append(c)
            warm.append(dt)
    return statistics.median(cold), statistics.median(warm)


def served(srv, work, rounds):
    png_b64 = base64.b64encode(open(os.path.join(work, "in.png"), "rb").read()).decode()
    jobs = {
        "arange": ({"code": ARANGE}, ARANGE, 0.05),
        "grayscale": ({"code": GRAY, "files": [{"path": "input/in.png", "content": png_b64}]},
                      GRAY, 0.3),
        "plot": ({"code": PLOT}, PLOT_COLD, 0.15),
    }
    conn = srv.conn()
    res = {}
    floor = Floor(work, {"arange": ARANGE, "grayscale": GRAY, "plot": PLOT})
    for name, (body, cold_code, target) in jobs.items():
        for _ in range(3):  # warm the connection and the pool
            srv.request("POST", "/v1/exec", body, conn=conn)
        cold, warm, fl = [], [], []
        for _ in range(rounds):
            cold.append(cold_job(work, cold_code))
            fl.append(floor.sample(name))
            t0 = time.perf_counter()
            st, _, v = srv.request("POST", "/v1/exec", body, conn=conn)
            warm.append((time.perf_counter() - t0) * 1000)
            assert st == 200 and v["status"] == "ok", v
            if name == "grayscale":
                assert v["files"][0]["path"] == "out.png"
            if name == "plot":
                assert "image/png" in v["display"][0]["data"]
        res[name] = (pct(cold, 50), pct(warm, 50), target, pct(fl, 50))
    conn.close()
    floor.close()
    return res


def private_dirty(srv):
    from bench_serve import in_read_of_fd0, rollup
    t = threading.Thread(target=srv.exec, args=("print(1)\nimport time\ntime.sleep(1.5)",))
    t.start()
    time.sleep(0.6)
    z = srv.zygotes()["scientific"]
    kids = [k for k in srv.children(z)
            if open("/proc/%d/comm" % k).read().strip() != "pysnip-init"]
    running = [k for k in kids if not in_read_of_fd0(k)]
    kb = rollup(running[0])["Private_Dirty"] if running else None
    t.join()
    return kb


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pysnip", default=os.path.join(os.path.dirname(os.path.dirname(HERE)),
                                                     "pysnip"))
    ap.add_argument("-n", type=int, default=20, help="one-shot rounds")
    ap.add_argument("--served", type=int, default=40, help="served rounds per job")
    a = ap.parse_args()
    os.environ["PYSNIP"] = os.path.abspath(a.pysnip)
    if subprocess.run([PY, "-I", "-c", "import numpy, pandas, PIL, matplotlib"]).returncode:
        print("bench_scientific: numpy/pandas/PIL/matplotlib not importable; skipped")
        return
    import servekit
    work = tempfile.mkdtemp(prefix="pysnip-bench-sci-")
    try:
        make_png(os.path.join(work, "in.png"))
        load = os.getloadavg()[0]
        print("scientific bench (%s, load %.2f); baseline: %s -I running the same job cold"
              % (time.strftime("%Y-%m-%d %H:%M"), load, PY))
        c, w = oneshot(a.pysnip, work, a.n)
        print("  one-shot grayscale job   python %7.1f ms  pysnip exec %7.1f ms  %.3fx  "
              "(target <= 1.2x)" % (c, w, w / c))
        srv = servekit.Server("--policy", "scientific")
        try:
            res = served(srv, work, a.served)
            for name, (cold, warm, target, fl) in res.items():
                print("  served %-17s python %7.1f ms  p50 %7.2f ms      %.3fx  (target <= %gx)"
                      % (name, cold, warm, warm / cold, target))
            print("  floors under a fork per run (a fork of a warm python, no sandbox or HTTP):")
            for name, (cold, warm, target, fl) in res.items():
                print("    %-22s p50 %7.2f ms      %.3fx" % (name, fl, fl / cold))
            kb = private_dirty(srv)
            print("  Private_Dirty of a scientific worker running print(1): %s kB "
                  "(target < 4096 kB)" % kb)
        finally:
            srv.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
