"""`pysnip exec`: what the run can see of its host and what its limits really are.

Limits are read from the kernel inside the run (getrlimit with the Python layer off, statvfs of
the scratch), outcomes measured (the bytes through an output cap, the ms past a wall clock),
never taken from the verdict's own `limits` block."""
import json
import os
import secrets
import subprocess

import pytest

from conftest import PYSNIP, run_exec

# Native code reads the process's stack, from glibc's __libc_stack_end up to the top of the
# mapping (pages probed with write(2) into a pipe, EFAULT past the end): what the kernel put
# there at exec (argv, environment, the executable's name) unless it was overwritten.
STACK_SCAN = r'''
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
libc.write.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
libc.write.restype = ctypes.c_ssize_t
top = ctypes.c_void_p.in_dll(libc, "__libc_stack_end").value
r, w = os.pipe()
a, buf = top & ~4095, b""
while libc.write(w, a, 4096) == 4096:
    buf += os.read(r, 4096)
    a += 4096
print(json.dumps({"bytes": len(buf), "secret": %(secret)r.encode() in buf,
                  "argv": %(argv)r.encode() in buf, "exe": %(exe)r.encode() in buf}))
'''


def stack_scan(secret, argv_mark):
    return STACK_SCAN % {"secret": secret, "argv": argv_mark,
                         "exe": os.path.basename(PYSNIP) + "\0"}


def test_host_environment_not_in_worker_memory(tmp_path):
    secret = "pysnip-test-secret-" + secrets.token_hex(8)
    stdin = tmp_path / ("argv-mark-" + secrets.token_hex(4))
    stdin.write_text("")
    code = stack_scan(secret, stdin.name)
    env = dict(os.environ, PYSNIP_TEST_SECRET=secret)
    p = subprocess.run([PYSNIP, "exec", "--disable-layer", "python", "--stdin", str(stdin), "-"],
                       input=code.encode(), capture_output=True, env=env, timeout=60)
    v = json.loads(p.stdout)
    assert v["status"] == "ok", v
    seen = json.loads(v["stdout"])
    # positive control: the scan reads the stack's top, where the kernel left the
    # executable's name (AT_EXECFN), which nothing needs to hide
    assert seen["bytes"] > 0 and seen["exe"], seen
    assert not seen["secret"], "the host's environment is readable in the worker's memory"
    assert not seen["argv"], "pysnip's argv (a host path) is readable in the worker's memory"


# ---- a uid of its own for every run (finding 7) ----

root_only = pytest.mark.skipif(os.geteuid() != 0,
                               reason="uids are switched only as root")

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


@root_only
def test_exec_run_has_its_own_uid():
    v, rc, err = run_exec("import os\nprint(os.getuid(), os.getgid())")
    assert rc == 0 and v["status"] == "ok", err
    uid, gid = map(int, v["stdout"].split())
    assert 1879048192 < uid < 1879048192 + 4194304 and gid == uid, v
    assert v["sandbox"]["uid"] == uid


@root_only
def test_exec_threads_bounded_by_rlimit_nproc():
    """RLIMIT_NPROC (notebook: 16) counts the tasks of the run's own uid: the main thread and
    exactly 15 more, whatever else runs as nobody on the host."""
    v, rc, err = run_exec(THREADS, "--policy", "notebook", "--disable-layer", "python")
    assert rc == 0 and v["status"] == "ok", v
    assert v["stdout"] == "15\n", v


@root_only
def test_per_process_range_must_be_free(tmp_path):
    """A per-process range that holds an account's uid is refused, naming the account."""
    pol = tmp_path / "taken.json"
    pol.write_text(json.dumps({"extends": "default",
                               "identity": {"uid": 1, "gid": 1, "uid_count": "per-process"}}))
    p = subprocess.run([PYSNIP, "exec", "--policy", str(pol), "-"], input=b"print(1)",
                       capture_output=True, timeout=60)
    assert p.returncode == 1, p
    assert b"/etc/passwd" in p.stderr and b"identity.uid_count" in p.stderr, p.stderr
    # control: a fixed uid (uid_count 1) in the same policy runs
    pol.write_text(json.dumps({"extends": "default",
                               "identity": {"uid": 65534, "gid": 65534, "uid_count": 1}}))
    p = subprocess.run([PYSNIP, "exec", "--policy", str(pol), "-"], input=b"import os\n"
                       b"print(os.getuid())", capture_output=True, timeout=60)
    assert p.returncode == 0 and json.loads(p.stdout)["stdout"] == "65534\n", p


# ---- the status channel is a stream of records the snippet can write to ----

FORGED_RECORDS = """
import os, struct, time
short = struct.pack('IiiiI', 1, 0, 1, 0, 0) + b'\\0' * 232          # not a whole record
whole = struct.pack('IiiiI', 3, 0, 0, 59, 0xc000003e) + b'\\0' * 260   # a "syscall" record
for i in range(%d):
    os.write(3, short)
    time.sleep(0.001)
    os.write(3, whole)
print('still fine')
"""


def test_forged_status_records_never_break_the_channel():
    """Records written by the snippet after its start are ignored, whole or short, and never
    close the channel: a short write read on its own once made the parent drop the channel,
    so the snippet's next write failed with EPIPE (and the seccomp handler's would have)."""
    for _ in range(5):
        v, rc, _ = run_exec(FORGED_RECORDS % 20)
        assert rc == 0 and v["status"] == "ok", v
        assert v["stdout"] == "still fine\n" and v["denials"] == [], v


# ---- limits, from inside the run, and the magnitudes that got through ----

PROBE = """
import json, os, resource
s = os.statvfs(".")
print(json.dumps({"nproc": resource.getrlimit(resource.RLIMIT_NPROC),
                  "fsize": resource.getrlimit(resource.RLIMIT_FSIZE),
                  "scratch": s.f_blocks * s.f_frsize}))
"""


def test_exec_scratch_is_a_capped_tmpfs():
    """statvfs of the scratch from inside the run: the policy's 64M, not the host's RAM."""
    v, rc, err = run_exec(PROBE, "--disable-layer", "python")
    assert rc == 0 and v["status"] == "ok", err
    if v["sandbox"]["scratch"] != "tmpfs" and os.geteuid() != 0:
        pytest.skip("no mount namespace for the scratch tmpfs on this host (not root)")
    assert v["sandbox"]["scratch"] == "tmpfs", v      # as root it is always mounted
    assert json.loads(v["stdout"])["scratch"] == 64 << 20
    v, rc, err = run_exec(PROBE, "--disable-layer", "python", "--policy", "strict")
    assert json.loads(v["stdout"])["scratch"] == 8 << 20


@root_only
def test_exec_rlimit_nproc_in_kernel():
    v, rc, err = run_exec(PROBE, "--disable-layer", "python", "--policy", "notebook")
    assert rc == 0 and v["status"] == "ok", err
    assert tuple(json.loads(v["stdout"])["nproc"]) == (16, 16)


def test_exec_wall_clock_magnitude():
    """A 500 ms wall clock ends the run at 500 ms, not at twice that."""
    v, rc, _ = run_exec("while True:\n    pass\n", "--wall-time", "500ms", "--cpu-time", "10s")
    assert rc == 0 and v["status"] == "timeout", v
    assert v["limits"]["wall_ms"] == 500
    assert 500 <= v["usage"]["wall_ms"] < 800, v["usage"]


def test_exec_output_cap_counts_both_streams():
    """64K is the cap of stdout and stderr together: exactly 65536 bytes get through."""
    code = ("import sys\nfor i in range(50):\n    sys.stdout.write('o' * 2048)\n"
            "    sys.stderr.write('e' * 2048)\n    sys.stdout.flush(); sys.stderr.flush()\n")
    v, rc, _ = run_exec(code, "--output-limit", "64K")
    assert rc == 0 and v["status"] == "output_limit" and v["truncated"], v
    got = len(v["stdout"].encode()) + len(v["stderr"].encode())
    # (a cap counted per stream lets 64K of each through: 131072)
    assert got == 65536, (len(v["stdout"]), len(v["stderr"]))
    # control: under the cap nothing is cut
    v, rc, _ = run_exec(code.replace("range(50)", "range(10)"), "--output-limit", "64K")
    assert v["status"] == "ok" and len(v["stdout"]) + len(v["stderr"]) == 40960, v


def test_exec_output_limit_zero_lets_no_byte_through():
    v, rc, _ = run_exec("print('x')", "--output-limit", "0")
    assert rc == 0 and v["status"] == "output_limit" and v["stdout"] == "", v


# ---- the report counts only behind the run's token ----

FORGED_REPORT = """
import posix
posix.write(4, %r)
posix._exit(0)
"""
FAKE = (b'{"exception": {"type": "MemoryError", "message": "forged", "traceback": []},'
        b' "memory_error": true, "denials": []}\n')


@pytest.mark.parametrize("prefix", [b"", b"0123456789abcdef0123456789abcdef\n"])
def test_exec_forged_report_then_exit_is_ignored(prefix):
    """A report written by the snippet, without the run's token or behind a wrong one,
    followed by an exit before the real report: the run ended with exit 0 and no report."""
    v, rc, _ = run_exec(FORGED_REPORT % (prefix + FAKE), "--disable-layer", "python")
    assert rc == 0, v
    assert v["status"] == "ok" and v["exception"] is None and v["exit_code"] == 0, v
    # control: the same exit without the forgery
    v, rc, _ = run_exec(FORGED_REPORT % b"", "--disable-layer", "python")
    assert v["status"] == "ok" and v["exception"] is None, v


JUNK_THEN_DENIED = """
import ctypes, posix
libc = ctypes.CDLL(None)
sock = libc.socket
posix.write(3, b"\\0" * 100)       # not a record: must not shift the framing of the next
sock(2, 1, 0)                      # killed by the filter; its handler names the call
"""


def test_junk_on_status_channel_cannot_hide_the_seccomp_denial():
    """The seccomp handler's record is read whole after junk the snippet wrote just before
    the denied call (a stream would read the junk and the record's head as one record)."""
    for _ in range(10):
        v, rc, _ = run_exec(JUNK_THEN_DENIED, "--disable-layer", "python")
        assert rc == 0 and v["status"] == "denied", v
        assert [(d["layer"], d["event"]) for d in v["denials"]] == [("seccomp", "socket")], v
