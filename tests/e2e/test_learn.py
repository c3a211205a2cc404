"""`pysnip learn`: the snippet runs with the seccomp filter reporting (user notification)
instead of killing, and a policy extending BASE with what it needed is printed.

Each test checks the learned policy against what the snippet did, then runs the snippet
again under it (`pysnip exec`): no denial. The positive/negative pair: the same snippet under
BASE alone is denied, naming what was learned. What no policy may grant is warned about and
never added; while learning, such a call fails with EPERM instead of running.
"""
import json
import os
import subprocess

import pytest

from conftest import PYSNIP, ROOT, run_exec

PYTHON_OFF = ["--disable-layer", "python"]


def log_mode_unavailable():
    """Why `--via log` cannot run here, or None: it reads the kernel's audit records."""
    try:
        with open("/dev/kmsg", "rb"):
            pass
    except OSError as e:
        return "learn --via log reads /dev/kmsg: %s (root, or kernel.dmesg_restrict=0)" % e
    with open("/proc/sys/kernel/seccomp/actions_logged") as f:
        logged = f.read().split()
    if "log" not in logged or "errno" not in logged:
        return "kernel.seccomp.actions_logged lacks log or errno: %s" % logged
    return None


# Both ways of learning: user notification (the default), and SCMP_ACT_LOG with the kernel's
# audit records (the fallback where notification is refused; forced here with --via log).
VIA = [pytest.param([], id="notify"),
       pytest.param(["--via", "log"], id="log",
                    marks=pytest.mark.skipif(bool(log_mode_unavailable()),
                                             reason=str(log_mode_unavailable())))]


def learn(code, *args, timeout=120):
    p = subprocess.run([PYSNIP, "learn"] + list(args) + ["-"], input=code.encode(),
                       capture_output=True, timeout=timeout)
    err = p.stderr.decode()
    assert p.returncode == 0, err
    return json.loads(p.stdout), err


def save(tmp_path, policy, name="learned.json"):
    path = tmp_path / name
    path.write_text(json.dumps(policy))
    return str(path)


NATIVE_UNUSUAL = (
    "import ctypes, os\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.syscall.restype = ctypes.c_long\n"
    "cpu, node = ctypes.c_uint(), ctypes.c_uint()\n"
    "rc = libc.syscall(309, ctypes.byref(cpu), ctypes.byref(node), None)  # getcpu\n"
    "print('getcpu', rc, flush=True)\n"
    "print('prio', libc.syscall(140, 0, 0), flush=True)                   # getpriority\n")


@pytest.mark.parametrize("via", VIA)
def test_native_code_unusual_syscalls_are_learned(tmp_path, via):
    # Negative control: under BASE the filter kills on the first of them.
    verdict, rc, err = run_exec(NATIVE_UNUSUAL, *PYTHON_OFF)
    assert rc == 0, err
    assert verdict["status"] == "denied" and verdict["denials"][0]["event"] == "getcpu"
    policy, err = learn(NATIVE_UNUSUAL, *PYTHON_OFF, *via)
    assert policy["extends"] == "default"
    assert sorted(policy["seccomp"]["allow"]) == ["getcpu", "getpriority"]
    assert set(policy) == {"extends", "description", "seccomp"}   # nothing else widened
    assert "learned 2 syscall(s)" in err
    verdict, rc, err = run_exec(NATIVE_UNUSUAL, "--policy", save(tmp_path, policy), *PYTHON_OFF)
    assert rc == 0, err
    assert verdict["status"] == "ok" and verdict["denials"] == [], verdict
    assert "getcpu 0\n" in verdict["stdout"] and "prio " in verdict["stdout"]


def test_learning_run_let_the_calls_through():
    # While learning, an unlisted call goes on (SECCOMP_USER_NOTIF_FLAG_CONTINUE): the round
    # ends ok, which it could not if the call had been denied.
    p = subprocess.run([PYSNIP, "learn", "--disable-layer", "python", "-"],
                       input=(NATIVE_UNUSUAL + "assert rc == 0, rc\n").encode(),
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "the last ended 'ok'" in p.stderr.decode()


SOCKET_NATIVE = ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                 "fd = libc.socket(2, 1, 0)\n"
                 "print('socket', fd, ctypes.get_errno(), flush=True)\n")


@pytest.mark.parametrize("via", VIA)
def test_socket_is_warned_about_never_added(tmp_path, via):
    policy, err = learn(SOCKET_NATIVE, *PYTHON_OFF, *via)
    assert "socket" not in json.dumps(policy.get("seccomp", {}))
    assert "warning: syscall socket: pysnip never allows it" in err
    # It did not run while learning: it failed with EPERM (1), no descriptor was made.
    assert "the last ended 'ok'" in err
    # And under the printed policy the filter still kills on it.
    verdict, rc, e = run_exec(SOCKET_NATIVE, "--policy", save(tmp_path, policy), *PYTHON_OFF)
    assert verdict["status"] == "denied" and verdict["denials"][0]["event"] == "socket"


def test_socket_through_python_is_a_dangerous_module():
    policy, err = learn("import socket\nsocket.socket()\n")
    assert "modules" not in policy
    assert "warning: import of 'socket': a dangerous module; not added" in err


def test_socket_never_runs_while_learning():
    code = SOCKET_NATIVE + "assert fd == -1 and ctypes.get_errno() == 1\nprint('refused')\n"
    p = subprocess.run([PYSNIP, "learn", "--disable-layer", "python", "-"], input=code.encode(),
                       capture_output=True, timeout=120)
    assert p.returncode == 0 and "the last ended 'ok'" in p.stderr.decode(), p.stderr


def test_ioctl_outside_the_check_is_refused():
    code = ("import ctypes, termios\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "c = ctypes.c_char(b'x')\n"
            "rc = libc.ioctl(0, termios.TIOCSTI, ctypes.byref(c))\n"
            "assert rc == -1 and ctypes.get_errno() == 1, (rc, ctypes.get_errno())\n")
    policy, err = learn(code, *PYTHON_OFF)
    assert "ioctl" not in json.dumps(policy)
    assert "syscall ioctl: called with arguments outside pysnip's own check" in err
    assert "the last ended 'ok'" in err


PY_NEEDS = ("print(open('/etc/hostname').read().strip() != '')\n"
            "import os\nprint(len(os.listdir('/etc')) > 0)\n"
            "import threading\nt = threading.Thread(target=print, args=('thread',))\n"
            "t.start()\nt.join()\n")


@pytest.mark.parametrize("via", VIA)
def test_python_layer_refusals_are_learned(tmp_path, via):
    verdict, rc, err = run_exec(PY_NEEDS)
    assert verdict["status"] == "denied" and verdict["denials"][0]["layer"] == "audit"
    policy, err = learn(PY_NEEDS, *via)
    assert sorted(policy["filesystem"]["read"]) == ["/etc", "/etc/hostname"]
    assert policy["modules"]["allow"] == ["threading"]
    assert policy["seccomp"]["threads"] is True and policy["limits"]["processes"] >= 2
    assert "write" not in policy["filesystem"]
    verdict, rc, err = run_exec(PY_NEEDS, "--policy", save(tmp_path, policy))
    assert rc == 0, err
    assert verdict["status"] == "ok" and verdict["denials"] == [], verdict
    assert verdict["stdout"] == "True\nTrue\nthread\n"


def test_base_with_a_parent_prints_a_whole_policy(tmp_path):
    code = "import os\nprint(os.sched_getscheduler(0))\n"
    policy, err = learn(code, "--policy", "notebook")
    assert "extends" not in policy and "whole, not a child" in err
    assert policy["seccomp"]["allow"] == ["sched_getscheduler"]
    assert policy["limits"]["processes"] == 16    # notebook's own, kept
    verdict, rc, e = run_exec(code, "--policy", save(tmp_path, policy))
    assert verdict["status"] == "ok" and verdict["denials"] == [], verdict


def test_nothing_needed_learns_nothing():
    policy, err = learn("print(sum(range(10)))\n")
    assert policy == {"extends": "default",
                      "description": "learned by pysnip learn: review before use"}
    assert "1 round(s)" in err


def test_bad_input():
    p = subprocess.run([PYSNIP, "learn", "--via", "strace", "-"], input=b"print(1)",
                       capture_output=True, timeout=60)
    assert p.returncode == 1 and b"--via: 'strace' is not notify or log" in p.stderr
    p = subprocess.run([PYSNIP, "learn", "--policy", "nonesuch", "-"], input=b"print(1)",
                       capture_output=True, timeout=60)
    assert p.returncode == 1 and b"nonesuch" in p.stderr
    p = subprocess.run([PYSNIP, "learn"], capture_output=True, timeout=60)
    assert p.returncode == 1 and b"learn: missing FILE" in p.stderr


SCIENTIFIC = os.path.join(ROOT, "policies", "scientific.json")
NUMPY = ("import numpy as np\na = np.arange(12).reshape(3, 4)\n"
         "print(int(a.sum()), round(float(np.linalg.det(np.eye(3))), 3))\n")


def group_members():
    """{group: [syscalls]} from the C table, the one the filter uses."""
    import re
    src = open(os.path.join(ROOT, "host", "sandbox", "syscall_groups.c")).read()
    body = src[src.index("ps_syscall_groups[] = {"):src.index("ps_syscall_groups_count")]
    out = {}
    # a help string may be several literals in a row
    for m in re.finditer(r'\{ "(@[a-z-]+)",\s*(?:"[^"]*"\s*)+,\s*SYSCALLS\(([^)]*)\)', body):
        out[m.group(1)] = re.findall(r'"([a-z0-9_]+)"', m.group(2))
    return out


def syscalls_of(seccomp, groups):
    return set(seccomp.get("allow", [])) | {s for g in seccomp.get("groups", [])
                                            for s in groups[g]}


@pytest.mark.skipif(not os.path.exists(SCIENTIFIC),
                    reason="policies/scientific.json is not in this tree yet (branch "
                           "'scientific'): nothing to compare the learned policy with")
def test_numpy_learned_against_scientific(tmp_path):
    """Learn numpy from the scientific policy with its syscall grants taken out: what is
    learned must be among what scientific grants; what scientific grants beyond that is
    printed (numpy's test snippet did not need it)."""
    groups = group_members()
    sci = json.loads(subprocess.run([PYSNIP, "check-policy", "scientific"],
                                    capture_output=True, check=True).stdout)
    default = json.loads(subprocess.run([PYSNIP, "check-policy", "default"],
                                        capture_output=True, check=True).stdout)
    granted = syscalls_of(sci["seccomp"], groups) - syscalls_of(default["seccomp"], groups)
    # check-policy also reports what the libraries load ("libraries": not a policy key)
    base = {k: v for k, v in sci.items() if k not in ("name", "path", "extends", "libraries")}
    if base.get("description") is None:
        base.pop("description", None)
    base["seccomp"] = dict(sci["seccomp"], allow=[], groups=default["seccomp"]["groups"])
    base_path = save(tmp_path, base, "sci-base.json")
    policy, err = learn(NUMPY, "--policy", base_path)
    learned = syscalls_of(policy.get("seccomp", {}), groups) - syscalls_of(base["seccomp"],
                                                                            groups)
    if policy.get("seccomp", {}).get("threads"):
        learned -= set(groups["@threads"])
    assert learned <= granted, ("learned beyond what scientific grants", learned - granted, err)
    print("scientific grants, numpy's snippet did not use:", sorted(granted - learned))
    verdict, rc, e = run_exec(NUMPY, "--policy", save(tmp_path, policy))
    assert rc == 0, e
    assert verdict["status"] == "ok" and verdict["denials"] == [], verdict
    assert verdict["stdout"] == "66 1.0\n"


def children(pid):
    out = []
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def test_killed_learn_leaves_no_process():
    import signal
    import time
    # notebook: a 30 s wall clock, so only the kill can end the run within the test
    p = subprocess.Popen([PYSNIP, "learn", "--policy", "notebook", "-"], stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    p.stdin.write(b"while True: pass\n")
    p.stdin.close()
    tree, deadline = [], time.time() + 10
    while time.time() < deadline and len(tree) < 2:   # the runner and its worker at least
        tree, todo = [], children(p.pid)
        while todo:
            c = todo.pop()
            tree.append(c)
            todo += children(c)
        time.sleep(0.02)
    assert len(tree) >= 2, tree
    p.send_signal(signal.SIGKILL)
    p.wait()
    deadline = time.time() + 5
    while time.time() < deadline and any(os.path.exists("/proc/%d" % c) for c in tree):
        time.sleep(0.05)
    left = [c for c in tree if os.path.exists("/proc/%d" % c)]
    assert not left, left


def test_file_and_stdin(tmp_path):
    snippet = tmp_path / "s.py"
    snippet.write_text("import os\nname = input()\nprint(name, os.sched_getscheduler(0))\n")
    data = tmp_path / "in.txt"
    data.write_text("abc\n")
    p = subprocess.run([PYSNIP, "learn", "--stdin", str(data), str(snippet)],
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["seccomp"]["allow"] == ["sched_getscheduler"]
    # Without the data the snippet ends at input() (EOFError) before the syscall: nothing
    # to learn, which shows the data reached it.
    p = subprocess.run([PYSNIP, "learn", str(snippet)], capture_output=True, timeout=120)
    assert p.returncode == 0 and "seccomp" not in json.loads(p.stdout), p.stdout
    assert b"the last ended 'exception'" in p.stderr


# Every syscall of @time, raw (the vDSO would answer clock_gettime without one).
ALL_OF_TIME = (
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.syscall.restype = ctypes.c_long\n"
    "ts = (ctypes.c_long * 2)(0, 1000)\nbuf = (ctypes.c_long * 8)()\n"
    "calls = [(229, 1, buf), (228, 1, buf), (230, 1, 0, ts, 0), (96, buf, 0), (35, ts, 0),\n"
    "         (201, 0), (100, buf)]   # getres gettime nanosleep(clock) gettimeofday ...\n"
    "print([libc.syscall(*c) >= 0 for c in calls])\n")


def test_a_whole_group_is_learned_as_the_group(tmp_path):
    groups = ["@python-runtime", "@basic-io", "@memory", "@signals", "@fs-read",
              "@fs-write", "@process-info"]                # the default's, less @time
    base = save(tmp_path, {"seccomp": {"groups": groups}}, "no-time.json")   # built-in defaults
    policy, err = learn(ALL_OF_TIME + "import os\nos.sched_getscheduler(0)\n", "--policy", base,
                        *PYTHON_OFF)
    assert policy["extends"] == "no-time"
    assert policy["seccomp"]["groups"] == groups + ["@time"]
    assert policy["seccomp"]["allow"] == ["sched_getscheduler"]   # a single one stays single
    verdict, rc, e = run_exec(ALL_OF_TIME, "--policy", save(tmp_path, policy), *PYTHON_OFF)
    assert verdict["status"] == "ok" and verdict["denials"] == [], verdict
    assert verdict["stdout"] == "[True, True, True, True, True, True, True]\n"


LANDLOCK_PROBE = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                  "fd = libc.open(b'/etc/hostname', os.O_RDONLY)\n"
                  "assert fd == -1 and ctypes.get_errno() == 13, (fd, ctypes.get_errno())\n")


def test_the_other_layers_hold_while_learning():
    # Landlock refuses a read outside the grants while the filter only reports...
    policy, err = learn(LANDLOCK_PROBE, *PYTHON_OFF)
    assert "the last ended 'ok'" in err, err
    assert "filesystem" not in policy    # a kernel refusal is not learned
    # ...and that is Landlock's doing: without it the same open succeeds.
    policy, err = learn(LANDLOCK_PROBE, *PYTHON_OFF, "--disable-layer", "landlock")
    assert "the last ended 'exception'" in err, err
