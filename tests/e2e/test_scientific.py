"""The scientific policy (issue 11, step 1): Debian's numpy, pandas, Pillow and matplotlib
importable, nothing else of dist-packages; the syscalls they need in named groups, the ones they
only probe failing cleanly; one BLAS/OpenMP thread; the memory cap that the 100 MB job fits and
that never turns into a spin; the prebuilt font list; numpy reseeded per served worker; and,
since numpy hands the snippet raw pointers, the kernel layers holding with the Python layer
defeated by numpy itself."""
import json
import os
import subprocess
import sys
import time

import pytest

from conftest import PYSNIP, ROOT, run_exec, run_pysnip, needs_rlimit_as

SCI = ("--policy", "scientific")
PY_OFF = ("--disable-layer", "python")

pytestmark = pytest.mark.skipif(
    subprocess.run(["/usr/bin/python3", "-c", "import numpy, pandas, PIL, matplotlib"],
                   capture_output=True).returncode != 0,
    reason="Debian's python3-numpy/pandas/pil/matplotlib are not installed (tools/install-deps)")


def ok(code, *args, timeout=120):
    v, rc, err = run_exec(code, *SCI, *args, timeout=timeout)
    assert rc == 0, err
    assert v["status"] == "ok", (v["status"], v["exception"], v["stderr"][-2000:], v["denials"])
    return v


# ---- the libraries import and work, under every layer ----

def test_numpy_pandas_pillow_matplotlib_work():
    v = ok("""
import io
import numpy as np, pandas as pd
from PIL import Image
import matplotlib.pyplot as plt
df = pd.DataFrame({"a": np.arange(10), "b": np.arange(10) ** 2})
print(df["b"].sum())
im = Image.new("RGB", (8, 4), (200, 100, 50)).convert("L")
print(im.getpixel((0, 0)))
fig, ax = plt.subplots(); ax.plot(np.arange(100))
b = io.BytesIO(); fig.savefig(b, format="png"); print(b.getvalue()[:4] == b"\\x89PNG")
print(matplotlib_backend := plt.get_backend())
""")
    out = v["stdout"].split()
    assert out[:3] == ["285", str((200 * 299 + 100 * 587 + 50 * 114) // 1000), "True"]
    assert out[3].lower() == "agg"
    assert v["sandbox"]["seccomp"] == "kill" and v["sandbox"]["python"] is True


def test_nothing_else_of_dist_packages():
    """scipy is installed in the same dist-packages: the snippet's import is denied, by name."""
    v, rc, _ = run_exec("import scipy", *SCI)
    assert v["status"] == "denied"
    assert v["exception"]["type"] == "pysnip.PolicyImportError"
    assert {"layer": "import", "event": "import", "detail": "scipy"}.items() <= \
        v["denials"][0].items()
    # positive control: the listed ones import
    ok("import numpy, pandas")


def test_optional_dependencies_look_absent_to_the_libraries():
    """pandas probes bottleneck and numexpr (installed here): absent, not a PermissionError."""
    v = ok("""
import pandas, sys
from pandas.compat._optional import import_optional_dependency as opt
print(opt("numexpr", errors="ignore"), opt("bottleneck", errors="ignore"))
print([m for m in ("numexpr", "bottleneck") if m in sys.modules])
""")
    assert v["stdout"].split() == ["None", "None", "[]"]


def test_dangerous_modules_the_libraries_need_stay_denied_to_the_snippet():
    """pandas imports subprocess, ctypes, mmap and socket (modules.internal): loadable by the
    libraries, still denied to the snippet itself, and their events denied to everyone."""
    for mod in ("subprocess", "ctypes", "mmap", "socket"):
        v, _, _ = run_exec("import %s" % mod, *SCI)
        assert v["status"] == "denied", mod
        assert v["denials"][0]["detail"] == mod
    v, _, _ = run_exec("import pandas.io.common as c\nc.mmap.mmap(-1, 4096)", *SCI)
    assert v["status"] == "denied"
    assert v["denials"][-1]["event"] == "mmap.__new__"
    v, _, _ = run_exec("import pandas.errors as e\ne.ctypes.CDLL('libc.so.6')", *SCI)
    assert v["status"] == "denied"
    assert v["denials"][-1]["event"] == "ctypes.dlopen"


def test_library_extension_only_from_its_own_directory():
    """An extension whose file lies in another package's directory (scipy's), loaded under an
    allowed name, is refused: the file decides what loads."""
    import glob
    so = sorted(glob.glob("/usr/lib/python3/dist-packages/scipy/**/*.so", recursive=True))
    if not so:
        pytest.skip("no scipy extension to try")
    code = """
import numpy.core._multiarray_umath as m
Loader, Spec = type(m.__loader__), type(m.__spec__)
loader = Loader(%r, %r)
mod = loader.create_module(Spec(loader.name, loader, origin=loader.path))
print(type(mod).__name__)
"""
    v, _, _ = run_exec(code % ("numpy.evil", so[0]), *SCI)
    assert v["status"] == "denied", v
    assert any("scipy" in d["detail"] for d in v["denials"]), v["denials"]
    # positive control: numpy's own extension through the same door
    v = ok(code % ("numpy.core._umath_tests", m_umath()))
    assert v["stdout"].strip() == "module"


def m_umath():
    import glob
    return glob.glob("/usr/lib/python3/dist-packages/numpy/core/_umath_tests.*.so")[0]


# ---- syscall groups: what the libraries only probe fails cleanly, never SIGSYS ----

SUBPROCESS_PROBE = """
import subprocess, os
try:
    subprocess.run(["/bin/true"])
except OSError as e:
    print("run", e.errno)
try:
    os.execv("/bin/true", ["true"])
except OSError as e:
    print("exec", e.errno)
"""


def test_subprocess_and_exec_fail_with_eperm_at_the_kernel():
    """The Python layer off: _posixsubprocess's vfork, then its fork (clone without
    CLONE_THREAD), and execve fail with EPERM (@exec-probe), not a SIGSYS kill."""
    v = ok(SUBPROCESS_PROBE, *PY_OFF)
    assert v["stdout"].split() == ["run", "1", "exec", "1"]
    assert v["denials"] == []


def test_subprocess_refused_by_the_audit_hook_as_oserror():
    """The Python layer on: the hook refuses subprocess.Popen with PermissionError (an
    OSError), which platform (pandas) and matplotlib's font search catch."""
    v = ok("import pandas\nfrom matplotlib import font_manager as f\n"
           "print(f._get_fontconfig_fonts() == [])")
    assert v["stdout"].split() == ["True"]
    popen = [d["detail"] for d in v["denials"] if d["event"] == "subprocess.Popen"]
    assert popen == ["uname", "fc-list"], v["denials"]


NATIVE_SYSCALLS = """
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(nr, *a):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(x) for x in a])
    return r, ctypes.get_errno()
buf = ctypes.create_string_buffer(64)
print("get_mempolicy", *call(239, 0, 0, 0, 0, 0))
print("set_mempolicy", *call(238, 0, 0, 0))
print("mbind", *call(237, ctypes.addressof(buf), 4096, 0, 0, 0, 0))
print("clone3", *call(435, 0, 0))
print("uname", len(os.uname().sysname) > 0)
print("affinity", len(os.sched_getaffinity(0)) > 0)
"""


def test_numa_probes_eperm_clone3_enosys_basic_facts_allowed():
    v = ok(NATIVE_SYSCALLS, *PY_OFF)
    lines = dict((l.split()[0], l.split()[1:]) for l in v["stdout"].splitlines())
    for name in ("get_mempolicy", "set_mempolicy", "mbind"):
        assert lines[name] == ["-1", str(1)], (name, lines[name])  # EPERM
    assert lines["clone3"] == ["-1", "38"]  # ENOSYS: glibc falls back to clone
    assert lines["uname"] == ["True"] and lines["affinity"] == ["True"]


def test_a_url_read_with_the_python_layer_off_is_an_oserror():
    """pandas reading a URL reaches socket(): @net-probe fails it with EPERM (no SIGSYS); with
    the Python layer on, the import of http.client is refused first."""
    code = ("import pandas as pd\ntry:\n    pd.read_csv('http://127.0.0.1:9/x.csv')\n"
            "except OSError as e:   # urllib's URLError, its reason the socket's OSError\n"
            "    print('oserror', getattr(e, 'reason', e).errno)")
    v = ok(code, *PY_OFF)
    assert v["stdout"].split() == ["oserror", "1"]
    v, _, _ = run_exec(code, *SCI)
    assert any(d["detail"] == "http.client" for d in v["denials"]), v["denials"]


def test_numa_probe_is_a_kill_without_the_group():
    """Control: the default policy has no @numa-probe; the same call is a seccomp denial."""
    v, _, _ = run_exec("import ctypes\nctypes.CDLL(None).syscall(239, 0, 0, 0, 0, 0)",
                       "--policy", "notebook", *PY_OFF)
    assert v["status"] == "denied"
    assert v["denials"][0]["layer"] == "seccomp"


# ---- threads, BLAS, memory ----

def test_one_blas_and_openmp_thread_in_the_environment():
    v = ok("import os\nprint(os.environ['OPENBLAS_NUM_THREADS'], os.environ['OMP_NUM_THREADS'],"
           " os.environ['MPLBACKEND'])")
    assert v["stdout"].split() == ["1", "1", "Agg"]


def test_check_policy_names_the_blas_numpy_loads():
    p = run_pysnip(["check-policy", "scientific"])
    assert p.returncode == 0, p.stderr
    libs = json.loads(p.stdout)["libraries"]
    assert libs["blas"] and os.path.exists(libs["blas"])
    # what the dynamic loader says, independently
    real = subprocess.run(["/usr/bin/python3", "-c", "import numpy, sys; print(open("
                           "'/proc/self/maps').read())"], capture_output=True, text=True).stdout
    assert libs["blas"] in real
    assert "BLAS" in libs["blas_kind"]
    assert libs["matplotlib_font_cache"]


GRAY = """
from PIL import Image
Image.new("RGB", (640, 480), (200, 100, 50)).save("in.png")
Image.open("in.png").convert("L").save("out.png")
print(Image.open("out.png").getpixel((0, 0)))
"""


@needs_rlimit_as
def test_the_100m_pillow_job_and_a_plot_fit():
    v = ok(GRAY, "--memory", "100M")
    assert v["stdout"].split() == [str((200 * 299 + 100 * 587 + 50 * 114) // 1000)]
    assert v["limits"]["memory_bytes"] == 100 << 20
    v = ok("import matplotlib.pyplot as plt, io\nf, a = plt.subplots(); a.plot(range(100))\n"
           "b = io.BytesIO(); f.savefig(b, format='png'); print(len(b.getvalue()) > 1000)",
           "--memory", "100M")
    assert v["stdout"].strip() == "True"


@needs_rlimit_as
def test_a_failing_mmap_storm_ends_as_memory_limit_not_a_spin():
    """What OpenBLAS does under RLIMIT_AS (retry its buffer's mmap forever), done by hand:
    the guard ends it after 512 failures, as memory_limit, in well under the wall clock.
    Positive control: 100 failures, then a success, and the run goes on."""
    storm = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
n = %d
for i in range(n):
    assert libc.mmap(None, 1 << 40, 3, 0x22, -1, 0) in (None, 2**64 - 1)
print("survived", n, libc.mmap(None, 4096, 3, 0x22, -1, 0) not in (None, 2**64 - 1))
"""
    v, _, _ = run_exec(storm % 100000, *SCI, *PY_OFF, "--wall-time", "20s")
    assert v["status"] == "memory_limit", v
    assert "512 mmaps in a row failed" in v["stderr"]
    assert v["usage"]["wall_ms"] < 5000
    v = ok(storm % 100, *PY_OFF)
    assert v["stdout"].split() == ["survived", "100", "True"]


OPENBLAS_DIRS = [os.environ.get("PYSNIP_TEST_OPENBLAS_DIR", ""),
                 # tools/install-deps unpacks libopenblas0-pthread here
                 "/var/lib/pysnip-test/openblas/usr/lib/x86_64-linux-gnu/openblas-pthread",
                 "/usr/lib/x86_64-linux-gnu/openblas-pthread"]


@needs_rlimit_as
def test_openblas_matmul_under_a_small_memory_cap_does_not_spin(tmp_path):
    d = next((d for d in OPENBLAS_DIRS if d and os.path.exists(os.path.join(d, "libblas.so.3"))),
             None)
    if not d:
        pytest.skip("no OpenBLAS here (set PYSNIP_TEST_OPENBLAS_DIR to an extracted "
                    "libopenblas0-pthread's openblas-pthread directory)")
    pol = json.load(open(os.path.join(ROOT, "policies", "scientific.json")))
    pol["filesystem"]["read"].append(os.path.dirname(os.path.dirname(d)))
    path = tmp_path / "sci-openblas.json"
    path.write_text(json.dumps(pol))
    env = dict(os.environ, LD_LIBRARY_PATH=d)
    code = b"import numpy as np\na = np.ones((300, 300))\nprint((a @ a)[0, 0])\n"
    for mem in ("100M", "1G"):
        p = subprocess.run([PYSNIP, "exec", "--policy", str(path), "--memory", mem,
                            "--wall-time", "20s", "-"], input=code, capture_output=True,
                           env=env, timeout=60)
        v = json.loads(p.stdout)
        if mem == "1G":
            assert v["status"] == "ok" and v["stdout"].strip() == "300.0", v
        else:
            assert v["status"] in ("memory_limit", "exception"), v
            assert v["usage"]["wall_ms"] < 10000, v


# ---- the font list ----

def test_matplotlib_uses_the_prebuilt_font_list(tmp_path):
    code = ("import logging, sys\nlogging.basicConfig(level=logging.INFO, stream=sys.stdout)\n"
            "import matplotlib.pyplot\nimport os\nprint(sorted(os.listdir(os.environ['MPLCONFIGDIR'])))")
    v = ok(code)
    assert "generated new fontManager" not in v["stdout"]
    assert not any(d["detail"] == "fc-list" for d in v["denials"]), v["denials"]
    assert "fontlist-v" in v["stdout"]
    # control: without the prebuilt list, matplotlib rebuilds it (and says so)
    env = dict(os.environ, PYSNIP_MPL_CACHE=str(tmp_path / "none"))
    p = subprocess.run([PYSNIP, "exec", *SCI, "-"], input=code.encode(), capture_output=True,
                       env=env, timeout=120)
    v = json.loads(p.stdout)
    # a rebuild starts its "building the font cache" timer thread, then asks fontconfig
    # (refused); with the prebuilt list neither happens. (The thread can fail when other runs
    # hold uid 65534's RLIMIT_NPROC: that too is the rebuild.)
    timer_failed = v["exception"] and "can't start new thread" in v["exception"]["message"]
    assert timer_failed or any(d["detail"] == "fc-list" for d in v["denials"]), v


# ---- numpy hands out raw pointers: the kernel layers hold alone ----

def aud_address():
    """The audit hook's state in the (non-PIE) binary: aud.active is its second byte."""
    out = subprocess.run(["nm", PYSNIP], capture_output=True, text=True).stdout
    hdr = open(PYSNIP, "rb").read(18)
    if hdr[16] != 2:  # ET_EXEC
        pytest.skip("PIE build: the audit state's address is not fixed")
    return next(int(l.split()[0], 16) for l in out.splitlines() if l.endswith(" aud"))


RAW_WRITE = """
import numpy as np
class Raw:
    pass
r = Raw()
r.__array_interface__ = {"shape": (1,), "typestr": "|u1", "data": (%d, False), "version": 3}
mem = np.asarray(r)
try:
    open("/etc/passwd")
except PermissionError as e:
    print("before", "pysnip" in str(e), flush=True)
mem[0] = 0                       # aud.active = false: the audit hook is now a no-op
try:
    open("/etc/passwd").read()
    print("READ")
except PermissionError as e:
    print("after", e.errno, "pysnip" in str(e), flush=True)
print(len(open(np.__file__).read()) > 0, flush=True)
import os
try:
    os.execv("/bin/sh", ["sh", "-c", "true"])
except OSError as e:
    print("exec", e.errno, flush=True)
import socket                    # the import policy is gone too
try:
    socket.socket()
    print("SOCKET")
except OSError as e:
    print("socket", e.errno, flush=True)
import ctypes
ctypes.CDLL(None).syscall(101, 0, 0, 0, 0)   # ptrace: no group fails it, seccomp kills
"""


def test_numpy_raw_pointer_defeats_the_python_layer_and_the_kernel_holds():
    v, _, _ = run_exec(RAW_WRITE % (aud_address() + 1), *SCI)
    lines = v["stdout"].splitlines()
    assert lines[0] == "before True"          # the hook was on
    assert lines[1] == "after 13 False"       # Landlock's EACCES, not the hook's
    assert lines[2] == "True"                 # positive control: allowed reads still work
    assert lines[3] == "exec 1"               # seccomp @exec-probe
    assert lines[4] == "socket 1"             # seccomp @net-probe
    assert "SOCKET" not in v["stdout"] and "READ" not in v["stdout"]
    assert v["status"] == "denied"
    assert v["denials"][-1]["layer"] == "seccomp" and v["denials"][-1]["event"] == "ptrace"


def test_numpy_raw_pointer_write_into_the_interpreter_kills_only_the_worker():
    """Scribbling over interpreter memory crashes the worker; the verdict says so, the host
    is fine and nothing is left."""
    v, rc, _ = run_exec("""
import numpy as np
class Raw:
    pass
r = Raw()
r.__array_interface__ = {"shape": (4096,), "typestr": "|u1", "data": (id(len) & ~4095, False),
                         "version": 3}
np.asarray(r)[:] = 0xff
len("x")
""", *SCI)
    assert rc == 0
    assert v["status"] in ("signal", "exception", "memory_limit"), v
    assert v["sandbox"]["seccomp"] == "kill"


def test_pickle_through_np_load_is_refused():
    """np.load(allow_pickle=True) of a pickle that would call os.system: the audit hook
    refuses it (and the kernel would: @exec-probe)."""
    evil = b"cposix\nsystem\n(S'echo PWNED'\ntR."   # pickle.dumps of os.system('echo PWNED')
    v, _, _ = run_exec("""
import numpy as np
with open("x.npy", "wb") as f:
    f.write(%r)
np.load("x.npy", allow_pickle=True)
""" % evil, *SCI)
    # numpy wraps the PermissionError in an UnpicklingError: the run is an exception, the
    # refusal is in the denials
    assert v["status"] in ("denied", "exception"), v
    assert "PWNED" not in v["stdout"]
    assert v["denials"][-1]["event"] == "os.system", v["denials"]
    # and with the Python layer off, the kernel: os.system's fork fails (@exec-probe)
    v = ok("""
import numpy as np
with open("x.npy", "wb") as f:
    f.write(%r)
print(np.load("x.npy", allow_pickle=True))
""" % evil, *PY_OFF)
    # os.system's status: the shell could not be started (fork and vfork fail with EPERM)
    assert v["stdout"].strip() in ("-1", "32512") and "PWNED" not in v["stdout"], v


# ---- the CPU share ----

def test_cpus_without_a_delegated_cgroup_is_a_clear_error():
    v, rc, err = run_exec("print(1)", *SCI, "--cpus", "0.5")
    assert rc == 1 and v is None
    assert "limits.cpus" in err and "delegated cgroup v2" in err
    v, rc, err = run_exec("print(1)", "--cpus", "half")
    assert rc == 1 and "not a number of CPUs" in err


# ---- served: the zygote pre-imports the libraries; every worker has its own numpy seed ----

def test_served_workers_draw_different_numpy_numbers():
    """A fork copies numpy's global RandomState: without the reseed every worker of a zygote
    would print the same number."""
    import servekit
    s = servekit.Server("--policy", "scientific")
    try:
        seen = []
        for _ in range(6):
            st, _, v = s.exec("import numpy as np, random\n"
                              "print(np.random.randint(1 << 62), random.getrandbits(62))")
            assert st == 200 and v["status"] == "ok", v
            seen.append(tuple(v["stdout"].split()))
        assert len({a for a, _ in seen}) == 6, seen
        assert len({b for _, b in seen}) == 6, seen
        st, _, v = s.exec("import sys\nprint(all(m in sys.modules for m in "
                          "('numpy', 'pandas', 'PIL.Image', 'matplotlib.pyplot')))")
        assert v["stdout"].strip() == "True"    # pre-imported by the zygote
        # ... without what the policy does not list (pandas would take numexpr and bottleneck,
        # and numexpr starts threads at import): the zygote stays one thread
        st, _, v = s.exec("import sys\nprint([m for m in ('numexpr', 'bottleneck', 'scipy') "
                          "if m in sys.modules])")
        assert v["stdout"].strip() == "[]", v
        z = s.zygotes()["scientific"]
        assert os.listdir("/proc/%d/task" % z) == [str(z)]
        if len(os.sched_getaffinity(0)) > 1:
            # pinned to the front's CPU for its first 3 ms (pool.c), then every CPU for each
            # of its threads, one started while it was pinned too (supervise.c, widen)
            n, started_pinned = len(os.sched_getaffinity(0)), 0
            for _ in range(5):
                time.sleep(0.2)
                st, _, v = s.exec(AFFINITY_THREADS)
                first, box, last = json.loads(v["stdout"])
                assert (first, box[1], last) == (1, n, n), v
                started_pinned += box[0] == 1
            assert started_pinned, "no thread started within the pin: widening not shown"
    finally:
        s.stop()


AFFINITY_THREADS = """import os, threading, time, json
first = len(os.sched_getaffinity(0))
box = []
def later():
    box.append(len(os.sched_getaffinity(0)))
    time.sleep(0.1)
    box.append(len(os.sched_getaffinity(0)))
t = threading.Thread(target=later)
t.start()
t.join()
print(json.dumps([first, box, len(os.sched_getaffinity(0))]))
"""


# ---- served: spares that rehearsed a figure, for the snippets that name the libraries ----

# What the worker shows of itself, naming none of the libraries ('mat' 'plotlib' is one string
# to Python, not the name to the front): matplotlib's font cache (its fork hook empties it in
# every child; a rehearsal loads the fonts again), the open figures, and the CPU the process
# had used when the snippet began and ended.
WORKER_STATE = """import json, sys, time
t0 = time.process_time()
fm = sys.modules['mat' 'plotlib.font_manager']
plt = sys.modules['mat' 'plotlib.pyplot']
fonts, open_figs = fm._get_font.cache_info().currsize, plt.get_fignums()
fig = plt.figure()
number = fig.number
plt.close('all')
print(json.dumps([fonts, open_figs, number, t0, time.process_time()]))
"""


def _state(s, code):
    st, _, v = s.exec(code)
    assert st == 200 and v["status"] == "ok", v
    return v, json.loads(v["stdout"])


@pytest.mark.skipif(os.geteuid() != 0, reason="not root: the zygote cannot give a spare its "
                    "priority back, so none rehearses (a rehearsal would compete at nice 0)")
def test_a_snippet_naming_the_libraries_gets_a_spare_that_rehearsed_a_figure():
    """The zygote keeps spares that drew and rendered a figure before their request (worker.c,
    phase_request), handed to snippets naming matplotlib, numpy, pandas or Pillow once they
    said they are ready (pool.c). Nothing of the rehearsal shows: no figure is open, the
    next is number 1, no display or denial; and its CPU is not the run's."""
    import servekit
    s = servekit.Server("--policy", "scientific")
    try:
        # a plain spare: matplotlib's fork hook emptied the font cache (the control that the
        # probe sees a rehearsal at all)
        v, (fonts, open_figs, number, t0, t1) = _state(s, WORKER_STATE)
        assert fonts == 0 and open_figs == [] and number == 1, v["stdout"]
        rehearsed = None
        for _ in range(40):   # until a rehearsed spare is ready
            time.sleep(0.25)
            v, got = _state(s, "import numpy\n" + WORKER_STATE)
            if got[0] > 0:
                rehearsed = v, got
                break
        assert rehearsed, "no snippet naming numpy got a rehearsed spare in 10 s"
        v, (fonts, open_figs, number, t0, t1) = rehearsed
        assert open_figs == [] and number == 1, v["stdout"]
        assert v["display"] == [] and v["denials"] == [], v
        # the rehearsal used CPU in this process before the request came: the verdict
        # counts only the run's (the snippet's own, plus building its report)
        assert t0 * 1000 >= 20, "the process had used only %.1f ms: no rehearsal" % (t0 * 1000)
        own_ms = (t1 - t0) * 1000
        assert v["usage"]["cpu_ms"] <= own_ms + 15, (v["usage"], t0, t1)
        # and a snippet naming none still gets a plain one
        v, (fonts, _, _, _, _) = _state(s, WORKER_STATE)
        assert fonts == 0, v["stdout"]
        # Close together, the rehearsed spares are used up and their replacements (in the
        # front's pool from their fork on) still draw their figures, ~70 ms of CPU each
        # against a few ms a request: a request is handed a plain spare then, not one that
        # would make it wait for the rest of a rehearsal.
        got = []
        for _ in range(6):
            got.append(_state(s, "import numpy\n" + WORKER_STATE)[1][0])
            time.sleep(0.015)   # the zygote reaps the last and forks its replacement
        assert 0 in got, "every request waited for a rehearsal: %r" % got
    finally:
        s.stop()
