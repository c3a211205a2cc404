"""`pysnip serve`: what a request can and cannot change, seen from inside the run.

Every assertion about a limit reads the kernel's view from inside the served worker
(getrlimit through the `resource` C module with the Python layer off, statvfs of the scratch),
never the verdict's `limits` block, which is pysnip's own bookkeeping."""
import json
import os
import signal
import threading
import time

import pytest

from conftest import needs_rlimit_as
from servekit import Server, wait_for

MiB = 1 << 20

# The policy's limits as the kernel should hold them in a served `default` worker.
DEFAULT = {"cpu": 2, "memory": 256 * MiB, "file_size": 16 * MiB, "scratch": 64 * MiB,
           "wall_ms": 5000, "output": MiB}

PROBE = """
import json, os, resource
def lim(r):
    return resource.getrlimit(r)
s = os.statvfs(".")
print(json.dumps({
    "cpu": lim(resource.RLIMIT_CPU), "as": lim(resource.RLIMIT_AS),
    "data": lim(resource.RLIMIT_DATA), "fsize": lim(resource.RLIMIT_FSIZE),
    "nofile": lim(resource.RLIMIT_NOFILE), "nproc": lim(resource.RLIMIT_NPROC),
    "scratch": s.f_blocks * s.f_frsize}))
"""

INF = resource_inf = -1        # resource.RLIM_INFINITY as Python reports it


@pytest.fixture(scope="module")
def nopy():
    """A server whose workers have the Python layer off, so `resource` can be imported."""
    s = Server("--workers", "2", "--policy", "default,notebook", "--disable-layer", "python")
    yield s
    s.stop()


def probe(srv, limits=None, policy=None):
    kw = {}
    if limits is not None:
        kw["limits"] = limits
    if policy:
        kw["policy"] = policy
    st, _, v = srv.exec(PROBE, **kw)
    return st, v


def kernel_view(v):
    assert v["status"] == "ok", v
    return json.loads(v["stdout"])


def capped(pair, cap):
    """An rlimit (soft, hard) that holds at most cap: neither is infinite nor above it."""
    return all(x != INF and 0 <= x <= cap for x in pair)


def test_probe_positive_control(nopy):
    """The policy's own limits, as the kernel holds them: the probe sees what it must."""
    st, v = probe(nopy)
    k = kernel_view(v)
    assert tuple(k["cpu"]) == (2, 2)
    if not os.environ.get("PYSNIP_SANITIZER"):
        assert tuple(k["as"]) == (DEFAULT["memory"],) * 2
    assert tuple(k["fsize"]) == (DEFAULT["file_size"],) * 2
    assert tuple(k["nofile"]) == (64, 64)
    if v["sandbox"]["scratch"] == "tmpfs" or os.geteuid() == 0:
        assert k["scratch"] == DEFAULT["scratch"], v


# Every key a request may set, with the values that once loosened it (0 read as "no limit")
# and a real tightening. The request is refused (400 naming the field) or the kernel's limit
# inside the run is at most the policy's: never looser.
TIGHTER = {"cpu": "1s", "memory": "64M", "file_size": "1M", "scratch": "8M", "wall": "1s",
           "output": "1K"}


@pytest.mark.parametrize("key", sorted(TIGHTER))
@pytest.mark.parametrize("value", [0, "0", "0K", "1", 1, "tighter"])
def test_request_limit_never_looser_than_policy(nopy, key, value):
    val = TIGHTER[key] if value == "tighter" else value
    st, v = probe(nopy, limits={key: val})
    if st == 400:
        assert v["field"] == "limits." + key, v
        assert value != "tighter", v
        return
    assert st == 200, v
    if key in ("wall", "output"):
        # enforced by the supervisor, not an rlimit: a tiny wall clock times the run out,
        # a tiny output cap cuts it; never more than the policy's
        assert v["status"] in ("ok", "timeout", "output_limit"), v
        assert v["usage"]["wall_ms"] < DEFAULT["wall_ms"], v
        if key == "output":
            assert len(v["stdout"].encode()) <= 1024, v
        return
    if v["status"] != "ok":
        # so tight that the probe could not run (1 byte of file size still runs; 1 byte of
        # memory does not): the kernel said so, which is a tightening too
        assert key in ("memory", "cpu"), v
        return
    k = kernel_view(v)
    if key == "cpu":
        assert capped(k["cpu"], DEFAULT["cpu"]), k
    elif key == "memory":
        if not os.environ.get("PYSNIP_SANITIZER"):
            assert capped(k["as"], DEFAULT["memory"]) and capped(k["data"], DEFAULT["memory"]), k
    elif key == "file_size":
        assert capped(k["fsize"], DEFAULT["file_size"]), k
    elif key == "scratch":
        assert v["sandbox"]["scratch"] == "tmpfs", v
        assert 0 < k["scratch"] <= DEFAULT["scratch"], k


def test_zero_file_size_means_no_byte(nopy):
    """file_size 0 is the tightest limit, the same meaning as everywhere else: no byte."""
    code = ("import os\nfd = os.open('f', os.O_WRONLY | os.O_CREAT)\n"
            "try:\n    os.write(fd, b'x')\nexcept OSError as e:\n    print('EFBIG', e.errno)\n")
    st, _, v = nopy.exec(code, limits={"file_size": 0})
    assert st == 200 and v["stdout"] == "EFBIG 27\n", v
    st, _, v = nopy.exec(code)          # control: the policy's 16M lets the byte through
    assert st == 200 and v["stdout"] == "", v


def test_zero_output_means_no_byte(nopy):
    st, _, v = nopy.exec("print('x' * 100)", limits={"output": 0})
    assert st == 200 and v["status"] == "output_limit" and v["stdout"] == "", v


@needs_rlimit_as
def test_served_memory_limit_is_applied(nopy):
    """A request's tightened memory limit holds in the kernel: 150 MB under 64M fails."""
    code = "try:\n    b = bytearray(150 * 1024 * 1024)\n    print('allocated')\n" \
           "except MemoryError:\n    print('refused')\n"
    st, _, v = nopy.exec(code, limits={"memory": "64M"})
    assert st == 200 and v["stdout"] == "refused\n", v
    st, _, v = nopy.exec(code)          # control: the policy's 256M allows it
    assert st == 200 and v["stdout"] == "allocated\n", v


def test_served_tightened_rlimits_in_kernel(nopy):
    st, v = probe(nopy, limits={"cpu": "1s", "file_size": "1M", "memory": "64M"})
    k = kernel_view(v)
    assert tuple(k["cpu"]) == (1, 1)
    assert tuple(k["fsize"]) == (MiB, MiB)
    if not os.environ.get("PYSNIP_SANITIZER"):
        assert tuple(k["as"]) == (64 * MiB, 64 * MiB)


def test_served_scratch_is_capped_in_kernel(nopy):
    """The scratch is a tmpfs of the policy's size, or the request's tighter one."""
    st, v = probe(nopy)
    if v["sandbox"]["scratch"] != "tmpfs" and os.geteuid() != 0:
        pytest.skip("no mount namespace for the scratch tmpfs on this host (not root)")
    assert v["sandbox"]["scratch"] == "tmpfs", v      # as root it is always mounted
    assert kernel_view(v)["scratch"] == DEFAULT["scratch"]
    st, v = probe(nopy, limits={"scratch": "8M"})
    assert kernel_view(v)["scratch"] == 8 * MiB
    # and what the size means: 9 MiB cannot be written into 8M
    code = "try:\n    open('big', 'wb').write(b'x' * (9 << 20))\n    print('wrote')\n" \
           "except OSError as e:\n    print('ENOSPC', e.errno)\n"
    st, _, v = nopy.exec(code, limits={"scratch": "8M"})
    assert v["stdout"] == "ENOSPC 28\n", v


# ---- the worker's early "exiting" record (finding 5) ----
#
# A worker that ends normally says so on its status channel, behind the run's token, so that
# the front can answer before the kernel has torn it down. A native-code snippet can read the
# token from its own memory (here: the C static `report_token`, at a fixed address in the
# non-PIE binary) and forge that record, then die a death only the kernel decides. The front
# must answer with the kernel's word, every time.

REC = """
import ctypes, posix, time
class Held(ctypes.Structure):
    _fields_ = [("uid", ctypes.c_int32), ("gid", ctypes.c_int32), ("caps", ctypes.c_uint8),
                ("nnp", ctypes.c_uint8), ("dumpable", ctypes.c_uint8), ("seccomp", ctypes.c_uint8),
                ("landlock", ctypes.c_int32), ("ns", ctypes.c_uint32), ("cg", ctypes.c_uint8),
                ("capped", ctypes.c_uint8), ("off", ctypes.c_uint32), ("degraded", ctypes.c_uint32)]
class Rec(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_uint32), ("phase", ctypes.c_int32), ("err", ctypes.c_int32),
                ("nr", ctypes.c_int32), ("arch", ctypes.c_uint32), ("held", Held),
                ("utime", ctypes.c_int64), ("stime", ctypes.c_int64), ("rss", ctypes.c_int64),
                ("msg", ctypes.c_char * 200)]
"""

FORGE_EXIT = REC + """
libc = ctypes.CDLL(None, use_errno=True)
token = ctypes.string_at(%d, 32)
assert len(token) == 32 and all(c in b"0123456789abcdef" for c in token), token
posix.write(3, bytes(Rec(kind=4, err=0, utime=1, stime=1, rss=1, msg=token)))
posix.closerange(0, 4096)           # every channel ends, as an honest exit's do
%s
"""

ENDINGS = {
    # a syscall outside the allowlist: the seccomp filter kills the worker (SIGSYS)
    "seccomp": ("libc.socket(2, 1, 0)\n", {}, "denied"),
    # RLIMIT_CPU's SIGKILL
    "cpu": ("while True:\n    pass\n", {"cpu": "1s"}, "cpu_limit"),
    # the wall clock
    "timeout": ("time.sleep(30)\n", {"wall": "700ms"}, "timeout"),
}


def report_token_address():
    import subprocess
    from servekit import PYSNIP
    hdr = subprocess.run(["readelf", "-h", PYSNIP], capture_output=True, text=True).stdout
    if "EXEC (Executable file)" not in hdr:
        pytest.skip("a PIE build: the token's address is not fixed (the attack still works "
                    "with a memory scan; this test needs the fixed address)")
    for line in subprocess.run(["nm", PYSNIP], capture_output=True, text=True).stdout.splitlines():
        f = line.split()
        if len(f) == 3 and f[2] == "report_token":
            return int(f[0], 16)
    pytest.skip("no report_token symbol in %s (stripped?)" % PYSNIP)


@pytest.mark.parametrize("ending,rounds", [("seccomp", 24), ("cpu", 4), ("timeout", 4)])
def test_forged_early_exit_cannot_hide_a_kernel_death(nopy, ending, rounds):
    addr = report_token_address()
    tail, limits, want = ENDINGS[ending]
    seen = []
    for _ in range(rounds):
        st, _, v = nopy.exec(FORGE_EXIT % (addr, tail), limits=limits)
        assert st == 200, v
        seen.append(v["status"])
    assert seen == [want] * rounds, seen


def test_forged_early_exit_positive_control(nopy):
    """The forgery itself works: the token read from memory is the run's (an honest ending
    after the forged record gives what the record said: 0, not the real 3)."""
    addr = report_token_address()
    st, _, v = nopy.exec(FORGE_EXIT % (addr, "posix._exit(3)\n"))
    assert st == 200 and v["status"] == "ok", v
    assert v["exit_code"] in (0, 3), v


# A policy with threads (notebook) is answered early too, which a second thread could exploit:
# the main thread forges the record and leaves by exit() (SYS_exit: that thread only), while
# a thread it started lives on and dies a death only the kernel decides. The record must not
# be taken then: the leader is a zombie the moment the other thread is gone, and a group exit
# a signal began first gives its number to every later exit (ps_procstat_exiting_alone).
FORGE_EXIT_THREADED = REC + """
libc = ctypes.CDLL(None, use_errno=True)
token = ctypes.string_at(%d, 32)
assert len(token) == 32 and all(c in b"0123456789abcdef" for c in token), token
CB = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)
def ending(arg):
    libc.usleep(20000)   # the main thread has left by then
%s
    return None
cb = CB(ending)
t = ctypes.c_ulong()
assert libc.pthread_create(ctypes.byref(t), None, cb, None) == 0
posix.write(3, bytes(Rec(kind=4, err=0, utime=1, stime=1, rss=1, msg=token)))
posix.closerange(0, 4096)
libc.syscall(60, 0)      # SYS_exit: this thread only
"""

THREADED_ENDINGS = {
    "seccomp": ("    libc.socket(2, 1, 0)\n", {}, "denied"),
    "cpu": ("    while True:\n        pass\n", {"cpu": "1s"}, "cpu_limit"),
    "timeout": ("    libc.sleep(30)\n", {"wall": "700ms"}, "timeout"),
}


@pytest.mark.parametrize("ending,rounds", [("seccomp", 12), ("cpu", 3), ("timeout", 3)])
def test_forged_early_exit_from_a_thread_cannot_hide_a_kernel_death(nopy, ending, rounds):
    addr = report_token_address()
    tail, limits, want = THREADED_ENDINGS[ending]
    seen = []
    for _ in range(rounds):
        st, _, v = nopy.exec(FORGE_EXIT_THREADED % (addr, tail), limits=limits,
                             policy="notebook")
        assert st == 200, v
        seen.append(v["status"])
    assert seen == [want] * rounds, seen


def test_threaded_policy_early_exit_positive_control(nopy):
    """The threaded forgery runs as written (its thread started; an honest end after it
    gives the thread's exit status, not a kernel death), and an honest run of a threads
    policy is answered before its teardown: the front's figure for the run is the record's."""
    addr = report_token_address()
    st, _, v = nopy.exec(FORGE_EXIT_THREADED % (addr, "    libc.syscall(231, 5)\n"),
                         policy="notebook")
    assert st == 200 and v["status"] == "ok" and v["exit_code"] in (0, 5), v

# ---- the host's environment (finding 8) ----

def test_host_environment_not_in_served_worker_memory():
    import secrets
    from test_integrity import stack_scan
    secret = "pysnip-test-secret-" + secrets.token_hex(8)
    s = Server("--workers", "1", "--policy", "default", "--disable-layer", "python",
               env={"PYSNIP_TEST_SECRET": secret})
    try:
        st, _, v = s.exec(stack_scan(secret, "zygote\0"))
        assert st == 200 and v["status"] == "ok", v
        seen = json.loads(v["stdout"])
        # positive control: the zygote's stack top is there (its exec name), and so is its
        # argv, kept on purpose (it names the policy, nothing secret)
        assert seen["bytes"] > 0 and seen["exe"] and seen["argv"], seen
        assert not seen["secret"], "the front's environment is readable in a served worker"
        # nor anywhere the zygote itself was given it
        for z in s.zygotes().values():
            with open("/proc/%d/environ" % z, "rb") as f:
                assert secret.encode() not in f.read()
    finally:
        s.stop()


# ---- a uid of its own for every worker (finding 7) ----

BASE, SPAN = 1879048192, 4194304      # policies/default.json, identity
root_only = pytest.mark.skipif(os.geteuid() != 0,
                               reason="uids are switched only as root; unprivileged, a server "
                                      "keeps its own uid")

THREADS = """
import ctypes
libc = ctypes.CDLL(None)
# raw threads that only pause: small stacks and no malloc arena each, so that the address
# space limit is never what stops them (a Python thread's arena reserves 64 MiB)
attr = ctypes.create_string_buffer(64)
libc.pthread_attr_init(attr)
libc.pthread_attr_setstacksize(attr, ctypes.c_size_t(1 << 16))
pause = ctypes.cast(libc.pause, ctypes.c_void_p)
t, n = ctypes.c_ulong(), 0
while n < 60 and libc.pthread_create(ctypes.byref(t), attr, pause, None) == 0:
    n += 1
print(n)
"""


def spares(srv):
    """Workers forked ahead of demand (named by their first phase), not yet running."""
    out = []
    for pid in srv.descendants():
        try:
            with open("/proc/%d/comm" % pid) as f:
                if f.read().strip() == "pysnip-worker":
                    out.append(pid)
        except OSError:
            pass
    return out


def proc_uid(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except OSError:
        return None


def dropped(srv):
    """Spares past their identity phase (a spare being forked is still root)."""
    return [p for p in spares(srv) if proc_uid(p)]


@root_only
def test_each_served_worker_has_its_own_uid():
    s = Server("--workers", "3", "--policy", "default,notebook")
    try:
        assert wait_for(lambda: len(dropped(s)) >= 6, 20), spares(s)
        uids = [proc_uid(p) for p in dropped(s)]
        uids = [u for u in uids if u]
        assert len(set(uids)) == len(uids), uids                 # no two share one
        assert all(BASE < u < BASE + SPAN for u in uids), uids   # from the policy's range
        out = []

        def run(pol):
            out.append(s.exec("import os, time\ntime.sleep(0.4)\nprint(os.getuid(), os.getgid())",
                              policy=pol)[2])
        ts = [threading.Thread(target=run, args=(p,)) for p in ("default", "default", "notebook")]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        got = [tuple(map(int, v["stdout"].split())) for v in out]
        assert all(v["status"] == "ok" for v in out), out
        assert len({u for u, g in got}) == 3 and all(u == g for u, g in got), got
        assert all(v["sandbox"]["uid"] == u for v, (u, g) in zip(out, got))
    finally:
        s.stop()


@root_only
def test_another_nobody_process_cannot_signal_a_spare():
    """Any process of the host's `nobody` could stop or kill spares that ran as 65534."""
    s = Server("--workers", "1", "--policy", "default")
    try:
        assert wait_for(lambda: dropped(s), 20)
        target = dropped(s)[0]
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:                      # a host process running as nobody
            os.close(r)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            try:
                os.kill(target, signal.SIGSTOP)
                res = b"signalled"
            except PermissionError:
                res = b"EPERM"
            except ProcessLookupError:
                res = b"ESRCH"
            os.write(w, res)
            os._exit(0)
        os.close(w)
        res = os.read(r, 64)
        os.waitpid(pid, 0)
        assert res == b"EPERM", res
        st, _, v = s.exec("print('alive')")
        assert st == 200 and v["stdout"] == "alive\n" and v["sandbox"]["applied"], v
    finally:
        s.stop()


@root_only
@pytest.mark.parametrize("sig", [signal.SIGSTOP, signal.SIGKILL])
def test_a_stopped_or_dead_spare_is_never_handed_out(sig):
    s = Server("--workers", "2", "--policy", "default")
    try:
        assert wait_for(lambda: len(spares(s)) >= 3, 20), spares(s)
        hit = spares(s)
        for pid in hit:                   # every spare in the pool
            os.kill(pid, sig)

        def state(pid):
            try:
                with open("/proc/%d/stat" % pid) as f:
                    return f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                return "gone"
        # the signals have landed: stopped, or dead (a zombie until the zygote reaps it)
        assert wait_for(lambda: all(state(p) in ("T", "Z", "X", "gone") for p in hit), 5)
        for _ in range(3):
            st, _, v = s.exec("print('alive')")
            assert st == 200 and v["status"] == "ok" and v["stdout"] == "alive\n", v
            assert v["sandbox"]["applied"] is True, v
        # and the pool is whole again: the zygote replaced every one it lost
        assert wait_for(lambda: len(dropped(s)) >= 3, 20)
    finally:
        s.stop()


def test_served_threads_bounded_by_rlimit_nproc(nopy):
    """notebook's processes: 16 is RLIMIT_NPROC under the worker's own uid: the main thread
    and exactly 15 more, whoever else runs on the host."""
    if os.geteuid() != 0:
        pytest.skip("RLIMIT_NPROC applies only under a uid of the run's own (as root)")
    st, _, v = nopy.exec(THREADS, policy="notebook")
    assert st == 200 and v["status"] == "ok", v
    assert v["stdout"] == "15\n", v


def test_served_cpu_limit_is_the_kernels_clock(nopy):
    """cpu_limit is decided on the clock RLIMIT_CPU counts (read by the zygote before the
    reap), not on rusage, which reads 5-15% under it on a busy machine."""
    for _ in range(3):
        st, _, v = nopy.exec("while True:\n    pass\n", limits={"cpu": "1s"})
        assert st == 200 and v["status"] == "cpu_limit", v
        assert 1000 <= v["usage"]["cpu_clock_ms"] < 1050, v["usage"]


def test_served_wall_clock_magnitude(nopy):
    """A 500 ms wall clock ends the served run at 500 ms (from the request), not later."""
    st, _, v = nopy.exec("while True:\n    pass\n", limits={"wall": "500ms"})
    assert st == 200 and v["status"] == "timeout", v
    assert 500 <= v["usage"]["wall_ms"] < 750, v["usage"]


@pytest.mark.parametrize("prefix", [b"", b"0123456789abcdef0123456789abcdef\n"])
def test_served_forged_report_then_exit_is_ignored(nopy, prefix):
    from test_integrity import FAKE, FORGED_REPORT
    st, _, v = nopy.exec(FORGED_REPORT % (prefix + FAKE))
    assert st == 200 and v["status"] == "ok" and v["exception"] is None, v
    assert v["exit_code"] == 0, v
