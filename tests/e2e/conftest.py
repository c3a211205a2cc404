"""Shared fixtures: run the real pysnip binary and parse its verdict."""
import json
import os
import subprocess
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYSNIP = os.environ.get("PYSNIP", os.path.join(ROOT, "pysnip"))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")


def run_pysnip(args, input_bytes=None, timeout=60):
    """Run pysnip with args; returns CompletedProcess (bytes)."""
    return subprocess.run([PYSNIP] + list(args), input=input_bytes, capture_output=True,
                          timeout=timeout)


def run_exec(code, *args, stdin=None, timeout=60):
    """Run `pysnip exec -` on code (str or bytes) with extra args.

    Returns (verdict dict or None, pysnip's exit status, stderr text)."""
    if isinstance(code, str):
        code = code.encode()
    extra = list(args)
    stdin_file = None
    if stdin is not None:
        stdin_file = tempfile.NamedTemporaryFile(delete=False)
        stdin_file.write(stdin.encode() if isinstance(stdin, str) else stdin)
        stdin_file.close()
        extra += ["--stdin", stdin_file.name]
    try:
        p = run_pysnip(["exec"] + extra + ["-"], input_bytes=code, timeout=timeout)
    finally:
        if stdin_file:
            os.unlink(stdin_file.name)
    verdict = None
    if p.stdout.strip():
        verdict = json.loads(p.stdout)
    return verdict, p.returncode, p.stderr.decode(errors="replace")


@pytest.fixture
def pysnip_bin():
    return PYSNIP

# Under `make asan` RLIMIT_AS is not applied (ASan reserves terabytes of shadow memory), so
# tests whose point is the memory limit skip, visibly.
SANITIZER = bool(os.environ.get("PYSNIP_SANITIZER"))
needs_rlimit_as = pytest.mark.skipif(
    SANITIZER, reason="sanitizer build: RLIMIT_AS cannot apply under ASan's shadow memory")


def descendants(pid):
    """Every live process under pid (by /proc's parent links)."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = open(f"/proc/{d}/stat").read()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def alive(pid):
    try:
        return "State:\tZ" not in open(f"/proc/{pid}/status").read()
    except OSError:
        return False
