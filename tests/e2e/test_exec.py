"""End-to-end: the real binary, `pysnip exec`, every status and the verdict's fields."""
import json
import os
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import FIXTURES, PYSNIP, ROOT, needs_rlimit_as, run_exec, run_pysnip

STATUSES = {"ok", "exception", "denied", "timeout", "cpu_limit", "memory_limit",
            "output_limit", "signal", "internal_error"}
TOP_KEYS = {"version", "status", "exit_code", "signal", "stdout", "stderr", "truncated",
            "exception", "denials", "usage", "limits", "sandbox"}


def check_schema(v):
    assert TOP_KEYS <= set(v), TOP_KEYS - set(v)
    assert v["version"] == 1
    assert v["status"] in STATUSES
    assert set(v["usage"]) >= {"wall_ms", "cpu_ms", "user_ms", "sys_ms", "max_rss_kb"}
    assert isinstance(v["denials"], list)


# --- statuses -------------------------------------------------------------------------

def test_ok_hello():
    v, rc, _ = run_exec(open(os.path.join(ROOT, "examples", "hello.py")).read())
    check_schema(v)
    assert rc == 0
    assert v["status"] == "ok"
    assert v["exit_code"] == 0 and v["signal"] is None
    assert v["stdout"] == "hello from pysnip: sqrt(2) = 1.414214\n"
    assert v["exception"] is None and v["denials"] == []
    assert v["usage"]["wall_ms"] > 0 and v["usage"]["max_rss_kb"] > 0


def test_exec_file_argument(tmp_path):
    f = tmp_path / "code.py"
    f.write_text("print(6 * 7)\n")
    p = run_pysnip(["exec", str(f)])
    assert p.returncode == 0, p.stderr
    v = json.loads(p.stdout)
    assert v["status"] == "ok" and v["stdout"] == "42\n"


def test_exception_structured_with_snippet_frames_only():
    code = "def f(x):\n    return 1 / x\n\nprint('before')\nf(0)\n"
    v, rc, _ = run_exec(code)
    assert rc == 0
    assert v["status"] == "exception"
    e = v["exception"]
    assert e["type"] == "ZeroDivisionError"
    assert "division by zero" in e["message"]
    frames = e["traceback"]
    assert [f["line"] for f in frames] == [5, 2]
    assert [f["function"] for f in frames] == ["<module>", "f"]
    assert all(f["file"] == "<snippet>" for f in frames)
    assert frames[1]["text"] == "return 1 / x"
    assert v["stdout"] == "before\n"


def test_syntax_error_reports_line():
    v, rc, _ = run_exec("x = 1\ny = (\n")
    assert rc == 0
    assert v["status"] == "exception"
    assert v["exception"]["type"] == "SyntaxError"
    assert v["exception"]["traceback"] == [] or v["exception"]["traceback"][0]["line"] >= 2


def test_system_exit_code_is_not_an_exception():
    v, rc, _ = run_exec("import sys\nprint('x')\nsys.exit(3)\n")
    assert rc == 0
    assert v["status"] == "ok"
    assert v["exit_code"] == 3
    assert v["stdout"] == "x\n"


def test_timeout_kills_at_the_wall_clock():
    v, rc, _ = run_exec("import time\nprint('start', flush=True)\ntime.sleep(30)\n",
                        "--wall-time", "500ms")
    assert rc == 0
    assert v["status"] == "timeout"
    assert v["signal"] == signal.SIGKILL
    assert 400 <= v["usage"]["wall_ms"] < 5000
    assert v["stdout"] == "start\n"


def test_cpu_limit():
    v, rc, _ = run_exec("while True:\n    pass\n", "--cpu-time", "1s", "--wall-time", "10s")
    assert rc == 0
    assert v["status"] == "cpu_limit", v
    # the clock RLIMIT_CPU counts, read before the reap: the kill comes within a tick or two
    # of the limit (rusage's cpu_ms, the precise runtime, may read 5-15% under it)
    assert 1000 <= v["usage"]["cpu_clock_ms"] < 1050, v["usage"]


@needs_rlimit_as
def test_memory_limit_python_memoryerror():
    v, rc, _ = run_exec("x = bytearray(512 * 1024 * 1024)\n", "--memory", "128M")
    assert rc == 0
    assert v["status"] == "memory_limit", v


@needs_rlimit_as
def test_memory_limit_gradual_growth():
    code = "l = []\nwhile True:\n    l.append('x' * 1000000)\n"
    v, rc, _ = run_exec(code, "--memory", "128M", "--wall-time", "20s")
    assert rc == 0
    assert v["status"] == "memory_limit", v


def test_memory_positive_control():
    v, rc, _ = run_exec("x = bytearray(32 * 1024 * 1024)\nprint(len(x))\n", "--memory", "256M")
    assert v["status"] == "ok", v
    assert v["stdout"] == str(32 * 1024 * 1024) + "\n"


def test_output_limit_truncates_and_kills():
    v, rc, _ = run_exec("while True:\n    print('x' * 1000)\n", "--output-limit", "64K")
    assert rc == 0
    assert v["status"] == "output_limit"
    assert v["truncated"] is True
    assert len(v["stdout"].encode()) + len(v["stderr"].encode()) <= 64 * 1024
    assert len(v["stdout"]) > 60000


def test_output_under_limit_not_truncated():
    v, _, _ = run_exec("print('y' * 1000)\n", "--output-limit", "64K")
    assert v["status"] == "ok" and v["truncated"] is False


def test_signal_status():
    # A snippet ended by a signal that is no sandbox layer's: abort() via os.abort.
    v, rc, _ = run_exec("import os\nos.abort()\n")
    assert rc == 0
    assert v["status"] == "signal", v
    assert v["signal"] == signal.SIGABRT


def test_denied_by_python_layer():
    v, rc, _ = run_exec("open('/etc/shadow').read()\n")
    assert rc == 0
    assert v["status"] == "denied"
    d = v["denials"][0]
    assert d["layer"] in ("audit", "landlock")
    assert d["line"] in (1, None)


def test_internal_error_when_the_host_cannot_make_scratch(tmp_path):
    # The host's own failure (no place for the run's scratch directory): internal_error,
    # exit 2, and the message names the call.
    env = dict(os.environ, TMPDIR=str(tmp_path / "missing"))
    p = subprocess.run([PYSNIP, "exec", "-"], input=b"print('must not run')\n",
                       capture_output=True, env=env, timeout=60)
    assert p.returncode == 2, p.stderr
    v = json.loads(p.stdout)
    assert v["status"] == "internal_error"
    assert "mkdtemp" in v["error"] and str(tmp_path / "missing") in v["error"]
    assert "must not run" not in v["stdout"]


# --- data in and out ------------------------------------------------------------------

def test_stdin_is_the_snippets_sys_stdin():
    code = "import sys\ndata = sys.stdin.read()\nprint(len(data), data.upper())\n"
    v, _, _ = run_exec(code, stdin="abc\ndef\n")
    assert v["status"] == "ok"
    assert v["stdout"] == "8 ABC\nDEF\n\n"


def test_large_stdin():
    data = ("0123456789" * 100000 + "\n") * 3
    v, _, _ = run_exec("import sys\nprint(len(sys.stdin.read()))\n", stdin=data)
    assert v["status"] == "ok", v
    assert v["stdout"] == "%d\n" % len(data)


def test_no_stdin_reads_eof():
    v, _, _ = run_exec("import sys\nprint(repr(sys.stdin.read()))\n")
    assert v["stdout"] == "''\n"


def test_unicode_output():
    v, _, _ = run_exec("print('héllo wörld ✓ 😀 日本')\n")
    assert v["stdout"] == "héllo wörld ✓ 😀 日本\n"


def test_invalid_utf8_output_escaped_not_dropped():
    code = "import sys\nsys.stdout.buffer.write(b'a\\xff\\xfeb\\x00c\\n')\n"
    v, _, _ = run_exec(code)
    assert v["status"] == "ok"
    raw = v["stdout"].encode("utf-8", "surrogateescape")
    assert raw == b"a\xff\xfeb\x00c\n"


def test_stderr_captured_separately():
    v, _, _ = run_exec("import sys\nprint('out')\nprint('err', file=sys.stderr)\n")
    assert v["stdout"] == "out\n" and v["stderr"] == "err\n"


def test_fake_verdict_on_stdout_is_just_output():
    fake = json.dumps({"version": 1, "status": "ok", "exit_code": 0})
    code = "import sys\nprint(%r)\nsys.stdout.flush()\nraise ValueError('real')\n" % fake
    v, rc, _ = run_exec(code)
    assert rc == 0
    assert v["status"] == "exception"
    assert v["exception"]["type"] == "ValueError"
    assert v["stdout"] == fake + "\n"


def test_nul_bytes_in_code_are_an_exception_not_a_crash():
    v, rc, _ = run_exec(b"print(1)\x00\nprint(2)\n")
    assert rc == 0
    assert v["status"] == "exception"
    assert v["exception"]["type"] in ("SyntaxError", "ValueError")


def test_coding_cookie_is_honoured():
    # the snippet's bytes are compiled as compile(bytes) would: a PEP 263 cookie decides
    v, rc, _ = run_exec(b"# -*- coding: latin-1 -*-\nprint('\xe9')\n")
    assert rc == 0 and v["status"] == "ok"
    assert v["stdout"] == "\u00e9\n"


def test_non_utf8_code_is_an_exception():
    v, rc, _ = run_exec(b"print('\xff\xfe')\n")
    assert rc == 0
    assert v["status"] == "exception"
    assert v["exception"]["type"] == "SyntaxError"


@needs_rlimit_as
def test_100mb_snippet_does_not_crash():
    code = b"x = 1\n" + b"#" * (100 * 1024 * 1024) + b"\nprint(x)\n"
    v, rc, err = run_exec(code, "--wall-time", "30s", timeout=120)
    assert rc == 0, err
    assert v["status"] in ("ok", "memory_limit", "timeout", "cpu_limit"), v["status"]


def test_pretty_output_is_indented():
    p = run_pysnip(["exec", "--pretty", "-"], input_bytes=b"print(1)\n")
    assert p.returncode == 0
    assert b"\n\t" in p.stdout or b"\n  " in p.stdout
    assert json.loads(p.stdout)["status"] == "ok"


# --- usage errors ----------------------------------------------------------------------

def test_unknown_option_exit_1():
    p = run_pysnip(["exec", "--frobnicate", "-"], input_bytes=b"print(1)")
    assert p.returncode == 1
    assert b"--frobnicate" in p.stderr
    assert p.stdout == b""


def test_unknown_command_exit_1():
    p = run_pysnip(["launch"])
    assert p.returncode == 1 and b"launch" in p.stderr


def test_missing_file_exit_1():
    p = run_pysnip(["exec", "/nonexistent/code.py"])
    assert p.returncode == 1
    assert b"/nonexistent/code.py" in p.stderr


def test_bad_unit_names_the_option():
    p = run_pysnip(["exec", "--memory", "12Q", "-"], input_bytes=b"print(1)")
    assert p.returncode == 1
    assert b"memory" in p.stderr


def test_unknown_layer_names_it():
    p = run_pysnip(["exec", "--disable-layer", "moat", "-"], input_bytes=b"print(1)")
    assert p.returncode == 1 and b"moat" in p.stderr


def test_malformed_policy_exit_1(tmp_path):
    pol = tmp_path / "broken.json"
    pol.write_text('{"limits": {"wall": "5 parsecs"}}')
    p = run_pysnip(["exec", "--policy", str(pol), "-"], input_bytes=b"print(1)")
    assert p.returncode == 1
    err = p.stderr.decode()
    assert str(pol) in err and "limits.wall" in err


def test_unknown_policy_name_exit_1():
    p = run_pysnip(["exec", "--policy", "no-such-policy", "-"], input_bytes=b"print(1)")
    assert p.returncode == 1 and b"no-such-policy" in p.stderr


def test_help_and_version():
    p = run_pysnip(["exec", "--help"])
    assert p.returncode == 0 and b"--wall-time" in p.stdout
    p = run_pysnip(["--version"])
    assert p.returncode == 0 and p.stdout.startswith(b"pysnip ")


def test_help_says_each_commands_own_defaults():
    """An option two commands share has each one's help: serve's --policy defaults to the
    three standard policies (a comma list), exec's to default; exec's --audit-log refuses
    "-" (stdout is the verdict's), so only serve's help offers it. Each help's option is
    also the one its command parses."""
    serve = run_pysnip(["serve", "--help"]).stdout.decode()
    exe = run_pysnip(["exec", "--help"]).stdout.decode()
    pol = [l for l in serve.splitlines() if l.strip().startswith("--policy")]
    assert len(pol) == 1 and "default,strict,notebook" in pol[0], serve
    pol = [l for l in exe.splitlines() if l.strip().startswith("--policy")]
    assert len(pol) == 1 and pol[0].endswith("default: default"), exe
    aud = [l for l in exe.splitlines() if l.strip().startswith("--audit-log")]
    assert len(aud) == 1 and "- for" not in aud[0], exe
    aud = [l for l in serve.splitlines() if l.strip().startswith("--audit-log")]
    assert len(aud) == 1 and "- for stdout" in aud[0], serve
    p = run_pysnip(["exec", "--audit-log", "-", "-"], input_bytes=b"print(1)")
    assert p.returncode == 1 and b"--audit-log" in p.stderr
    p = run_pysnip(["check-policy", "--policy", "strict"])
    assert p.returncode == 1 and b"unknown option '--policy'" in p.stderr


def test_check_policy_prints_resolved():
    p = run_pysnip(["check-policy", "strict"])
    assert p.returncode == 0, p.stderr
    json.loads(p.stdout)


def test_closed_stdout_is_a_clear_error():
    r, w = os.pipe()
    os.close(r)
    p = subprocess.run([PYSNIP, "exec", "-"], input=b"print(1)\n", stdout=w,
                       stderr=subprocess.PIPE, timeout=60)
    os.close(w)
    assert p.returncode == 2
    assert b"stdout" in p.stderr


# --- nothing survives -------------------------------------------------------------------

def test_tight_open_files_limit(tmp_path):
    """RLIMIT_NOFILE comes after the worker has closed what it inherited: a limit below the
    descriptors the worker holds during its phases must not starve them (Landlock's ruleset
    got EMFILE), and it still holds for the snippet."""
    pol = tmp_path / "few.json"
    pol.write_text('{"extends": "default", "limits": {"open_files": 8}}')
    v, rc, err = run_exec("fs = [open('/dev/null') for _ in range(2)]\nprint(len(fs))",
                          "--policy", str(pol))
    assert rc == 0 and v["status"] == "ok" and v["stdout"] == "2\n", (v, err)
    v, rc, err = run_exec("fs = [open('/dev/null') for _ in range(10)]", "--policy", str(pol))
    assert v["status"] == "exception" and "Too many open files" in v["exception"]["message"], v


def test_no_scratch_directory_left(tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path))
    p = subprocess.run([PYSNIP, "exec", "-"], input=b"open('f.txt','w').write('x')\nprint(1)\n",
                       capture_output=True, env=env, timeout=60)
    assert json.loads(p.stdout)["status"] == "ok", p.stdout
    assert os.listdir(tmp_path) == []


def test_scratch_is_cwd_and_writable():
    v, _, _ = run_exec("open('out.txt', 'w').write('data')\nprint(open('out.txt').read())\n")
    assert v["status"] == "ok", v
    assert v["stdout"] == "data\n"


# --- cgroup: fail closed, or degrade visibly ------------------------------------------------

def _cgroup_policy(tmp_path, mode):
    pol = tmp_path / ("cg-%s.json" % mode)
    pol.write_text(json.dumps({"extends": "default", "cgroup": {"parent": "/tmp"},
                               "layers": {"cgroup": mode}}))
    return str(pol)


def test_cgroup_required_but_unusable_is_internal_error(tmp_path):
    p = run_pysnip(["exec", "--policy", _cgroup_policy(tmp_path, "required"), "-"],
                   input_bytes=b"print('must not run')\n")
    assert p.returncode == 2, p.stderr
    v = json.loads(p.stdout)
    assert v["status"] == "internal_error"
    assert "/tmp" in v["error"] and "cgroup" in v["error"]
    assert "must not run" not in v["stdout"]


def test_cgroup_best_effort_degrades_visibly(tmp_path):
    p = run_pysnip(["exec", "--policy", _cgroup_policy(tmp_path, "best-effort"), "-"],
                   input_bytes=b"print('ran')\n")
    assert p.returncode == 0, p.stderr
    v = json.loads(p.stdout)
    assert v["status"] == "ok" and v["stdout"] == "ran\n"
    assert "cgroup" in v["sandbox"]["layers_degraded"]
    assert v["sandbox"]["cgroup"].startswith("none")


def test_forged_status_records_after_start_are_ignored():
    # fd 3 is the worker's status channel; once the snippet runs, a forged "phase failed"
    # or "syscall denied" record must not turn its verdict into internal_error or denied.
    code = ("import os, struct\n"
            "rec = struct.pack('IiiiI', 1, 0, 1, 0, 0) + b'\\0' * 232\n"
            "os.write(3, rec)\n"
            "os.write(3, struct.pack('IiiiI', 3, 0, 0, 59, 0xc000003e) + b'\\0' * 232)\n"
            "print('still fine')\n")
    v, rc, _ = run_exec(code)
    assert rc == 0
    assert v["status"] == "ok", v
    assert v["stdout"] == "still fine\n"
    assert v["denials"] == []


def test_runaway_recursion_traceback_is_bounded():
    # A million frames must not become a million-frame report: the outermost and innermost
    # frames are kept and the rest counted.
    v, rc, _ = run_exec("import sys\nsys.setrecursionlimit(20000)\n"
                        "def f(n):\n    return f(n + 1)\nf(0)\n")
    assert rc == 0
    assert v["status"] == "exception", v["status"]
    e = v["exception"]
    assert e["type"] == "RecursionError"
    assert len(e["traceback"]) == 100
    assert e["frames_omitted"] > 10000
    assert e["traceback"][0]["function"] == "<module>" and e["traceback"][-1]["function"] == "f"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupting_pysnip_ends_the_run_cleanly(tmp_path, sig):
    # Ctrl-C (or a service manager's SIGTERM) to pysnip itself: the worker is killed, its
    # scratch removed, and a verdict still says what happened; nothing is left behind.
    env = dict(os.environ, TMPDIR=str(tmp_path))
    p = subprocess.Popen([PYSNIP, "exec", "--wall-time", "30s", "-"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    p.stdin.write(b"import time\nprint('started', flush=True)\ntime.sleep(60)\n")
    p.stdin.close()
    p.stdin = None
    deadline = time.time() + 20
    while time.time() < deadline and not any(n.startswith("pysnip-run-")
                                             for n in os.listdir(tmp_path)):
        time.sleep(0.02)
    time.sleep(0.3)
    p.send_signal(sig)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 2, err
    v = json.loads(out)
    assert v["status"] == "internal_error"
    assert "interrupted by SIG" in v["error"]
    assert os.listdir(tmp_path) == []
