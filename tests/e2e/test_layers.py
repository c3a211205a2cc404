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

from conftest import FIXTURES, PYSNIP, ROOT, needs_rlimit_as, run_exec

LAYERS = ["python", "identity", "landlock", "seccomp", "namespaces"]
KERNEL_LAYERS = ["identity", "landlock", "seccomp", "namespaces"]
SENTINEL = 4000
ERRNO_POLICY = os.path.join(FIXTURES, "policies", "layers", "seccomp-errno.json")
SECRET = "SECRET-7f3a"

# Which attacks each layer claims to stop on its own (SECURITY.md, "The layers").
CLAIMS = {
    # Not touch_host_file: a 0666 file's times are anyone's to set to now.
    "identity": ["read_private", "create_outside", "kill_host", "kill_host_sigio", "ptrace_host",
                 "chmod_host_file"],
    "landlock": ["read_secret", "read_private", "create_outside", "connect_tcp", "kill_host",
                 "kill_host_sigio", "ptrace_host", "execve"],
    "seccomp": ["connect_tcp", "fork", "execve", "ptrace_host", "kill_host", "kill_host_sigio"],
    # The mount namespace: the host's tree read-only outside scratch and the write paths,
    # and a /proc of the workers' own PID namespace.
    "namespaces": ["connect_tcp", "kill_host", "kill_host_sigio", "ptrace_host",
                   "touch_host_file", "chmod_host_file", "create_outside", "proc_host_pid"],
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
    # The same kill without kill(2): a pipe whose owner is the host process, SIGKILL as its
    # I/O signal, O_ASYNC, one byte written. The kernel sends the signal itself, checking the
    # uid (identity), Landlock's signal scope (ABI >= 6) and the owner's pid namespace.
    "kill_host_sigio": r'''
import time
libc.fcntl.restype = ctypes.c_int
fds = (ctypes.c_int * 2)()
libc.pipe(fds)
rcs = [libc.fcntl(fds[0], 8, ctypes.c_int({pid}))]          # F_SETOWN
if rcs[-1] == 0:
    rcs.append(libc.fcntl(fds[0], 10, ctypes.c_int(9)))      # F_SETSIG SIGKILL
if rcs[-1] == 0:
    fl = libc.fcntl(fds[0], 3)                                # F_GETFL
    rcs.append(libc.fcntl(fds[0], 4, ctypes.c_int(fl | os.O_ASYNC)))
if rcs[-1] == 0:
    libc.write(fds[1], b"x", 1)
    time.sleep(0.1)
report(rcs[-1] == 0, int(rcs[-1]), calls=len(rcs))
''',
    # Metadata of a host file (issue 9, finding 11). Landlock has no right for utimensat,
    # chmod or chown; a root-owned 0666 file lets any uid set its times to now.
    "touch_host_file": r'''
rc = libc.utimensat(-100, {world!r}.encode(), None, 0)      # AT_FDCWD, times = now
report(rc == 0, rc)
''',
    "chmod_host_file": r'''
rc = libc.chmod({secret!r}.encode(), 0o666)
report(rc == 0, rc)
''',
    # Which host processes exist, and whose they are (finding 12): /proc/PID of the sleeper.
    "proc_host_pid": r'''
st = ctypes.create_string_buffer(256)
rc = libc.syscall(4, b"/proc/{pid}", st)                     # stat(2)
report(rc == 0, int(rc))
''',
}

# Where the kernel drops the attack's signal at delivery, not at the call: the calls succeed
# and only the target's survival shows the layer held.
SILENT = {("identity", "kill_host_sigio"), ("landlock", "kill_host_sigio")}


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
    world = os.path.join(d, "world-writable")
    with open(world, "w") as f:
        f.write("anyone may write me; nobody in a run may touch my times\n")
    os.chmod(world, 0o666)
    os.utime(world, (1000000000, 1000000000))
    sleeper = subprocess.Popen(["sleep", "60"])
    t = {"dir": d, "secret": secret, "private": private, "outside": os.path.join(d, "created"),
         "world": world, "port": lst.getsockname()[1], "pid": sleeper.pid, "proc": sleeper}
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
    if name in ("kill_host", "kill_host_sigio"):
        time.sleep(0.05)
        return t["proc"].poll() is not None
    if name == "create_outside":
        return os.path.exists(t["outside"])
    if name == "touch_host_file":
        return os.stat(t["world"]).st_mtime != 1000000000
    if name == "chmod_host_file":
        return os.stat(t["secret"]).st_mode & 0o777 != 0o644
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


# Landlock runs as this kernel negotiates it, and capped at ABI 2 (PYSNIP_LANDLOCK_MAX_ABI,
# the host's test knob): Debian 12's own 6.1 kernel, where Landlock has no TCP rights and
# no signal scoping, so the other layers' claims below must not lean on it.
LANDLOCK_ABIS = [None, 2]


def layer_cases():
    for layer in KERNEL_LAYERS:
        for name in CLAIMS[layer]:
            for abi in (LANDLOCK_ABIS if layer == "landlock" else [None]):
                yield pytest.param(layer, name, abi,
                                   id="%s-%s%s" % (layer, name, "-abi%d" % abi if abi else ""))


@needs_root_for_proof
@pytest.mark.parametrize("layer,name,abi", list(layer_cases()))
def test_layer_alone_stops(layer, name, abi, target, monkeypatch):
    if abi:
        monkeypatch.setenv("PYSNIP_LANDLOCK_MAX_ABI", str(abi))
    verdict = attack(name, target, *layer_args(layer))
    sandbox = verdict["sandbox"]
    check_layer_held(layer, sandbox)
    if abi:
        assert sandbox["landlock_abi"] == abi, sandbox
    if layer == "landlock" and name == "connect_tcp" and sandbox["landlock_abi"] < 4:
        pytest.skip("Landlock ABI %d < 4 cannot deny TCP" % sandbox["landlock_abi"])
    if (layer == "landlock" and name.startswith("kill_host")
            and sandbox["landlock_abi"] < 6):
        pytest.skip("Landlock ABI %d < 6 cannot scope signals" % sandbox["landlock_abi"])
    assert not attack_succeeded(name, target, verdict), verdict
    res = results(verdict)
    assert res, verdict  # the snippet lived to say how the attack failed
    if (layer, name) in SILENT:
        return
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
                       # the worker's own SCHED_IDLE as it exits is allowed; nothing else
                       ("sched_idle_self", 144, (0, 5, 0)), ("sched_batch_self", 144, (0, 3, 0)),
                       ("sched_idle_pid1", 144, (1, 5, 0)),
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
    assert got["sched_idle_self"] == errno.EINVAL, got  # (no sched_param: the kernel's answer)
    # Denied ones fail with the sentinel, before the kernel looks at their arguments.
    for denied in ("ioctl_TIOCSTI", "socket", "ptrace", "execve", "fork", "bpf", "unshare",
                   "mount", "io_uring_setup", "keyctl", "personality", "userfaultfd",
                   "rt_sigaction_SIGSYS_set", "sched_batch_self", "sched_idle_pid1", "x32_read"):
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


# A SIGSYS is a seccomp denial only when the kernel's filter raised it (si_code SYS_SECCOMP).
# The snippet may signal itself (kill and tgkill to its own pid are allowed): that must end
# nothing under any action, and without a filter it is an ordinary signal.
SELF_SIGSYS = PRELUDE + r'''
rc = libc.syscall(62, os.getpid(), 31)                             # kill(self, SIGSYS)
rc2 = libc.syscall(234, os.getpid(), libc.syscall(186), 31)        # tgkill(self, self, SIGSYS)
report(True, int(min(rc, rc2)))
'''
KILL_PROCESS_POLICY = os.path.join(FIXTURES, "policies", "layers", "seccomp-kill-process.json")


@pytest.mark.parametrize("policy,action", [(None, "kill"), (KILL_PROCESS_POLICY, "kill-process"),
                                           (ERRNO_POLICY, "errno")])
def test_self_sent_sigsys_is_not_a_denial(policy, action):
    args = (["--policy", policy] if policy else []) + ["--disable-layer", "python"]
    verdict, rc, err = run_exec(SELF_SIGSYS, *args)
    assert rc == 0, err
    assert verdict["sandbox"]["seccomp"] == action
    assert verdict["status"] == "ok", verdict
    assert verdict["denials"] == [] and verdict["signal"] is None, verdict
    res = results(verdict)
    assert res and res[-1]["rc"] == 0, verdict


def test_self_sent_sigsys_without_filter_is_a_signal():
    verdict, rc, err = run_exec(SELF_SIGSYS, "--disable-layer", "python",
                                "--disable-layer", "seccomp")
    assert rc == 0, err
    assert verdict["status"] == "signal" and verdict["signal"] == 31, verdict
    assert verdict["denials"] == [], verdict


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


# --- serve: no worker signals a neighbour (issue 9, finding 4) ---

# Every worker of a zygote shares its PID namespace and its uid, so neither stops a
# F_SETOWN'd pipe from delivering SIGKILL to a spare next door; Landlock scopes signals only
# from ABI 6. The seccomp filter is what must hold: run as a kernel before 6.12 (Landlock
# off, or capped at ABI 2) and look at the spares from outside.
SIGIO_NEIGHBOURS = r'''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.fcntl.restype = ctypes.c_int
for pid in range(1, 64):
    if pid == os.getpid():
        continue
    fds = (ctypes.c_int * 2)()
    libc.pipe(fds)
    if libc.fcntl(fds[0], 8, ctypes.c_int(pid)) != 0:          # F_SETOWN
        continue
    libc.fcntl(fds[0], 10, ctypes.c_int(9))                      # F_SETSIG SIGKILL
    libc.fcntl(fds[0], 4, ctypes.c_int(libc.fcntl(fds[0], 3) | os.O_ASYNC))
    libc.write(fds[1], b"x", 1)
print("sent", flush=True)
'''


def _workers(server):
    out = set()
    for pid in server.descendants():
        try:
            with open("/proc/%d/comm" % pid) as f:
                if f.read().strip() == "pysnip-worker":
                    out.add(pid)
        except OSError:
            pass
    return out


@pytest.mark.parametrize("how", ["landlock-off", "landlock-abi2"])
def test_serve_worker_cannot_signal_neighbours(how):
    from servekit import Server, wait_for
    args = ["--workers", "2", "--policy", "default", "--disable-layer", "python"]
    env = {}
    if how == "landlock-off":
        args += ["--disable-layer", "landlock"]
    else:
        env["PYSNIP_LANDLOCK_MAX_ABI"] = "2"
    s = Server(*args, env=env)
    try:
        spares = wait_for(lambda: len(_workers(s)) >= 2 and _workers(s), timeout=30)
        assert spares and len(spares) >= 2, "no spare workers to watch"
        st, _, v = s.exec(SIGIO_NEIGHBOURS)
        assert st == 200, v
        time.sleep(0.2)
        alive = {p for p in spares if os.path.exists("/proc/%d" % p)}
        # one spare served the attack and is gone; no other may be
        assert len(alive) >= len(spares) - 1, (spares, alive, v["stdout"])
        assert v["status"] == "denied", v
        assert v["denials"][0]["layer"] == "seccomp" and v["denials"][0]["event"] == "fcntl", v
        if how == "landlock-abi2":
            assert v["sandbox"]["landlock_abi"] == 2, v["sandbox"]
        # a tenant after it runs as usual
        st, _, v = s.exec("print('next tenant')")
        assert st == 200 and v["status"] == "ok" and "next tenant" in v["stdout"], v
    finally:
        s.stop()


# --- metadata: only where writes are granted (finding 11) ---

METADATA = PRELUDE + r'''
out = {}
for name, path in [("scratch", b"mine"), ("write_path", {wfile!r}.encode()),
                   ("host", {world!r}.encode())]:
    if name == "scratch":
        open("mine", "w").write("x")
    ctypes.set_errno(0)
    rc = libc.utimensat(-100, path, None, 0)
    out[name] = 0 if rc == 0 else ctypes.get_errno()
    if name != "host":
        rc = libc.chmod(path, 0o600)
        out[name + "_chmod"] = 0 if rc == 0 else ctypes.get_errno()
print("META " + json.dumps(out), flush=True)
'''


def test_metadata_only_where_writes_are_granted(target, tmp_path):
    """Every layer on (the Python one off, for ctypes): times and modes change in scratch and
    in the policy's write path; a root-owned 0666 host file's times do not (the read-only
    mount says EROFS: identity lets anyone touch a 0666 file, Landlock has no right for it)."""
    wdir = tempfile.mkdtemp(prefix="pysnip-wpath-")
    try:
        os.chmod(wdir, 0o777)
        wfile = os.path.join(wdir, "w.txt")
        with open(wfile, "w") as f:
            f.write("x")
        os.chmod(wfile, 0o666)
        os.chown(wfile, 65534, 65534)
        pol = tmp_path / "wpath.json"
        # one fixed uid, the file's owner: chmod needs the owner (the shipped policies give
        # each worker a uid of its own, unknown before the run)
        pol.write_text(json.dumps({"extends": "default", "filesystem": {"write": [wdir]},
                                   "identity": {"uid": 65534, "gid": 65534, "uid_count": 1}}))
        code = METADATA.replace("{wfile!r}", repr(wfile)).replace("{world!r}",
                                                                   repr(target["world"]))
        verdict, rc, err = run_exec(code, "--policy", str(pol), "--disable-layer", "python")
        assert rc == 0, err
        assert verdict["status"] == "ok", verdict
        line = [l for l in verdict["stdout"].splitlines() if l.startswith("META ")]
        got = json.loads(line[0][5:])
        assert got["scratch"] == 0 and got["scratch_chmod"] == 0, got
        assert got["write_path"] == 0 and got["write_path_chmod"] == 0, got
        assert os.stat(wfile).st_mode & 0o777 == 0o600
        assert got["host"] == errno.EROFS, got
        assert os.stat(target["world"]).st_mtime == 1000000000
    finally:
        shutil.rmtree(wdir, ignore_errors=True)


# --- /proc: the run's own PID namespace only (finding 12) ---

PROC_LISTING = r'''
import json, os
pids = sorted(int(n) for n in os.listdir("/proc") if n.isdigit())
print("PROC " + json.dumps({"pids": pids, "me": os.getpid()}), flush=True)
'''


def _proc_listing(verdict):
    assert verdict["status"] == "ok", verdict
    line = [l for l in verdict["stdout"].splitlines() if l.startswith("PROC ")]
    return json.loads(line[0][5:])


def test_proc_lists_only_the_run(target):
    """Landlock off, so that /proc can be listed at all: the kernel's procfs shows this run
    alone, not the host's sleeper nor the namespace's root-owned init."""
    verdict, rc, err = run_exec(PROC_LISTING, "--disable-layer", "python",
                                "--disable-layer", "landlock")
    assert rc == 0, err
    got = _proc_listing(verdict)
    assert got["pids"] == [got["me"]], got
    # control: without the namespaces layer the same listing is the host's
    verdict, rc, err = run_exec(PROC_LISTING, *disable_all_but(["identity"]))
    got = _proc_listing(verdict)
    assert target["pid"] in got["pids"], got


def test_serve_proc_hides_neighbours():
    from servekit import Server, wait_for
    s = Server("--workers", "2", "--policy", "default", "--disable-layer", "python",
               "--disable-layer", "landlock")
    try:
        assert wait_for(lambda: len(_workers(s)) >= 2, timeout=30), "no spare workers"
        st, _, v = s.exec(PROC_LISTING)
        assert st == 200, v
        got = _proc_listing(v)
        assert got["pids"] == [got["me"]], got
    finally:
        s.stop()


# --- a kernel layer's answer is a denial, named (finding 13) ---

@pytest.mark.parametrize("abi", LANDLOCK_ABIS, ids=["abi-kernel", "abi2"])
def test_landlock_denial_is_a_named_denial(abi, monkeypatch):
    if abi:
        monkeypatch.setenv("PYSNIP_LANDLOCK_MAX_ABI", str(abi))
    code = "x = 1\nopen('/etc/passwd').read()\n"
    verdict, rc, err = run_exec(code, "--disable-layer", "python")
    assert rc == 0, err
    assert verdict["status"] == "denied", verdict
    d = verdict["denials"][0]
    assert (d["layer"], d["detail"], d["line"]) == ("landlock", "/etc/passwd", 2), d
    # control: the same open with Landlock off reads (0644, any uid): Landlock said no
    verdict, rc, err = run_exec(code, "--disable-layer", "python", "--disable-layer", "landlock")
    assert verdict["status"] == "ok" and verdict["denials"] == [], verdict


OWN_FILE = ("import os\nopen('mine', 'w').write('x')\nos.chmod('mine', 0)\n"
            "open(%s).read()\n")


@pytest.mark.parametrize("how", ["relative", "absolute"])
@pytest.mark.parametrize("server", [False, True], ids=["exec", "serve"])
def test_own_files_permission_error_is_an_exception(how, server):
    """EACCES on the snippet's own file in scratch (mode 0, as its owner) is no layer's
    doing: Landlock grants scratch whole."""
    code = OWN_FILE % ("'mine'" if how == "relative" else "os.path.abspath('mine')")
    if server:
        from servekit import Server
        s = Server("--workers", "1", "--disable-layer", "python")
        try:
            st, _, verdict = s.exec(code)
            assert st == 200, verdict
        finally:
            s.stop()
    else:
        verdict, rc, err = run_exec(code, "--disable-layer", "python")
        assert rc == 0, err
    assert verdict["exception"]["errno"] == errno.EACCES, verdict
    assert verdict["status"] == "exception" and verdict["denials"] == [], verdict


@pytest.mark.skipif(not os.path.exists("/etc/shadow") or os.stat("/etc/shadow").st_mode & 0o004,
                    reason="needs a /etc/shadow that others cannot read")
def test_uid_denial_is_named_identity():
    """/etc/shadow (0640 root:shadow): the kernel's permission check refuses uid 65534 before
    Landlock is asked, so the verdict names the identity layer; as root (identity off) it is
    Landlock's."""
    code = "open('/etc/shadow').read()\n"
    verdict, rc, err = run_exec(code, "--disable-layer", "python")
    assert rc == 0, err
    assert verdict["status"] == "denied", verdict
    assert verdict["denials"][0]["layer"] == "identity", verdict
    if os.geteuid() != 0:
        return  # not root: identity off leaves the same uid
    verdict, rc, err = run_exec(code, "--disable-layer", "python", "--disable-layer", "identity")
    assert verdict["status"] == "denied", verdict
    assert verdict["denials"][0]["layer"] == "landlock", verdict


def test_read_only_view_is_a_named_denial():
    verdict, rc, err = run_exec("import os\nos.utime('/etc/hostname')\n",
                                "--disable-layer", "python")
    assert rc == 0, err
    assert verdict["status"] == "denied", verdict
    assert verdict["denials"][0]["layer"] == "namespaces", verdict
    assert verdict["exception"]["errno"] == errno.EROFS


def test_snippets_own_permission_error_is_an_exception():
    """The kernel's errno decides, not the type: PermissionError('...') without one is the
    snippet's own exception."""
    verdict, rc, err = run_exec("raise PermissionError('no')\n", "--disable-layer", "python")
    assert rc == 0, err
    assert verdict["status"] == "exception" and verdict["denials"] == [], verdict


@needs_rlimit_as
def test_enomem_under_the_memory_limit_is_memory_limit():
    code = "import mmap\nm = mmap.mmap(-1, 1 << 36)\n"     # 64 GiB, far past RLIMIT_AS
    verdict, rc, err = run_exec(code, "--disable-layer", "python")
    assert rc == 0, err
    assert verdict["status"] == "memory_limit", verdict
    assert verdict["exception"]["errno"] == errno.ENOMEM
    # control: a small map is fine
    verdict, rc, err = run_exec("import mmap\nm = mmap.mmap(-1, 1 << 20)\nprint('mapped')\n",
                                "--disable-layer", "python")
    assert verdict["status"] == "ok" and "mapped" in verdict["stdout"], verdict


# --- seccomp alone: every route to a claim, under every shipped policy ---

POLICIES = sorted(os.path.basename(p)[:-5] for p in
                  __import__("glob").glob(os.path.join(ROOT, "policies", "*.json")))

# Each route to "signal a host process" (SIGKILL to the sleeper) and to "make a process".
ROUTES = {
    "kill": "rc = libc.syscall(62, {pid}, 9)",
    "tkill": "rc = libc.syscall(200, {pid}, 9)",
    "tgkill": "rc = libc.syscall(234, {pid}, {pid}, 9)",
    "rt_sigqueueinfo": r'''
info = (ctypes.c_int * 32)(9, 0, -1)              # si_signo, si_errno, si_code SI_QUEUE
rc = libc.syscall(129, {pid}, 9, info)''',
    "rt_tgsigqueueinfo": r'''
info = (ctypes.c_int * 32)(9, 0, -1)
rc = libc.syscall(297, {pid}, {pid}, 9, info)''',
    # a /proc/PID directory descriptor is a pidfd to pidfd_send_signal (no pidfd_open needed)
    "pidfd_send_signal": r'''
fd = os.open("/proc/{pid}", os.O_RDONLY | os.O_DIRECTORY)
rc = libc.syscall(424, fd, 9, None, 0)''',
    "fork": r'''
rc = libc.syscall(57)
if rc == 0:
    libc._exit(0)''',
    "vfork": r'''
rc = libc.syscall(58)
if rc == 0:
    libc._exit(0)''',
    # clone without CLONE_THREAD: a process, whatever the policy says of threads
    "clone": r'''
rc = libc.syscall(56, 17, 0, 0, 0, 0)             # SIGCHLD, no new stack: a fork
if rc == 0:
    libc._exit(0)''',
    "clone3": r'''
args = (ctypes.c_uint64 * 11)(0, 0, 0, 0, 17)     # flags 0, exit_signal SIGCHLD
rc = libc.syscall(435, args, 88)
if rc == 0:
    libc._exit(0)''',
}
SIGNAL_ROUTES = ["kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo",
                 "pidfd_send_signal"]
FORK_ROUTES = ["fork", "vfork", "clone", "clone3"]


def route_code(route, t):
    body = ROUTES[route].format(pid=t["pid"])
    return PRELUDE + body + r'''
if rc > 0:
    os.waitpid(int(rc), 0)
report(rc >= 0, int(rc))
'''


def route_worked(route, t, verdict):
    if route in SIGNAL_ROUTES:
        time.sleep(0.05)
        return t["proc"].poll() is not None
    res = results(verdict)
    return bool(res) and res[-1]["rc"] > 0


@needs_root_for_proof
@pytest.mark.parametrize("route", sorted(set(ROUTES) - {"vfork"}))
def test_route_positive_control(route, target):
    """Every route works with every layer off: the denials below are the filter's. (Not
    vfork: its raw child would run on the parent's stack; the denial below names it.)"""
    verdict, rc, err = run_exec(route_code(route, target), *disable_all_but([]))
    assert rc == 0, err
    assert route_worked(route, target, verdict), verdict


@needs_root_for_proof
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("route", sorted(ROUTES))
def test_seccomp_alone_every_route(policy, route, target):
    verdict, rc, err = run_exec(route_code(route, target), "--policy", policy,
                                *disable_all_but(["seccomp"]))
    assert rc == 0, err
    assert verdict["sandbox"]["seccomp"] == "kill" and verdict["sandbox"]["uid"] == 0
    assert not route_worked(route, target, verdict), verdict
    if route == "clone3":
        # fails with ENOSYS (libc then falls back to clone, whose flags the filter reads)
        res = results(verdict)
        assert res and res[-1]["rc"] < 0 and res[-1]["errno"] == errno.ENOSYS, verdict
        return
    if policy == "scientific" and route in FORK_ROUTES:
        # @exec-probe: fork and exec fail with EPERM there (libraries probe for a
        # subprocess and must see an OSError, not die); the child never exists
        res = results(verdict)
        assert verdict["status"] == "ok", verdict
        assert res and res[-1]["rc"] < 0 and res[-1]["errno"] == errno.EPERM, verdict
        return
    assert verdict["status"] == "denied", verdict
    d = verdict["denials"][0]
    assert (d["layer"], d["event"]) == ("seccomp", route), d


@needs_root_for_proof
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("route", SIGNAL_ROUTES)
@pytest.mark.parametrize("layer", ["identity", "landlock", "namespaces"])
def test_other_layers_alone_every_signal_route(layer, route, policy, target):
    """The kill_host claim of each other kernel layer, through every signalling syscall: the
    uid (EPERM), Landlock's signal scope (ABI >= 6), the PID namespace (no such pid)."""
    code = route_code(route, target).replace(
        'fd = os.open("/proc/', 'fd = -1\ntry:\n    fd = os.open("/proc/').replace(
        'os.O_DIRECTORY)\n', 'os.O_DIRECTORY)\nexcept OSError:\n    pass\n')
    verdict, rc, err = run_exec(code, "--policy", policy, *disable_all_but([layer]))
    assert rc == 0, err
    check_layer_held(layer, verdict["sandbox"])
    if layer == "landlock" and verdict["sandbox"]["landlock_abi"] < 6:
        pytest.skip("Landlock ABI %d < 6 cannot scope signals" % verdict["sandbox"]["landlock_abi"])
    assert not route_worked(route, target, verdict), verdict
    res = results(verdict)
    assert res and res[-1]["rc"] < 0, verdict


@pytest.mark.parametrize("policy", POLICIES)
def test_signals_to_self_still_work(policy):
    """The control of the self-only rule: kill and tgkill to the worker itself pass the
    filter (signal 0, no effect) under every policy."""
    code = PRELUDE + r'''
rc = libc.syscall(62, os.getpid(), 0)
rc2 = libc.syscall(234, os.getpid(), libc.syscall(186), 0)
report(rc == 0 and rc2 == 0, int(min(rc, rc2)))
'''
    verdict, rc, err = run_exec(code, "--policy", policy, "--disable-layer", "python")
    assert rc == 0, err
    res = results(verdict)
    assert verdict["status"] == "ok" and res and res[-1]["ok"], verdict


# --- Landlock: what it grants, and nothing next to it ---

# The read-only grants (host/sandbox/landlock.c runtime_paths, the stdlib and lib-dynload).
GRANTED = ["/usr/lib/python3.11", "/usr/lib/python3.11/lib-dynload",
           "/usr/lib/x86_64-linux-gnu", "/etc/ld.so.cache", "/etc/localtime",
           "/usr/share/zoneinfo", "/dev/urandom", "/dev/random", "/dev/null", "/dev/zero"]


def _neighbours():
    """Up to three regular files or directories beside each granted path, under none: what a
    grant widened by one level (a file's grant to its directory) would expose."""
    real = [os.path.realpath(g) for g in GRANTED if os.path.exists(g)]
    under = lambda p: any(p == g or p.startswith(g + "/") for g in real)  # noqa: E731
    # the ones that matter most, then the first few of each directory
    out = [p for p in ("/etc/passwd", "/etc/hostname", "/etc/ld.so.conf", "/usr/lib/os-release",
                       "/usr/share/doc") if os.path.exists(p) and not os.path.islink(p)]
    for g in real:
        parent = os.path.dirname(g)
        picked = 0
        for n in sorted(os.listdir(parent)):
            p = os.path.join(parent, n)
            if picked == 3 or under(p) or p in out or os.path.islink(p):
                continue
            if os.path.isfile(p) or os.path.isdir(p):
                out.append(p)
                picked += 1
    return out


PROBE_OPEN = PRELUDE + r'''
out = {}
for p in PATHS:
    flags = os.O_RDONLY | (os.O_DIRECTORY if os.path.isdir(p) else 0)
    ctypes.set_errno(0)
    fd = libc.open(p.encode(), flags)
    out[p] = 0 if fd >= 0 else ctypes.get_errno()
    if fd >= 0:
        libc.close(fd)
print("OPENS " + json.dumps(out), flush=True)
'''


def _opens(verdict):
    line = [l for l in verdict["stdout"].splitlines() if l.startswith("OPENS ")]
    assert line, verdict
    return json.loads(line[0][6:])


@needs_root_for_proof
@pytest.mark.parametrize("abi", LANDLOCK_ABIS, ids=["abi-kernel", "abi2"])
def test_landlock_grants_nothing_beside_its_paths(abi, monkeypatch):
    neigh = _neighbours()
    granted = [g for g in GRANTED if os.path.exists(g)]
    assert "/etc/passwd" in neigh and len(neigh) >= 10, neigh
    code = PROBE_OPEN.replace("PATHS", repr(granted + neigh))
    # control: with every layer off, root opens every one of them
    verdict, rc, err = run_exec(code, *disable_all_but([]))
    assert rc == 0, err
    assert all(v == 0 for v in _opens(verdict).values()), _opens(verdict)
    if abi:
        monkeypatch.setenv("PYSNIP_LANDLOCK_MAX_ABI", str(abi))
    verdict, rc, err = run_exec(code, *disable_all_but(["landlock"]))
    assert rc == 0, err
    assert verdict["sandbox"]["landlock_abi"] == (abi or verdict["sandbox"]["landlock_abi"]) > 0
    got = _opens(verdict)
    assert {g: got[g] for g in granted} == {g: 0 for g in granted}, got
    assert {n: got[n] for n in neigh} == {n: errno.EACCES for n in neigh}, got


# --- what the kernel says held, from inside the run (never the verdict's own word) ---

KERNEL_STATUS = r'''
import json, os
st = {}
for line in open("/proc/self/status"):
    k, _, v = line.partition(":")
    st[k] = v.split()
# not dumpable: the kernel gives this process's /proc files to root, not to its own uid
st["proc_owner"] = [str(os.stat("/proc/self/status").st_uid)]
print("STATUS " + json.dumps(st), flush=True)
'''
KERNEL_PRCTL = PRELUDE + r'''
bnd = [libc.prctl(23, c, 0, 0, 0) for c in range(64)]   # PR_CAPBSET_READ until EINVAL
print("PRCTL " + json.dumps({"dumpable": libc.prctl(3, 0, 0, 0, 0),     # PR_GET_DUMPABLE
                             "nnp": libc.prctl(39, 0, 0, 0, 0),         # PR_GET_NO_NEW_PRIVS
                             "bounding": [c for c, v in enumerate(bnd) if v == 1],
                             "known_caps": sum(1 for v in bnd if v >= 0)}), flush=True)
'''


def _line(verdict, tag):
    got = [l for l in verdict["stdout"].splitlines() if l.startswith(tag + " ")]
    assert got, verdict
    return json.loads(got[0][len(tag) + 1:])


def _check_status(st, seccomp_on):
    for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(st[k][0], 16) == 0, (k, st[k])
    assert st["NoNewPrivs"] == ["1"], st
    assert st["Seccomp"] == (["2"] if seccomp_on else ["0"]), st
    # as root a uid of the policy's private range (0x70000000 + the worker's pid, default
    # policy), else our own (a user namespace maps only it)
    uid = st["Uid"][0]
    assert st["Uid"] == [uid] * 4 and st["Gid"] == [uid] * 4, st
    if os.geteuid() == 0:
        assert 0x70000000 <= int(uid) < 0x70000000 + 4194304, st
    else:
        assert uid == str(os.geteuid()), st
    # as root the uid drop clears them; not root, setgroups is refused (a user namespace
    # maps only our own ids), so the caller's own group may stay
    assert st["Groups"] == [] if os.geteuid() == 0 else set(st["Groups"]) <= {str(os.getgid())}, st
    if os.geteuid() == 0:
        # (in a user namespace the owner is the namespace's unmapped root: the overflow id;
        # test_unprivileged_kernel_view asks prctl there)
        assert st["proc_owner"] == ["0"], st


def _check_prctl(pr):
    assert pr["dumpable"] == 0 and pr["nnp"] == 1, pr
    assert pr["known_caps"] >= 38 and pr["bounding"] == [], pr


def test_kernel_view_of_the_worker_exec():
    off = ["--disable-layer", "python", "--disable-layer", "landlock"]
    # Landlock off: it would (rightly) refuse /proc; every other layer as shipped
    verdict, rc, err = run_exec(KERNEL_STATUS, *off)
    assert rc == 0, err
    _check_status(_line(verdict, "STATUS"), seccomp_on=True)
    # prctl is not in the allowlist: ask it with seccomp off
    verdict, rc, err = run_exec(KERNEL_STATUS + KERNEL_PRCTL, *off, "--disable-layer", "seccomp")
    assert rc == 0, err
    _check_status(_line(verdict, "STATUS"), seccomp_on=False)
    _check_prctl(_line(verdict, "PRCTL"))


def test_kernel_view_of_the_worker_serve():
    """A zygote's worker: the zygote emptied its bounding set once, each worker dropped the
    rest. Spares are forked ahead of demand, so this is a spare's view."""
    from servekit import Server
    off = ["--workers", "1", "--disable-layer", "python", "--disable-layer", "landlock"]
    for seccomp_on in (True, False):
        s = Server(*off, *([] if seccomp_on else ["--disable-layer", "seccomp"]))
        try:
            st, _, v = s.exec(KERNEL_STATUS if seccomp_on else KERNEL_STATUS + KERNEL_PRCTL)
            assert st == 200, v
            _check_status(_line(v, "STATUS"), seccomp_on)
            if not seccomp_on:
                _check_prctl(_line(v, "PRCTL"))
        finally:
            s.stop()


def test_kernel_view_without_a_uid_change():
    """Changing uid makes the kernel clear dumpable by itself; without that change (identity
    off here, or a non-root host) only the nnp phase's PR_SET_DUMPABLE does."""
    verdict, rc, err = run_exec(KERNEL_PRCTL, *disable_all_but(["namespaces"]))
    assert rc == 0, err
    pr = _line(verdict, "PRCTL")
    assert pr["dumpable"] == 0 and pr["nnp"] == 1, pr


def test_unprivileged_kernel_view(nobody_pysnip):
    verdict = run_as_nobody(nobody_pysnip, KERNEL_PRCTL, *disable_all_but(["identity"]))
    pr = _line(verdict, "PRCTL")
    # nobody never had a capability to drop; what matters is that none can come back
    assert pr["dumpable"] == 0 and pr["nnp"] == 1, pr
