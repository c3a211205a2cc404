"""Each kernel layer alone holds against native code.

For every kernel layer (identity, landlock, seccomp, namespaces) the snippet runs with every
OTHER layer switched off, including the Python layer so that ctypes is importable, and plays
the attacker through libc and raw syscalls: read a world-readable secret, create a file
outside scratch, connect to a TCP listener on 127.0.0.1, fork, execve, ptrace and kill a
host process. Each attack the layer claims to stop must fail; the same attack with every
layer off must succeed (the positive control), so a failure is the layer's doing.

seccomp probes use a test policy whose action is errno with the sentinel 4000, which no
syscall returns on its own, so a denial can't be mistaken for an ordinary failure; allowed
calls probed with a bad descriptor must fail with EBADF instead. One run uses the production
action and must die by the filter, named in the verdict.
"""
import errno
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

from conftest import FIXTURES, PYSNIP, ROOT, run_exec

LAYERS = ["python", "identity", "landlock", "seccomp", "namespaces"]
KERNEL_LAYERS = ["identity", "landlock", "seccomp", "namespaces"]
SENTINEL = 4000
ERRNO_POLICY = os.path.join(FIXTURES, "policies", "layers", "seccomp-errno.json")
SECRET = "SECRET-7f3a"

# Which attacks each layer claims to stop on its own (SECURITY.md, "The layers").
CLAIMS = {
    "identity": ["read_private", "create_outside", "kill_host", "ptrace_host"],
    "landlock": ["read_secret", "read_private", "create_outside", "connect_tcp", "kill_host",
                 "ptrace_host", "execve"],
    "seccomp": ["connect_tcp", "fork", "execve", "ptrace_host", "kill_host"],
    "namespaces": ["connect_tcp", "kill_host", "ptrace_host"],
}

PRELUDE = r'''
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def report(ok, rc, **kw):
    e = ctypes.get_errno() if rc < 0 else 0
    print("RESULT " + json.dumps(dict(ok=bool(ok), rc=rc, errno=e, **kw)), flush=True)
'''

ATTACKS = {
    # open(2) + read(2) of a 0644 file in a 0755 directory: only Landlock is in the way.
    "read_secret": r'''
fd = libc.open({secret!r}.encode(), os.O_RDONLY)
buf = ctypes.create_string_buffer(64)
n = libc.read(fd, buf, 64) if fd >= 0 else -1
report(fd >= 0 and buf.value.startswith(b"SECRET"), fd)
''',
    # The same, 0600 root-owned: the uid drop stops it too.
    "read_private": r'''
fd = libc.open({private!r}.encode(), os.O_RDONLY)
buf = ctypes.create_string_buffer(64)
n = libc.read(fd, buf, 64) if fd >= 0 else -1
report(fd >= 0 and buf.value.startswith(b"SECRET"), fd)
''',
    "create_outside": r'''
fd = libc.open({outside!r}.encode(), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
report(fd >= 0, fd)
''',
    "connect_tcp": r'''
class sockaddr_in(ctypes.Structure):
    _fields_ = [("family", ctypes.c_ushort), ("port", ctypes.c_uint16),
                ("addr", ctypes.c_uint32), ("zero", ctypes.c_char * 8)]
fd = libc.socket(2, 1, 0)
if fd < 0:
    report(False, fd, step="socket")
else:
    sa = sockaddr_in(2, libc.htons({port}), libc.inet_addr(b"127.0.0.1"), b"")
    rc = libc.connect(fd, ctypes.byref(sa), ctypes.sizeof(sa))
    report(rc == 0, rc, step="connect")
''',
    # The raw fork syscall (57): glibc's fork would also run atfork handlers.
    "fork": r'''
pid = libc.syscall(57)
if pid == 0:
    libc._exit(0)
if pid > 0:
    libc.waitpid(int(pid), None, 0)
report(pid > 0, int(pid))
''',
    "execve": r'''
argv = (ctypes.c_char_p * 3)(b"/bin/echo", b"EXECUTED-" + b"OK", None)
envp = (ctypes.c_char_p * 1)(None)
rc = libc.execve(b"/bin/echo", argv, envp)
report(False, rc)
''',
    "ptrace_host": r'''
rc = libc.syscall(101, 16, {pid}, 0, 0)   # ptrace(PTRACE_ATTACH, pid)
if rc == 0:
    libc.syscall(101, 17, {pid}, 0, 0)    # PTRACE_DETACH (may fail before the stop: harmless)
report(rc == 0, int(rc))
''',
    "kill_host": r'''
rc = libc.syscall(62, {pid}, 9)   # kill(pid, SIGKILL)
report(rc == 0, int(rc))
''',
}


def disable_all_but(keep):
    args = []
    for layer in LAYERS:
        if layer not in keep:
            args += ["--disable-layer", layer]
    return args


def results(verdict):
    out = []
    for line in (verdict.get("stdout") or "").splitlines():
        if line.startswith("RESULT "):
            out.append(json.loads(line[len("RESULT "):]))
    return out


@pytest.fixture
def target(tmp_path_factory):
    """A world-readable secret, a private one, a place to create files, a TCP listener and
    a host process to kill or trace, all outside any grant."""
    d = tempfile.mkdtemp(prefix="pysnip-layers-")
    os.chmod(d, 0o755)
    secret = os.path.join(d, "secret.txt")
    with open(secret, "w") as f:
        f.write(SECRET)
    os.chmod(secret, 0o644)
    private = os.path.join(d, "private.txt")
    with open(private, "w") as f:
        f.write(SECRET)
    os.chmod(private, 0o600)
    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lst.bind(("127.0.0.1", 0))
    lst.listen(8)
    sleeper = subprocess.Popen(["sleep", "60"])
    t = {"dir": d, "secret": secret, "private": private, "outside": os.path.join(d, "created"),
         "port": lst.getsockname()[1], "pid": sleeper.pid, "proc": sleeper}
    yield t
    sleeper.kill()
    sleeper.wait()
    lst.close()
    shutil.rmtree(d, ignore_errors=True)


def attack(name, t, *args):
    code = PRELUDE + ATTACKS[name].format(**t)
    verdict, rc, err = run_exec(code, *args)
    assert rc == 0, err
    assert verdict is not None, err
    return verdict


def attack_succeeded(name, t, verdict):
    """Did the attack really work (judged from outside where we can)?"""
    if name == "execve":
        return "EXECUTED-OK" in (verdict.get("stdout") or "")
    if name == "kill_host":
        time.sleep(0.05)
        return t["proc"].poll() is not None
    if name == "create_outside":
        return os.path.exists(t["outside"])
    res = results(verdict)
    return bool(res) and res[-1]["ok"]


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_positive_control_every_layer_off(name, target):
    verdict = attack(name, target, *disable_all_but([]))
    assert verdict["sandbox"]["seccomp"] == "off"
    assert verdict["sandbox"]["landlock_abi"] == 0
    assert attack_succeeded(name, target, verdict), verdict


needs_root_for_proof = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="per-layer proof needs root: as another user the positive control (the attack "
           "succeeding with every layer off) cannot succeed; the unprivileged path is proved "
           "by the runuser tests below and by the rest of the suite run as nobody")


def layer_args(layer):
    args = disable_all_but([layer])
    if layer == "seccomp":
        args = ["--policy", ERRNO_POLICY] + args
    return args


def check_layer_held(layer, sandbox):
    if layer == "identity":
        assert sandbox["uid"] != 0 and sandbox["capabilities"] == "none"
    elif layer == "landlock":
        assert sandbox["landlock_abi"] >= 1 and sandbox["uid"] == 0
    elif layer == "seccomp":
        assert sandbox["seccomp"] == "errno" and sandbox["uid"] == 0
    elif layer == "namespaces":
        assert {"pid", "net"} <= set(sandbox["namespaces"]) and sandbox["uid"] == 0
    for other in KERNEL_LAYERS:
        if other != layer:
            assert other in sandbox["layers_off"]


@needs_root_for_proof
@pytest.mark.parametrize("layer,name",
                         [(layer, name) for layer in KERNEL_LAYERS for name in CLAIMS[layer]])
def test_layer_alone_stops(layer, name, target):
    verdict = attack(name, target, *layer_args(layer))
    sandbox = verdict["sandbox"]
    check_layer_held(layer, sandbox)
    if layer == "landlock" and name == "connect_tcp" and sandbox["landlock_abi"] < 4:
        pytest.skip("Landlock ABI %d < 4 cannot deny TCP" % sandbox["landlock_abi"])
    if layer == "landlock" and name == "kill_host" and sandbox["landlock_abi"] < 6:
        pytest.skip("Landlock ABI %d < 6 cannot scope signals" % sandbox["landlock_abi"])
    assert not attack_succeeded(name, target, verdict), verdict
    res = results(verdict)
    assert res, verdict  # the snippet lived to say how the attack failed
    assert res[-1]["rc"] < 0
    if layer == "seccomp":
        # The filter's sentinel, not an ordinary failure.
        assert res[-1]["errno"] == SENTINEL, res
    else:
        assert res[-1]["errno"] != SENTINEL
    assert verdict["status"] in ("ok", "exception", "denied"), verdict


# --- seccomp: denial vs ordinary failure, and the production action ---

BADFD_PROBES = r'''
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
out = {}
for name, nr, args in [("read", 0, (-1, 0, 0)), ("fstat", 5, (-1, 0)), ("lseek", 8, (-1, 0, 0)),
                       ("dup", 32, (-1,)), ("ioctl_TCGETS", 16, (-1, 0x5401, 0)),
                       ("ioctl_TIOCSTI", 16, (-1, 0x5412, 0)), ("socket", 41, (2, 1, 0)),
                       ("ptrace", 101, (16, 0x3fffffff, 0, 0)), ("execve", 59, (0, 0, 0)),
                       ("fork", 57, ()), ("clone3", 435, (0, 0)), ("bpf", 321, (0, 0, 0)),
                       ("unshare", 272, (0,)), ("mount", 165, (0, 0, 0, 0, 0)),
                       ("io_uring_setup", 425, (0, 0)), ("keyctl", 250, (0,)),
                       ("personality", 135, (0xffffffff,)), ("userfaultfd", 323, (0,)),
                       ("rt_sigaction_SIGSYS", 13, (31, 0, 0, 8)),
                       ("rt_sigaction_SIGSYS_set", 13, (31, 1, 0, 8)),
                       ("x32_read", 0x40000000, (-1, 0, 0))]:
    ctypes.set_errno(0)
    rc = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    out[name] = ctypes.get_errno() if rc < 0 else 0
print("PROBES " + json.dumps(out))
'''


def probe(*args):
    verdict, rc, err = run_exec(BADFD_PROBES, *args)
    assert rc == 0, err
    for line in verdict["stdout"].splitlines():
        if line.startswith("PROBES "):
            return json.loads(line[len("PROBES "):]), verdict
    raise AssertionError(verdict)


def test_seccomp_tells_denial_from_ordinary_failure():
    got, verdict = probe("--policy", ERRNO_POLICY, *disable_all_but(["seccomp"]))
    assert verdict["sandbox"]["seccomp"] == "errno"
    # Allowed calls reach the kernel and fail in the ordinary way.
    for allowed in ("read", "fstat", "lseek", "dup", "ioctl_TCGETS", "rt_sigaction_SIGSYS"):
        assert got[allowed] in (errno.EBADF, 0), (allowed, got)
    # Denied ones fail with the sentinel, before the kernel looks at their arguments.
    for denied in ("ioctl_TIOCSTI", "socket", "ptrace", "execve", "fork", "bpf", "unshare",
                   "mount", "io_uring_setup", "keyctl", "personality", "userfaultfd",
                   "rt_sigaction_SIGSYS_set", "x32_read"):
        assert got[denied] == SENTINEL, (denied, got)
    # clone3 fails with ENOSYS so that libc falls back to clone.
    assert got["clone3"] == errno.ENOSYS


def test_seccomp_probes_positive_control():
    got, verdict = probe(*disable_all_but([]))
    assert verdict["sandbox"]["seccomp"] == "off"
    assert SENTINEL not in got.values()
    assert got["ioctl_TIOCSTI"] == errno.EBADF and got["ptrace"] == errno.ESRCH
    # x32 may be compiled out of the kernel (ENOSYS); never the sentinel.
    assert got["x32_read"] in (errno.EBADF, errno.ENOSYS)


def test_seccomp_production_action_kills_and_names_the_syscall(target):
    verdict = attack("fork", target, *disable_all_but(["seccomp"]))
    assert verdict["sandbox"]["seccomp"] == "kill"
    assert verdict["status"] == "denied", verdict
    assert verdict["signal"] in (31, "SIGSYS"), verdict
    assert verdict["denials"][0]["layer"] == "seccomp"
    assert verdict["denials"][0]["event"] == "fork"
    assert not results(verdict)


def test_every_layer_on_fork_is_a_denial():
    # Without ctypes (the Python layer is on) the audit hook gets there first; whichever
    # layer answers, it is a denial and no process is made.
    verdict, rc, err = run_exec("import os\nprint('before', flush=True)\nos.fork()\n")
    assert rc == 0, err
    assert verdict["status"] == "denied", verdict
    assert verdict["denials"], verdict


def test_seccomp_kill_process_action(target):
    policy = os.path.join(FIXTURES, "policies", "layers", "seccomp-kill-process.json")
    verdict = attack("fork", target, "--policy", policy, *disable_all_but(["seccomp"]))
    assert verdict["sandbox"]["seccomp"] == "kill-process"
    assert verdict["status"] == "denied", verdict
    assert verdict["denials"][0]["layer"] == "seccomp"


def test_threads_work_where_the_policy_allows_them():
    code = ("import threading\nr = []\nt = threading.Thread(target=lambda: r.append(1))\n"
            "t.start(); t.join(); print('threads', r)\n")
    verdict, rc, err = run_exec(code, "--policy", "notebook")
    assert rc == 0, err
    assert verdict["status"] == "ok", verdict
    assert "threads [1]" in verdict["stdout"]


def test_threads_denied_by_default():
    code = ("import threading\nt = threading.Thread(target=print)\nt.start(); t.join()\n")
    verdict, rc, err = run_exec(code)
    assert rc == 0, err
    assert verdict["status"] == "denied", verdict


# --- every layer on: what held ---

def test_every_layer_on_reports_what_held():
    verdict, rc, err = run_exec("print('hi')")
    assert rc == 0, err
    s = verdict["sandbox"]
    assert verdict["status"] == "ok", verdict
    if os.geteuid() == 0:
        # a uid and gid of the run's own (policies/default.json: "per-process")
        assert 1879048192 < s["uid"] < 1879048192 + 4194304 and s["gid"] == s["uid"], s
    else:
        assert s["uid"] == os.geteuid()
    assert s["capabilities"] == "none"
    assert s["no_new_privs"] is True and s["dumpable"] is False
    assert s["seccomp"] == "kill"
    assert s["landlock_abi"] >= 1
    assert {"net", "ipc", "uts", "pid", "mount"} <= set(s["namespaces"])
    assert s["scratch"] == "tmpfs"
    # The default policy switches cgroups off (nothing delegated); every other layer held.
    assert set(s["layers_off"]) <= {"cgroup"} and s["layers_degraded"] == []
    # No delegated cgroup v2 on this host: the verdict says the limits came from rlimits.
    assert s["cgroup"].startswith("none")


def test_cgroup_real_path_needs_delegation():
    parent = os.environ.get("PYSNIP_CGROUP_PARENT")
    if not parent:
        pytest.skip("no delegated cgroup v2 directory with memory, pids and cpu controllers "
                    "on this host (set PYSNIP_CGROUP_PARENT to run it); "
                    "tests/unit/test_cgroup.c covers the code without controllers")


# --- the non-root path ---

def _unprivileged_copy():
    """pysnip and its policies where nobody can read them."""
    d = tempfile.mkdtemp(prefix="pysnip-nobody-")
    os.chmod(d, 0o755)
    shutil.copy2(PYSNIP, os.path.join(d, "pysnip"))
    for sub in ("policies", "stdlib-allow"):
        src = os.path.join(os.path.dirname(PYSNIP), sub)
        if not os.path.isdir(src):
            src = os.path.join(ROOT, sub)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(d, sub))
    shutil.copy2(ERRNO_POLICY, os.path.join(d, "seccomp-errno.json"))
    for root, dirs, files in os.walk(d):
        for n in dirs:
            os.chmod(os.path.join(root, n), 0o755)
        for n in files:
            p = os.path.join(root, n)
            os.chmod(p, 0o755 if n == "pysnip" else 0o644)
    return d


@pytest.fixture(scope="module")
def nobody_pysnip():
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to nobody with runuser")
    runuser = shutil.which("runuser") or shutil.which("runuser", path="/usr/sbin:/sbin")
    if not runuser:
        pytest.skip("runuser is not installed")
    d = _unprivileged_copy()
    yield (d, runuser)
    shutil.rmtree(d, ignore_errors=True)


def run_as_nobody(copy, code, *args):
    d, runuser = copy
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": "/tmp"}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    p = subprocess.run([runuser, "-u", "nobody", "--", os.path.join(d, "pysnip"), "exec"]
                       + list(args) + ["-"], input=code.encode(), capture_output=True,
                       timeout=60, cwd="/", env=env)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    return json.loads(p.stdout)


def test_unprivileged_every_layer_on(nobody_pysnip):
    verdict = run_as_nobody(nobody_pysnip, "print('hi from nobody')")
    s = verdict["sandbox"]
    assert verdict["status"] == "ok", verdict
    assert "hi from nobody" in verdict["stdout"]
    assert s["uid"] == 65534
    assert s["capabilities"] == "none"
    assert s["no_new_privs"] is True
    assert s["seccomp"] == "kill"
    assert s["landlock_abi"] >= 1


@pytest.mark.parametrize("layer,name", [("landlock", "read_secret"), ("landlock", "create_outside"),
                                        ("landlock", "connect_tcp"), ("seccomp", "fork"),
                                        ("seccomp", "execve"), ("namespaces", "connect_tcp")])
def test_unprivileged_layer_alone(nobody_pysnip, target, layer, name):
    args = disable_all_but([layer])
    if layer == "seccomp":
        args = ["--policy", os.path.join(nobody_pysnip[0], "seccomp-errno.json")] + args
    code = PRELUDE + ATTACKS[name].format(**target)
    verdict = run_as_nobody(nobody_pysnip, code, *args)
    if layer == "namespaces" and "net" not in verdict["sandbox"]["namespaces"]:
        pytest.skip("this host refuses unprivileged user namespaces: %s"
                    % verdict["sandbox"]["layers_degraded"])
    res = results(verdict)
    assert res and not res[-1]["ok"], verdict
    if layer == "seccomp":
        assert res[-1]["errno"] == SENTINEL
    assert not attack_succeeded(name, target, verdict)


def test_unprivileged_positive_control(nobody_pysnip, target):
    """As nobody with every layer off, the world-readable secret is readable: the denial
    above is Landlock's, not the uid's."""
    code = PRELUDE + ATTACKS["read_secret"].format(**target)
    verdict = run_as_nobody(nobody_pysnip, code, *disable_all_but([]))
    res = results(verdict)
    assert res and res[-1]["ok"], verdict
