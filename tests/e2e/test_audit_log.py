"""The audit log: one JSON line per run (exec and serve) and per refused request (serve).

Each line carries time, kind, request_id, client, token_id and, for a run, the verdict's own
policy, status, exit_code, signal_name, usage and denials (each with layer, event, detail and
line); a refused request carries its http_status, method, path and reason. The token itself
never appears.
"""
import concurrent.futures
import datetime
import json
import os
import socket

import pytest

from conftest import run_exec
from servekit import Server

TOKEN = "s3cret-token-" + "7" * 24

# A denial of each layer that reports one, and outcomes without a denial.
CASES = {
    "import": ("import socket\n", []),
    "audit": ("open('/etc/shadow')\n", []),
    # Not an audit event: the call reaches the filter, which kills and names it.
    "seccomp": ("import os\nos.sched_getscheduler(0)\n", []),
    # The kernel's refusals, named by the verdict once the Python layer is out of the way.
    "landlock": ("open('/etc/hostname').read()\n", ["--disable-layer", "python"]),
    "identity": ("open('/etc/shadow').read()\n", ["--disable-layer", "python"]),
    "ok": ("print('hi')\n", []),
    "exception": ("1 / 0\n", []),
    "timeout": ("while True: pass\n", ["--wall-time", "300ms", "--cpu-time", "5s"]),
}
WANT_LAYER = {"import": "import", "audit": "audit", "seccomp": "seccomp",
              "landlock": "landlock", "identity": "identity"}


def read_lines(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data.endswith(b"\n") or not data
    return [json.loads(l) for l in data.decode().splitlines()]


def same_as_verdict(line, verdict):
    for key in ("policy", "status", "exit_code", "usage", "denials"):
        assert line[key] == verdict[key], (key, line, verdict)
    assert line.get("signal_name") == verdict.get("signal_name")
    t = datetime.datetime.strptime(line["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
    assert abs((datetime.datetime.utcnow() - t).total_seconds()) < 600


@pytest.mark.parametrize("name", sorted(CASES))
def test_exec_logs_the_verdicts_fields(name, tmp_path):
    log = tmp_path / "audit.jsonl"
    log.write_text('{"earlier": "line"}\n')   # append-only: what was there stays
    code, args = CASES[name]
    verdict, rc, err = run_exec(code, "--audit-log", str(log), *args)
    assert rc == 0, err
    lines = read_lines(log)
    assert lines[0] == {"earlier": "line"} and len(lines) == 2
    line = lines[1]
    assert line["kind"] == "run" and line["client"] == "local" and line["token_id"] is None
    assert line["request_id"].startswith("r-")
    same_as_verdict(line, verdict)
    if name in WANT_LAYER:
        assert verdict["status"] == "denied"
        assert line["denials"] and line["denials"][0]["layer"] == WANT_LAYER[name]
        if name == "seccomp":
            assert line["denials"][0]["event"] == "sched_getscheduler"
        assert set(line["denials"][0]) >= {"layer", "event", "detail", "line"}
    else:
        assert line["denials"] == []


def test_exec_log_is_created_owner_only(tmp_path):
    log = tmp_path / "new.jsonl"
    verdict, rc, err = run_exec("print(1)\n", "--audit-log", str(log))
    assert rc == 0, err
    assert os.stat(log).st_mode & 0o777 == 0o600
    assert len(read_lines(log)) == 1


def test_full_disk_is_reported_not_fatal():
    verdict, rc, err = run_exec("print('still runs')\n", "--audit-log", "/dev/full")
    assert rc == 0, err
    assert verdict["status"] == "ok" and verdict["stdout"] == "still runs\n"
    assert "audit log /dev/full: write: No space left on device" in err
    assert "1 line(s) could not be written" in err


def test_unopenable_log_is_a_usage_error(tmp_path):
    verdict, rc, err = run_exec("print(1)\n", "--audit-log", str(tmp_path / "no" / "x"))
    assert rc == 1 and verdict is None
    assert "--audit-log: audit log" in err and "No such file or directory" in err
    verdict, rc, err = run_exec("print(1)\n", "--audit-log", "-")
    assert rc == 1 and "standard output carries the verdict" in err


# ---- serve ----

@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("audit") / "serve.jsonl"
    s = Server("--policy", "default", "--workers", "1", "--queue", "1", "--audit-log",
               str(log), token=TOKEN)
    s.log = str(log)
    yield s
    s.stop()


def lines_for(server, rid, n=1):
    """The log's lines of request rid, once there are n of them: serve's writer thread
    writes them just after the answer (a few seconds at most, else what there is)."""
    import time
    deadline = time.time() + 10
    while True:
        got = [l for l in read_lines(server.log) if l["request_id"] == rid]
        if len(got) >= n or time.time() > deadline:
            return got
        time.sleep(0.01)


@pytest.fixture(scope="module")
def server_python_off(tmp_path_factory):
    log = tmp_path_factory.mktemp("audit") / "serve-python-off.jsonl"
    s = Server("--policy", "default", "--workers", "1", "--disable-layer", "python",
               "--audit-log", str(log), token=TOKEN)
    s.log = str(log)
    yield s
    s.stop()


@pytest.mark.parametrize("name", sorted(CASES))
def test_serve_logs_each_run_like_its_verdict(server, name, request):
    code, args = CASES[name]
    if "--disable-layer" in args:     # a server of its own, started with that layer off
        server = request.getfixturevalue("server_python_off")
    limits = {"wall": "300ms"} if name == "timeout" else {}
    rid = "test-" + name
    status, _, verdict = server.request("POST", "/v1/exec", {"code": code, "limits": limits},
                                        headers={"X-Request-Id": rid})
    assert status == 200, verdict
    (line,) = lines_for(server, rid)
    same_as_verdict(line, verdict)
    if name in WANT_LAYER:
        assert verdict["status"] == "denied" and line["denials"][0]["layer"] == WANT_LAYER[name]
    assert line["client"].startswith("127.0.0.1:")
    assert line["token_id"].startswith("sha256crypt:") and TOKEN not in line["token_id"]


def test_serve_batch_logs_one_line_per_input(server):
    status, _, verdicts = server.request("POST", "/v1/batch",
                                         {"code": "print(int(input()) * 2)", "stdin": ["1", "x"]},
                                         headers={"X-Request-Id": "test-batch"})
    assert status == 200
    lines = lines_for(server, "test-batch", 2)
    assert [l["index"] for l in lines] == [0, 1]
    for l, v in zip(lines, verdicts):
        same_as_verdict(l, v)


def test_serve_logs_refused_requests(server):
    # 401: no token, and a wrong one (whose text must not be logged either).
    status, _, _ = server.request("POST", "/v1/exec", {"code": "print(1)"},
                                  headers={"Authorization": "Bearer wrong-guess-123",
                                           "X-Request-Id": "test-401"})
    assert status == 401
    (line,) = lines_for(server, "test-401")
    assert line["kind"] == "refused" and line["http_status"] == 401
    assert line["path"] == "/v1/exec" and line["method"] == "POST" and line["token_id"] is None
    assert "token" in line["reason"]
    # 413: declared too large, refused before the body is read.
    c = socket.create_connection((server.host, server.port))
    c.sendall(b"POST /v1/exec HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode() +
              b"\r\nX-Request-Id: test-413\r\nContent-Length: 99999999999\r\n\r\n")
    assert b" 413 " in c.recv(4096).split(b"\r\n")[0]
    c.close()
    (line,) = lines_for(server, "test-413")
    assert line["http_status"] == 413 and "larger than" in line["reason"]
    # 429: one worker, one queue slot, three slow requests at once.
    def slow(i):
        return server.request("POST", "/v1/exec", {"code": "import time; time.sleep(0.6)"},
                              headers={"X-Request-Id": "test-429-%d" % i})[0]
    with concurrent.futures.ThreadPoolExecutor(3) as ex:
        codes = list(ex.map(slow, range(3)))
    assert codes.count(429) >= 1, codes
    refused = [l for i in range(3) for l in lines_for(server, "test-429-%d" % i)
               if l["kind"] == "refused"]   # each request has its one line by now
    assert len(refused) == codes.count(429)
    assert all(l["http_status"] == 429 for l in refused)
    with open(server.log) as f:
        text = f.read()
    assert TOKEN not in text and "wrong-guess-123" not in text


def test_concurrent_lines_never_interleave(tmp_path):
    log = tmp_path / "c.jsonl"
    s = Server("--policy", "default", "--workers", "2", "--queue", "64", "--audit-log", str(log))
    try:
        # Long lines (40 caught denials, ~11 kB, more than PIPE_BUF) from parallel runs.
        code = ("for i in range(40):\n    try: open('/nonexistent/%d' % i + 'x' * 200)\n"
                "    except PermissionError: pass\n")
        n = 40

        def one(i):
            return s.request("POST", "/v1/exec", {"code": code},
                             headers={"X-Request-Id": "c-%d" % i})[0]
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            assert set(ex.map(one, range(n))) == {200}
    finally:
        s.stop()
    lines = read_lines(log)   # json.loads of every line: none is cut or mixed
    assert sorted(l["request_id"] for l in lines) == sorted("c-%d" % i for i in range(n))
    assert all(len(l["denials"]) == 40 and l["status"] == "ok" for l in lines)
    assert min(len(json.dumps(l)) for l in lines) > 4096
    assert all(l["token_id"] is None for l in lines)


def test_serve_log_to_stdout():
    """--audit-log - : the lines go to serve's standard output (a pipe here)."""
    import http.client
    import re
    import subprocess
    from conftest import PYSNIP
    p = subprocess.Popen([PYSNIP, "serve", "--policy", "default", "--listen", "127.0.0.1:0",
                          "--workers", "1", "--audit-log", "-"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        port = None
        for _ in range(200):
            l = p.stderr.readline().decode()
            m = re.search(r"listening on http://[\d.]+:(\d+)", l)
            port = int(m.group(1)) if m else port
            if "ready" in l or not l:
                break
        assert port, "serve did not start"
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.request("POST", "/v1/exec", body=json.dumps({"code": "print(1)"}),
                  headers={"X-Request-Id": "stdout-1"})
        verdict = json.loads(c.getresponse().read())
        line = json.loads(p.stdout.readline())
        assert line["request_id"] == "stdout-1" and line["kind"] == "run"
        same_as_verdict(line, verdict)
    finally:
        p.terminate()
        p.wait(timeout=60)


def test_a_stuck_log_never_holds_an_answer(tmp_path):
    """The log is a FIFO nobody reads: the pipe fills after a few lines, its writer thread
    blocks, and the answers keep coming; what was queued is written once it drains."""
    import time
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    keep = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)   # a reader that does not read
    s = Server("--policy", "default", "--workers", "2", "--audit-log", str(fifo))
    try:
        code = ("for i in range(40):\n    try: open('/nonexistent/%d' % i + 'x' * 200)\n"
                "    except PermissionError: pass\n")
        t = time.time()
        for i in range(30):      # ~11 kB a line: far past the pipe's 64 kB
            status, _, v = s.request("POST", "/v1/exec", {"code": code},
                                     headers={"X-Request-Id": "stuck-%d" % i})
            assert status == 200 and v["status"] == "ok", v
        took = time.time() - t
        data = b""
        deadline = time.time() + 30
        while data.count(b"\n") < 30 and time.time() < deadline:
            try:
                chunk = os.read(keep, 1 << 20)
            except BlockingIOError:
                chunk = b""
            data += chunk
            if not chunk:
                time.sleep(0.01)
    finally:
        s.stop()
        os.close(keep)
    lines = [json.loads(l) for l in data.decode().splitlines()]
    assert [l["request_id"] for l in lines] == ["stuck-%d" % i for i in range(30)]
    assert took < 30, took


def test_with_server_exec_keeps_no_log(tmp_path):
    verdict, rc, err = run_exec("print(1)\n", "--server", "http://127.0.0.1:1",
                                "--audit-log", str(tmp_path / "x.jsonl"))
    assert rc == 1 and verdict is None and "the server keeps the log" in err
    assert not (tmp_path / "x.jsonl").exists()


def test_serve_usage_error_with_a_log_still_exits_1(tmp_path):
    import subprocess
    from conftest import PYSNIP
    p = subprocess.run([PYSNIP, "serve", "--listen", "256.1.1.1:99999", "--audit-log",
                        str(tmp_path / "a.jsonl")], capture_output=True, timeout=60)
    assert p.returncode == 1, p.stderr
    assert b"--listen 256.1.1.1:99999" in p.stderr
