"""Docker/OCI seccomp profiles: read as runc reads them, run for real, pysnip's floor on top.

Fixtures in tests/fixtures/seccomp/: Docker's own default profile (moby/profiles, Apache-2.0,
see the README there), and small profiles of ours: pysnip-default.json (what the default
policy's groups allow, as a profile; the positive control), no-write.json (the same without
write), openat-readonly.json (openat only when flags & O_ACCMODE == O_RDONLY), kill-thread.json
(default SCMP_ACT_KILL, threads allowed).
"""
import json
import os

import pytest

from conftest import FIXTURES, run_exec, run_pysnip

SECCOMP = os.path.join(FIXTURES, "seccomp")
DOCKER = os.path.join(SECCOMP, "docker-default-seccomp.json")
PROFILE_POLICIES = os.path.join(FIXTURES, "policies", "profile")
OTHERS_OFF = ["--disable-layer", "python", "--disable-layer", "identity", "--disable-layer",
              "landlock", "--disable-layer", "namespaces"]


def save_json(path, doc):
    path.write_text(json.dumps(doc))
    return str(path)


def profile(name):
    return os.path.join(SECCOMP, name)


def check(*args):
    p = run_pysnip(["check-policy"] + list(args))
    return p.returncode, p.stdout.decode(), p.stderr.decode()


# ---- Docker's default profile ----

def test_docker_default_validates_with_unknown_names_as_a_warning():
    rc, out, err = check("--seccomp-profile", DOCKER)
    assert rc == 0, err
    rep = json.loads(out)["seccomp_profile"]
    assert json.loads(out)["seccomp"]["groups"] == []   # the profile is the allowlist
    # What Docker allows and pysnip never does is listed as overridden, each with its entry.
    over = "\n".join(rep["overridden"])
    for name in ("ptrace", "socket", "fork", "execve", "personality", "setuid", "tkill"):
        assert f"{name} (syscalls[" in over and "never allowed by pysnip" in over, name
    assert "ioctl (syscalls[0]): narrowed to TCGETS" in over
    assert "architecture SCMP_ARCH_X86: not added" in over
    assert "architecture SCMP_ARCH_X32: not added" in over
    # Entries for capabilities the worker does not hold, or for other arches, do not apply.
    assert rep["entries_not_for_this_host"] > 0 and rep["entries"] > 0
    # 32-bit-only names are not unknown: they are other architectures' syscalls.
    assert "chown32" in rep["other_architectures"]
    assert "chown32" not in rep["unknown_syscalls"]
    # Names this libseccomp does not know: warned about, listed, run without them (as runc).
    if rep["unknown_syscalls"]:
        assert "warning:" in err and "unknown syscalls, ignored" in err
        for name in rep["unknown_syscalls"]:
            assert name in err


def test_docker_default_strict_makes_unknown_names_an_error():
    rc, out, err = check("--seccomp-profile", DOCKER)
    unknown = json.loads(out)["seccomp_profile"]["unknown_syscalls"]
    if not unknown:
        pytest.skip("this libseccomp knows every name in Docker's profile: nothing to refuse")
    rc, out, err = check("--strict", "--seccomp-profile", DOCKER)
    assert rc == 1 and not out
    assert "(--strict)" in err and unknown[0] in err
    # A profile with only known names passes --strict.
    rc, out, err = check("--strict", "--seccomp-profile", profile("pysnip-default.json"))
    assert rc == 0, err


SNIPPETS = {
    "hello": "print('hello')\n",
    "arith": "print(sum(i * i for i in range(1000)), 2 ** 100, 7 / 3)\n",
    "stdlib": ("import json, re, collections, datetime, decimal, fractions, itertools, math\n"
               "print(json.dumps(collections.Counter('abca')), re.sub('a', 'b', 'aa'),\n"
               "      decimal.Decimal('1.1') + 1, fractions.Fraction(1, 3), math.pi)\n"),
    "random": "import random\nrandom.seed(1)\nprint(random.randint(0, 10 ** 9))\n",
    "exception": "def f():\n    raise ValueError('boom')\nf()\n",
    "exit": "import sys\nprint('x')\nsys.exit(3)\n",
    "scratch_file": ("open('out.txt', 'w').write('data')\n"
                     "print(open('out.txt').read(), __import__('os').listdir('.'))\n"),
    "stdin": "print(input()[::-1])\n",
    "denied_open": "open('/etc/shadow')\n",
    "big_output": "print('x' * 100000)\n",
}


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_docker_default_runs_the_default_snippets(name):
    """Same outcome under Docker's profile as under the default policy's own allowlist."""
    want, rc0, err0 = run_exec(SNIPPETS[name], stdin="abc\n")
    got, rc, err = run_exec(SNIPPETS[name], "--policy", os.path.join(PROFILE_POLICIES,
                                                                    "docker.json"),
                            stdin="abc\n")
    assert rc == rc0 == 0, err
    assert got["policy"] == "docker"
    for key in ("status", "stdout", "exit_code", "signal"):
        assert got[key] == want[key], (key, got, want)
    assert (got["exception"] or {}).get("type") == (want["exception"] or {}).get("type")
    assert got["sandbox"]["seccomp"] == "kill"


# Docker allows these; pysnip's floor must still kill on them, and name them. Raw syscalls
# through ctypes, so only the filter stands in the way (every other layer off).
FLOOR = {
    "fork": "libc.syscall(57)",
    "socket": "libc.syscall(41, 2, 1, 0)",
    "ptrace": "libc.syscall(101, 0, 0, 0, 0)",       # PTRACE_TRACEME
    "personality": "libc.syscall(135, 0xffffffff)",  # a query: Docker allows exactly this
    "setuid": "libc.syscall(105, os.getuid())",
    "socketpair": "libc.syscall(53, 1, 1, 0, ctypes.byref((ctypes.c_int * 2)()))",
}
FLOOR_PRELUDE = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                 "libc.syscall.restype = ctypes.c_long\n")


@pytest.mark.parametrize("name", sorted(FLOOR))
def test_floor_holds_under_docker_default(name):
    code = FLOOR_PRELUDE + f"rc = {FLOOR[name]}\nprint('RC', rc, ctypes.get_errno(), flush=True)\n"
    verdict, rc, err = run_exec(code, "--seccomp-profile", DOCKER, *OTHERS_OFF)
    assert rc == 0, err
    assert verdict["status"] == "denied", verdict
    assert verdict["denials"][0]["layer"] == "seccomp"
    assert verdict["denials"][0]["event"] == name
    assert "RC" not in verdict["stdout"]
    # Positive control: the same call with the filter off reaches the kernel.
    verdict, rc, err = run_exec(code, *OTHERS_OFF, "--disable-layer", "seccomp")
    assert rc == 0, err
    assert "RC" in verdict["stdout"], verdict


def test_docker_errno_default_fails_calls_it_does_not_name():
    # Not in Docker's list and not on pysnip's never list: the profile's default (EPERM) applies.
    code = FLOOR_PRELUDE + ("rc = libc.syscall(139, 0, 0)\n"   # sysfs(0): not listed by Docker
                            "print('RC', rc, ctypes.get_errno(), flush=True)\n")
    verdict, rc, err = run_exec(code, "--seccomp-profile", DOCKER, *OTHERS_OFF)
    assert rc == 0, err
    assert verdict["status"] == "ok", verdict
    assert "RC -1 1\n" in verdict["stdout"]


# ---- our own profiles: a denial, an argument filter, the kill's scope ----

def test_profile_without_write_kills_naming_write():
    verdict, rc, err = run_exec("print('hello')\n", "--policy",
                                os.path.join(PROFILE_POLICIES, "no-write.json"))
    assert rc == 0, err
    assert verdict["status"] == "denied", verdict
    assert verdict["signal_name"] == "SIGSYS"
    assert verdict["denials"][0] == {**verdict["denials"][0], "layer": "seccomp",
                                      "event": "write"}
    assert verdict["stdout"] == ""
    # Positive control: the same allowlist with write in it.
    verdict, rc, err = run_exec("print('hello')\n", "--seccomp-profile",
                                profile("pysnip-default.json"))
    assert rc == 0, err
    assert verdict["status"] == "ok" and verdict["stdout"] == "hello\n", verdict


def test_profile_without_write_alone():
    verdict, rc, err = run_exec("print('hello')\n", "--seccomp-profile", profile("no-write.json"),
                                *OTHERS_OFF)
    assert rc == 0, err
    assert verdict["status"] == "denied" and verdict["denials"][0]["event"] == "write"


RO_THEN_WRITE = ("print(len(open('/usr/lib/python3.11/os.py').read()) > 0, flush=True)\n"
                 "open('new.txt', 'w').write('x')\nprint('WROTE', flush=True)\n")


def test_argument_filter_openat_read_only():
    verdict, rc, err = run_exec(RO_THEN_WRITE, "--seccomp-profile",
                                profile("openat-readonly.json"))
    assert rc == 0, err
    # The read-only open went through (flags & O_ACCMODE == O_RDONLY), the write open did not.
    assert verdict["stdout"] == "True\n", verdict
    assert verdict["status"] == "denied"
    assert verdict["denials"][0]["event"] == "openat"
    # Positive control: openat without the argument filter lets both through.
    verdict, rc, err = run_exec(RO_THEN_WRITE, "--seccomp-profile", profile("pysnip-default.json"))
    assert rc == 0, err
    assert verdict["status"] == "ok" and verdict["stdout"] == "True\nWROTE\n", verdict


def test_argument_filter_reads_the_third_argument_alone():
    # Raw openat: flags are its third argument (index 2). O_RDONLY passes; O_WRONLY, and O_RDWR
    # with O_RDONLY's value in the second argument's place, do not.
    code = FLOOR_PRELUDE + (
        "fd = libc.syscall(257, -100, b'/etc/hostname', os.O_RDONLY | os.O_CLOEXEC)\n"
        "print('RO', fd >= 0, flush=True)\n"
        "fd = libc.syscall(257, -100, b'w.txt', os.O_WRONLY | os.O_CREAT, 0o600)\n"
        "print('WO', fd, flush=True)\n")
    verdict, rc, err = run_exec(code, "--seccomp-profile", profile("openat-readonly.json"),
                                *OTHERS_OFF)
    assert rc == 0, err
    assert verdict["stdout"] == "RO True\n", verdict
    assert verdict["status"] == "denied" and verdict["denials"][0]["event"] == "openat"
    verdict, rc, err = run_exec(code, "--seccomp-profile", profile("pysnip-default.json"),
                                *OTHERS_OFF)
    assert rc == 0, err
    assert "RO True\nWO " in verdict["stdout"] and verdict["status"] == "ok", verdict


THREAD_DENIED = ("import os, threading\n"
                 "t = threading.Thread(target=lambda: os.sched_getscheduler(0))\n"
                 "t.start()\nt.join()\nprint('SURVIVED', flush=True)\n")


def test_scmp_act_kill_kills_the_process_not_the_thread():
    policy = os.path.join(PROFILE_POLICIES, "notebook-kill.json")
    verdict, rc, err = run_exec(THREAD_DENIED, "--policy", policy)
    assert rc == 0, err
    assert verdict["status"] == "denied", verdict
    assert verdict["signal_name"] == "SIGSYS"
    assert "SURVIVED" not in verdict["stdout"]
    assert verdict["denials"][0]["event"] == "sched_getscheduler"
    # Positive control: threads themselves run under that profile.
    verdict, rc, err = run_exec(THREAD_DENIED.replace("os.sched_getscheduler(0)", "None"),
                                "--policy", policy)
    assert rc == 0, err
    assert verdict["status"] == "ok" and verdict["stdout"] == "SURVIVED\n", verdict


# ---- bad profiles: an error naming the JSON path ----

def allow_all(**over):
    p = {"defaultAction": "SCMP_ACT_ERRNO",
         "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ALLOW"}]}
    p.update(over)
    return p


def rule(**fields):
    r = {"names": ["openat"], "action": "SCMP_ACT_ALLOW"}
    r.update(fields)
    return allow_all(syscalls=[{"names": ["read"], "action": "SCMP_ACT_ALLOW"}, r])


BAD = [
    ("unknown_action", allow_all(defaultAction="SCMP_ACT_MAYBE"),
     "defaultAction: unknown action 'SCMP_ACT_MAYBE'"),
    ("rule_action", rule(action="ALLOW"), "syscalls[1].action: unknown action 'ALLOW'"),
    ("notify", rule(action="SCMP_ACT_NOTIFY"), "syscalls[1].action: SCMP_ACT_NOTIFY needs"),
    ("unknown_op", rule(args=[{"index": 0, "value": 1, "op": "SCMP_CMP_SORTA"}]),
     "syscalls[1].args[0].op: unknown op 'SCMP_CMP_SORTA'"),
    ("index_6", rule(args=[{"index": 6, "value": 1, "op": "SCMP_CMP_EQ"}]),
     "syscalls[1].args[0].index: 6: a syscall has 6 arguments"),
    ("index_neg", rule(args=[{"index": -1, "value": 1, "op": "SCMP_CMP_EQ"}]),
     "syscalls[1].args[0].index"),
    ("value_huge", rule(args=[{"index": 0, "value": 2 ** 64, "op": "SCMP_CMP_EQ"}]),
     "syscalls[1].args[0].value"),
    ("value_1e300", rule(args=[{"index": 0, "value": 1e300, "op": "SCMP_CMP_EQ"}]),
     "syscalls[1].args[0].value: 1.0000000000000001e+300 is not a whole number from 0 to "
     "2^53"),   # found by fuzz_seccomp_profile (UB before the fix)
    ("errno_on_allow", rule(errnoRet=1), "syscalls[1].errnoRet: only SCMP_ACT_ERRNO takes"),
    ("default_errno_on_kill", allow_all(defaultAction="SCMP_ACT_KILL", defaultErrnoRet=1),
     "defaultErrnoRet: only SCMP_ACT_ERRNO takes an errno"),
    ("unknown_arch", allow_all(architectures=["SCMP_ARCH_Z80"]),
     "architectures[0]: unknown architecture 'SCMP_ARCH_Z80'"),
    ("archmap_arch", allow_all(archMap=[{"architecture": "SCMP_ARCH_X86_64",
                                         "subArchitectures": ["SCMP_ARCH_VAX"]}]),
     "archMap[0].subArchitectures[0]: unknown architecture 'SCMP_ARCH_VAX'"),
    ("includes_arch", rule(includes={"arches": ["pdp11"]}),
     "syscalls[1].includes.arches[0]: unknown architecture 'pdp11'"),
    ("includes_cap", rule(includes={"caps": ["CAP_EVERYTHING"]}),
     "syscalls[1].includes.caps[0]: unknown capability"),
    ("min_kernel", rule(includes={"minKernel": "four"}), "syscalls[1].includes.minKernel"),
    ("unknown_key", rule(nmes=["x"]), "syscalls[1].nmes: unknown key"),
    ("top_key", allow_all(defaultActoin="SCMP_ACT_ERRNO"), "defaultActoin: unknown key"),
    ("no_names", allow_all(syscalls=[{"action": "SCMP_ACT_ALLOW"}]),
     "syscalls[0]: no syscall"),
    ("empty_names", allow_all(syscalls=[{"names": [], "action": "SCMP_ACT_ALLOW"}]),
     "syscalls[0].names: empty"),   # found by fuzz_seccomp_profile
    ("flag", allow_all(flags=["SECCOMP_FILTER_FLAG_FAST"]), "flags[0]: unknown flag"),
    ("default_allow", allow_all(defaultAction="SCMP_ACT_ALLOW"),
     "defaultAction: 'SCMP_ACT_ALLOW' lets every syscall not named through"),
    ("no_default", {"syscalls": []}, "defaultAction: missing"),
    ("listener", allow_all(listenerPath="/run/agent.sock"), "listenerPath: needs a seccomp agent"),
]


@pytest.mark.parametrize("case", BAD, ids=[b[0] for b in BAD])
def test_bad_profile_is_an_error_naming_the_path(case, tmp_path):
    _, doc, want = case
    f = tmp_path / "p.json"
    f.write_text(json.dumps(doc))
    rc, out, err = check("--seccomp-profile", str(f))
    assert rc == 1 and not out, (out, err)
    assert f"profile {f}: {want}" in err, err
    assert "Traceback" not in err and "Sanitizer" not in err


def test_bad_json_and_missing_file(tmp_path):
    f = tmp_path / "p.json"
    f.write_text('{"defaultAction": ')
    rc, out, err = check("--seccomp-profile", str(f))
    assert rc == 1 and "invalid JSON near line 1" in err
    rc, out, err = check("--seccomp-profile", str(tmp_path / "absent.json"))
    assert rc == 1 and "cannot open" in err


def test_policy_names_a_profile_relative_to_itself(tmp_path):
    rc, out, err = check(os.path.join(PROFILE_POLICIES, "no-write.json"))
    assert rc == 0, err
    resolved = json.loads(out)
    assert resolved["seccomp"]["profile"].endswith("seccomp/no-write.json")
    assert os.path.exists(resolved["seccomp"]["profile"])
    assert resolved["seccomp"]["groups"] == []   # the parent's groups do not apply
    # check-policy's print is a policy of its own, loadable from anywhere (absolute path).
    assert os.path.isabs(resolved["seccomp"]["profile"])
    printed = {k: v for k, v in resolved.items()
               if k not in ("name", "path", "extends", "seccomp_profile")}
    printed["description"] = printed["description"] or "printed"
    rc, out2, err = check(save_json(tmp_path / "printed.json", printed))
    assert rc == 0, err
    assert json.loads(out2)["seccomp"] == resolved["seccomp"]
    # A broken profile named by a policy: the policy error names both files.
    (tmp_path / "bad.json").write_text(json.dumps(rule(errnoRet=1)))
    pol = tmp_path / "pol.json"
    pol.write_text(json.dumps({"seccomp": {"profile": "bad.json"}}))
    rc, out, err = check(str(pol))
    assert rc == 1
    assert (f"policy {pol}: field seccomp.profile: profile {tmp_path}/bad.json: "
            "syscalls[1].errnoRet") in err, err
    # Groups listed beside the profile are added to it.
    pol.write_text(json.dumps({"seccomp": {"profile": profile("no-write.json"),
                                           "groups": ["@basic-io"]}}))
    rc, out, err = check(str(pol))
    assert rc == 0 and json.loads(out)["seccomp"]["groups"] == ["@basic-io"], err
    verdict, rc, err = run_exec("print('hello')\n", "--policy", str(pol))
    assert verdict["status"] == "ok" and verdict["stdout"] == "hello\n", verdict


def test_profile_type_errors(tmp_path):
    pol = tmp_path / "pol.json"
    pol.write_text(json.dumps({"seccomp": {"profile": 3}}))
    rc, out, err = check(str(pol))
    assert rc == 1 and "field seccomp.profile: expected a profile file name or null" in err


def test_serve_runs_profile_policies():
    """A zygote builds the profile's filter once; its workers hold it like exec's."""
    from servekit import Server
    s = Server("--policy", ",".join(os.path.join(PROFILE_POLICIES, n)
                                    for n in ("docker.json", "no-write.json")),
               "--workers", "1")
    try:
        status, _, v = s.exec("print('served')", policy="docker")
        assert status == 200 and v["status"] == "ok" and v["stdout"] == "served\n", v
        status, _, v = s.exec("import os\nos.sched_getscheduler(0)\n", policy="docker")
        # Docker allows sched_getscheduler: the profile, not the default groups, decides.
        assert status == 200 and v["status"] == "ok", v
        status, _, v = s.exec("print('x')", policy="no-write")
        assert status == 200 and v["status"] == "denied", v
        assert v["denials"][0]["event"] == "write"
    finally:
        s.stop()


def test_a_profile_that_kills_sched_setscheduler_keeps_the_workers_exit(tmp_path):
    """A zygote's worker steps down to SCHED_IDLE once its report is out (worker.c) where the
    filter allows that; a profile that kills sched_setscheduler itself gets no such call: the
    run still ends ok, exec and served. The positive control is the same profile without
    that rule, and the snippet's own call to it is killed, naming it."""
    with open(profile("pysnip-default.json")) as f:
        doc = json.load(f)
    doc["syscalls"].append({"names": ["sched_setscheduler"], "action": "SCMP_ACT_KILL"})
    prof = save_json(tmp_path / "kills-sched.json", doc)
    pol = save_json(tmp_path / "killsched.json", {"extends": "default",
                                                  "seccomp": {"profile": prof}})
    v, rc, err = run_exec("print('exec')\n", "--policy", pol)
    assert rc == 0 and v["status"] == "ok" and v["stdout"] == "exec\n", (v, err)
    from servekit import Server
    s = Server("--policy", pol, "--workers", "1", "--disable-layer", "python")
    try:
        for _ in range(3):
            status, _, v = s.exec("print('served')")
            assert status == 200 and v["status"] == "ok" and v["stdout"] == "served\n", v
        status, _, v = s.exec("import ctypes\nctypes.CDLL(None).syscall(144, 0, 5, 0)\n")
    finally:
        s.stop()
    assert v["status"] == "denied" and v["denials"][0]["event"] == "sched_setscheduler", v


def test_with_server_the_option_is_refused():
    verdict, rc, err = run_exec("print(1)\n", "--server", "http://127.0.0.1:1",
                                "--seccomp-profile", profile("no-write.json"))
    assert rc == 1 and verdict is None
    assert "--seccomp-profile: with --server, the server's policies decide" in err


def test_docker_conditions_are_decided_for_this_worker(tmp_path):
    """No capability, x86-64 ("amd64"), the running kernel: which entries apply."""
    def entry(name, **cond):
        return dict({"names": [name], "action": "SCMP_ACT_ALLOW"}, **cond)
    doc = {"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [
        entry("read"),                                              # applies
        entry("getcpu", includes={"caps": ["CAP_SYS_ADMIN"]}),      # not ours: skipped
        entry("getpriority", excludes={"caps": ["CAP_SYS_ADMIN"]}),  # we hold none: applies
        entry("sched_getscheduler", includes={"arches": ["arm64"]}),  # skipped
        entry("sched_getparam", includes={"arches": ["amd64", "x32"]}),  # applies
        entry("sysinfo", excludes={"arches": ["amd64"]}),           # skipped
        entry("times", includes={"minKernel": "3.0"}),              # applies
        entry("uname", includes={"minKernel": "999.0"}),            # skipped
    ]}
    rc, out, err = check("--seccomp-profile", save_json(tmp_path / "c.json", doc))
    assert rc == 0, err
    rep = json.loads(out)["seccomp_profile"]
    assert (rep["entries"], rep["entries_not_for_this_host"]) == (4, 4)
    # And the filter agrees: the applied entries' syscalls run, the skipped ones fail (EPERM).
    code = ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "libc.syscall.restype = ctypes.c_long\nb = (ctypes.c_long * 64)()\n"
            "r = {n: libc.syscall(nr, *a) for n, nr, a in [('getcpu', 309, (b, b, None)),\n"
            " ('getpriority', 140, (0, 0)), ('sched_getscheduler', 145, (0,)),\n"
            " ('sched_getparam', 143, (0, b)), ('times', 100, (b,))]}\n"
            "print(sorted(n for n, v in r.items() if v >= 0))\n")
    full = json.load(open(profile("pysnip-default.json")))
    full["defaultAction"] = "SCMP_ACT_ERRNO"
    full["syscalls"][0]["names"] = [n for n in full["syscalls"][0]["names"]
                                    if n not in ("sysinfo", "uname", "times")]
    full["syscalls"] += doc["syscalls"][1:]
    verdict, rc, err = run_exec(code, "--seccomp-profile",
                                save_json(tmp_path / "f.json", full), *OTHERS_OFF)
    assert rc == 0, err
    assert verdict["stdout"] == "['getpriority', 'sched_getparam', 'times']\n", verdict
