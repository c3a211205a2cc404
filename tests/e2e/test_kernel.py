"""`pysnip kernel` through the real Jupyter client (jupyter_client's KernelManager and
BlockingKernelClient, started from a kernelspec `pysnip kernel install` wrote), and bad
messages sent with raw pyzmq: each is dropped, logged, and the kernel keeps serving."""
import json
import signal
import os
import subprocess
import tempfile
import time

import pytest

from conftest import PYSNIP, alive, descendants
from kernelkit import iopub_until_idle, running_kernel

zmq = pytest.importorskip("zmq")
jupyter_client = pytest.importorskip("jupyter_client")


@pytest.fixture(scope="module")
def kernel_log():
    with tempfile.TemporaryFile(mode="w+") as f:
        yield f


@pytest.fixture(scope="module")
def kernel(kernel_log):
    with running_kernel(stderr=kernel_log) as (km, kc):
        yield km, kc


def log_text(f):
    f.flush()
    f.seek(0)
    return f.read()


# ------------------------------------------------------------------ kernelspec and CLI

def test_install_writes_kernelspec():
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run([PYSNIP, "kernel", "install", "--prefix", d, "--name", "k1",
                            "--policy", "strict"], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        path = os.path.join(d, "share", "jupyter", "kernels", "k1", "kernel.json")
        assert p.stdout.strip() == os.path.dirname(path)
        spec = json.load(open(path))
        assert spec["argv"][0] == os.path.join(os.path.dirname(PYSNIP), "pysnip-kernel")
        assert spec["argv"][1:] == ["kernel", "-f", "{connection_file}", "--policy", "strict"]
        assert spec["interrupt_mode"] == "message"
        assert spec["language"] == "python"


def test_install_user_goes_to_the_users_data_dir():
    with tempfile.TemporaryDirectory() as home:
        env = {k: v for k, v in os.environ.items() if k != "JUPYTER_DATA_DIR"}
        env["HOME"] = home
        p = subprocess.run([PYSNIP, "kernel", "install", "--user", "--wall", "5s"],
                           capture_output=True, text=True, env=env)
        assert p.returncode == 0, p.stderr
        path = os.path.join(home, ".local", "share", "jupyter", "kernels", "pysnip",
                            "kernel.json")
        spec = json.load(open(path))
        assert spec["argv"][-2:] == ["--wall", "5s"]
        # jupyter_client reads it as a kernelspec (the path is jupyter_data_dir()'s for HOME)
        from jupyter_client.kernelspec import KernelSpecManager
        ksm = KernelSpecManager(kernel_dirs=[os.path.dirname(os.path.dirname(path))])
        assert ksm.get_kernel_spec("pysnip").argv == spec["argv"]
        assert ksm.get_kernel_spec("pysnip").interrupt_mode == "message"


@pytest.mark.parametrize("args,why", [
    (["--name", "bad/name"], "letters, digits"),
    (["--policy", "no-such-policy"], "no-such-policy"),
    (["--user", "--prefix", "/tmp"], "choose one"),
    (["--bogus"], "unknown option '--bogus'"),
])
def test_install_refuses_bad_arguments(args, why):
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run([PYSNIP, "kernel", "install", "--prefix", d] + args,
                           capture_output=True, text=True)
        assert p.returncode == 1
        assert why in p.stderr


@pytest.mark.parametrize("content,why", [
    (None, "-f CONNECTION_FILE is needed"),
    ("not json", "not a JSON object"),
    ('{"shell_port": 0}', "field shell_port"),
    ('{"shell_port":1,"iopub_port":2,"stdin_port":3,"control_port":4,"hb_port":5,'
     '"signature_scheme":"hmac-md5"}', "only hmac-sha256"),
    ('{"shell_port":1,"iopub_port":2,"stdin_port":3,"control_port":4,"hb_port":5,'
     '"transport":"udp"}', "field transport"),
])
def test_bad_connection_file(content, why):
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        args = [PYSNIP, "kernel"]
        if content is not None:
            f.write(content)
            f.flush()
            args += ["-f", f.name]
        p = subprocess.run(args, capture_output=True, text=True, timeout=30)
        assert p.returncode == 1, p.stderr
        assert why in p.stderr


def test_one_shot_binary_does_not_link_zmq():
    libs = subprocess.run(["ldd", PYSNIP], capture_output=True, text=True).stdout
    assert "libzmq" not in libs and "libcrypto" not in libs
    kernel_bin = os.path.join(os.path.dirname(PYSNIP), "pysnip-kernel")
    libs = subprocess.run(["ldd", kernel_bin], capture_output=True, text=True).stdout
    assert "libzmq" in libs and "libcrypto" in libs


# ------------------------------------------------------------------ protocol

def test_kernel_info(kernel):
    km, kc = kernel
    reply = kc.kernel_info(reply=True, timeout=10)
    c = reply["content"]
    assert reply["header"]["version"] == "5.3"
    assert c["status"] == "ok" and c["protocol_version"] == "5.3"
    li = c["language_info"]
    assert li["name"] == "python" and li["version"].startswith("3.11")
    for key in ("mimetype", "file_extension", "pygments_lexer", "codemirror_mode",
                "nbconvert_exporter"):
        assert li[key], key


def test_reply_headers_and_status_around_request(kernel):
    km, kc = kernel
    msg_id = kc.kernel_info()
    reply = kc.get_shell_msg(timeout=10)
    assert reply["parent_header"]["msg_id"] == msg_id
    h = reply["header"]
    assert h["msg_type"] == "kernel_info_reply" and h["session"] and h["msg_id"] != msg_id
    assert h["date"].year >= 2024	# jupyter_client parsed it as an ISO 8601 date
    states = [m["content"]["execution_state"] for m in iopub_until_idle(kc, msg_id)
              if m["msg_type"] == "status"]
    assert states == ["busy", "idle"]
    ids = {kc.kernel_info() for _ in range(3)}
    replies = [kc.get_shell_msg(timeout=10) for _ in range(3)]
    assert {r["parent_header"]["msg_id"] for r in replies} == ids
    assert len({r["header"]["msg_id"] for r in replies}) == 3	# fresh msg_id each


def test_kernel_info_on_control(kernel):
    km, kc = kernel
    msg = kc.session.msg("kernel_info_request", {})
    kc.control_channel.send(msg)
    reply = kc.get_control_msg(timeout=10)
    assert reply["parent_header"]["msg_id"] == msg["header"]["msg_id"]
    assert reply["content"]["status"] == "ok"


def test_comm_info(kernel):
    km, kc = kernel
    msg_id = kc.comm_info()
    r = kc.get_shell_msg(timeout=10)
    assert r["parent_header"]["msg_id"] == msg_id
    assert r["content"] == {"status": "ok", "comms": {}}


def test_heartbeat(kernel):
    km, kc = kernel
    info = km.get_connection_info()
    ctx = zmq.Context.instance()
    s = ctx.socket(zmq.REQ)
    s.linger = 0
    s.connect(f"tcp://{info['ip']}:{info['hb_port']}")
    try:
        s.send(b"ping-123")
        assert s.poll(5000), "no heartbeat echo"
        assert s.recv() == b"ping-123"
    finally:
        s.close()


# ------------------------------------------------------------------ bad messages

@pytest.fixture
def raw_shell(kernel):
    """A raw DEALER on the shell port and a Session with the kernel's key."""
    km, kc = kernel
    info = km.get_connection_info()
    s = zmq.Context.instance().socket(zmq.DEALER)
    s.linger = 0
    s.connect(f"tcp://{info['ip']}:{info['shell_port']}")
    session = jupyter_client.session.Session(key=info["key"], signature_scheme="hmac-sha256")
    yield s, session
    s.close()


def still_serving(kc):
    r = kc.kernel_info(reply=True, timeout=10)
    assert r["content"]["status"] == "ok"


def answered(sock, timeout_ms=1500):
    """The replies a raw socket got within timeout_ms."""
    got = []
    while sock.poll(timeout_ms):
        got.append(sock.recv_multipart())
    return got


def signed_frames(session, msg_type, content, sign=True):
    msg = session.msg(msg_type, content)
    parts = [session.pack(msg["header"]), session.pack(msg["parent_header"]),
             session.pack(msg["metadata"]), session.pack(msg["content"])]
    sig = session.sign(parts) if sign else b"0" * 64
    return msg, [b"<IDS|MSG>", sig] + parts


def test_valid_raw_message_is_answered(kernel, raw_shell):
    """The positive control for the tests below: the same raw path, correctly signed."""
    s, session = raw_shell
    msg, frames = signed_frames(session, "kernel_info_request", {})
    s.send_multipart(frames)
    got = answered(s)
    assert len(got) == 1
    reply = session.deserialize(got[0][1:])	# [delim, sig, ...] after the DEALER strips ids
    assert reply["parent_header"]["msg_id"] == msg["header"]["msg_id"]


def test_wrong_signature_dropped_on_control(kernel, kernel_log):
    km, kc = kernel
    info = km.get_connection_info()
    s = zmq.Context.instance().socket(zmq.DEALER)
    s.linger = 0
    s.connect(f"tcp://{info['ip']}:{info['control_port']}")
    session = jupyter_client.session.Session(key=b"not-the-key", signature_scheme="hmac-sha256")
    try:
        msg, frames = signed_frames(session, "shutdown_request", {"restart": False})
        s.send_multipart(frames)
        assert answered(s) == []
        assert "control: dropped a message: bad signature" in log_text(kernel_log)
        still_serving(kc)	# the forged shutdown did nothing
    finally:
        s.close()


def test_wrong_signature_dropped(kernel, raw_shell, kernel_log):
    km, kc = kernel
    s, session = raw_shell
    msg, frames = signed_frames(session, "kernel_info_request", {}, sign=False)
    s.send_multipart(frames)
    assert answered(s) == []
    still_serving(kc)
    assert "bad signature (HMAC-SHA256 mismatch)" in log_text(kernel_log)


def test_signature_of_other_content_dropped(kernel, raw_shell):
    """A valid signature moved onto other frames: the HMAC covers all four."""
    km, kc = kernel
    s, session = raw_shell
    msg, frames = signed_frames(session, "kernel_info_request", {})
    frames[5] = b'{"x": 1}'
    s.send_multipart(frames)
    assert answered(s) == []
    still_serving(kc)


def test_replayed_message_dropped(kernel, raw_shell, kernel_log):
    km, kc = kernel
    s, session = raw_shell
    msg, frames = signed_frames(session, "kernel_info_request", {})
    s.send_multipart(frames)
    assert len(answered(s)) == 1
    s.send_multipart(frames)
    assert answered(s) == []
    assert "replayed signature" in log_text(kernel_log)
    still_serving(kc)


@pytest.mark.parametrize("frames,why", [
    ([b"garbage"], "no <IDS|MSG> delimiter"),
    ([b"<IDS|MSG>", b"x"], "frames after the delimiter"),
    ([b"<IDS|MSG>"] + [b"\xff\x00"] * 5, "bad signature"),
    ([b"id"] * 20 + [b"<IDS|MSG>"] + [b"{}"] * 5, "too many identities"),
    ([b"x"] * 100, "too many frames"),
    ([b""], "no <IDS|MSG> delimiter"),
])
def test_garbage_frames_dropped(kernel, raw_shell, kernel_log, frames, why):
    km, kc = kernel
    s, session = raw_shell
    s.send_multipart(frames)
    assert answered(s, 500) == []
    still_serving(kc)
    assert why in log_text(kernel_log)


@pytest.mark.parametrize("header,content,why", [
    (b"[1,2]", b"{}", "header is not a JSON object"),
    (b'{"msg_id": "x"}', b"{}", "without a msg_type"),
    (b'{"msg_id": "x", "msg_type": "kernel_info_request"}', b"nope", "content is not"),
])
def test_signed_but_malformed_dropped(kernel, raw_shell, kernel_log, header, content, why):
    km, kc = kernel
    s, session = raw_shell
    parts = [header, b"{}", b"{}", content]
    s.send_multipart([b"<IDS|MSG>", session.sign(parts)] + parts)
    assert answered(s, 500) == []
    still_serving(kc)
    assert why in log_text(kernel_log)


def test_unknown_msg_type_refused(kernel, raw_shell, kernel_log):
    km, kc = kernel
    s, session = raw_shell
    msg, frames = signed_frames(session, "launch_missiles_request", {})
    s.send_multipart(frames)
    assert answered(s) == []
    assert "unknown msg_type 'launch_missiles_request'" in log_text(kernel_log)
    still_serving(kc)


def test_huge_content_refused(kernel, raw_shell, kernel_log):
    km, kc = kernel
    s, session = raw_shell
    msg, frames = signed_frames(session, "execute_request",
                                {"code": "#" * (17 << 20), "silent": False})
    s.send_multipart(frames)
    assert answered(s) == []
    assert "content too large" in log_text(kernel_log)
    still_serving(kc)


def test_unsigned_kernel_accepts_unsigned_messages():
    """An empty key in the connection file means unsigned (the signature frame empty)."""
    from jupyter_client import KernelManager
    from kernelkit import jupyter_path, KERNEL_NAME
    with jupyter_path():
        km = KernelManager(kernel_name=KERNEL_NAME)
        km.session.key = b""
        km.start_kernel()
        try:
            assert json.load(open(km.connection_file))["key"] == ""
            kc = km.client()
            kc.start_channels()
            kc.wait_for_ready(timeout=30)
            still_serving(kc)
            kc.stop_channels()
        finally:
            km.shutdown_kernel()


def test_shutdown_ends_process():
    with running_kernel() as (km, kc):
        pid = km.provisioner.process.pid
        msg = kc.session.msg("shutdown_request", {"restart": False})
        kc.control_channel.send(msg)
        reply = kc.get_control_msg(timeout=10)
        assert reply["content"] == {"status": "ok", "restart": False}
        t0 = time.monotonic()
        while km.is_alive() and time.monotonic() - t0 < 10:
            time.sleep(0.05)
        assert not km.is_alive()
        assert km.provisioner.process.wait(5) == 0
        assert not os.path.exists(f"/proc/{pid}/status") or \
            "zombie" in open(f"/proc/{pid}/status").read()


def test_shutdown_reply_says_restart():
    with running_kernel() as (km, kc):
        msg = kc.session.msg("shutdown_request", {"restart": True})
        kc.control_channel.send(msg)
        reply = kc.get_control_msg(timeout=10)
        assert reply["content"] == {"status": "ok", "restart": True}
        assert km.provisioner.process.wait(10) == 0	# the client starts the new one


def test_restart_gives_a_fresh_kernel(kernel_log):
    with running_kernel() as (km, kc):
        pid = km.provisioner.process.pid
        km.restart_kernel(now=False)
        assert km.provisioner.process.pid != pid
        kc.wait_for_ready(timeout=30)
        still_serving(kc)


# ------------------------------------------------------------------ cells

def execute(kc, code, timeout=60, metadata=None, **content):
    """Send an execute_request; returns (reply, [iopub messages up to idle])."""
    body = {"code": code, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True}
    body.update(content)
    msg = kc.session.msg("execute_request", body, metadata=metadata or {})
    kc.shell_channel.send(msg)
    msg_id = msg["header"]["msg_id"]
    while True:
        reply = kc.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    return reply, iopub_until_idle(kc, msg_id, timeout)


def outputs(msgs, kind):
    return [m["content"] for m in msgs if m["msg_type"] == kind]


def result_text(msgs):
    res = outputs(msgs, "execute_result")
    assert len(res) == 1, msgs
    return res[0]["data"]["text/plain"]


def test_execute_iopub_order_and_reply_before_idle(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "print('out')\nimport sys\nprint('err', file=sys.stderr)\n40 + 2")
    assert reply["content"]["status"] == "ok"
    kinds = [m["msg_type"] for m in msgs]
    assert kinds[0] == "status" and msgs[0]["content"]["execution_state"] == "busy"
    assert kinds[1] == "execute_input" and kinds[-1] == "status"
    assert kinds.index("execute_result") > max(i for i, k in enumerate(kinds) if k == "stream")
    streams = {s["name"]: s["text"] for s in outputs(msgs, "stream")}
    assert streams == {"stdout": "out\n", "stderr": "err\n"}
    assert result_text(msgs) == "42"
    ec = reply["content"]["execution_count"]
    assert outputs(msgs, "execute_input")[0]["execution_count"] == ec
    assert outputs(msgs, "execute_result")[0]["execution_count"] == ec
    assert reply["header"]["date"] <= msgs[-1]["header"]["date"]	# the reply before idle


def history(kc, **args):
    msg_id = kc.history(**args)
    while True:
        r = kc.get_shell_msg(timeout=10)
        if r["parent_header"].get("msg_id") == msg_id:
            assert r["msg_type"] == "history_reply"
            return r["content"]


def test_history_holds_the_cells_run(kernel):
    """tail, range and search over the cells this kernel ran (store_history), numbered by
    their execution_count; a silent cell and one with store_history false are not kept."""
    km, kc = kernel
    r1, _ = execute(kc, "hist_a = 20")
    r2, _ = execute(kc, "hist_a + 1")
    execute(kc, "hist_a + 100", silent=True)
    execute(kc, "hist_a + 1000", store_history=False)
    l1, l2 = r1["content"]["execution_count"], r2["content"]["execution_count"]
    tail = history(kc, hist_access_type="tail", n=2, output=False, raw=True)
    assert tail == {"status": "ok", "history": [[1, l1, "hist_a = 20"], [1, l2, "hist_a + 1"]]}
    tail = history(kc, hist_access_type="tail", n=2, output=True, raw=True)
    assert tail["history"] == [[1, l1, ["hist_a = 20", None]], [1, l2, ["hist_a + 1", "21"]]]
    for session in (0, 1):	# 0: the current session, as IPython numbers them
        rng = history(kc, hist_access_type="range", session=session, start=l2, stop=l2 + 1,
                      output=False, raw=True)
        assert rng["history"] == [[1, l2, "hist_a + 1"]]
    assert history(kc, hist_access_type="range", session=-1, start=1, stop=0)["history"] == []
    found = history(kc, hist_access_type="search", pattern="hist_a*", output=False, raw=True)
    assert [h[2] for h in found["history"]] == ["hist_a = 20", "hist_a + 1"]
    assert history(kc, hist_access_type="search", pattern="hist_a", raw=True)["history"] == []
    execute(kc, "hist_a + 1")
    again = history(kc, hist_access_type="search", pattern="hist_a + ?", unique=True, raw=True)
    assert [h[2] for h in again["history"]] == ["hist_a + 1"]
    assert again["history"][0][1] > l2	# the latest of the two
    last = history(kc, hist_access_type="search", pattern="hist_a*", n=1, raw=True)
    assert [h[2] for h in last["history"]] == ["hist_a + 1"]


@pytest.mark.parametrize("args,why", [
    ({"hist_access_type": "everything"}, "hist_access_type must be"),
    ({}, "hist_access_type must be"),
    ({"hist_access_type": "tail", "n": "ten"}, "n must be a whole number"),
    ({"hist_access_type": "tail", "n": -3}, "n must not be negative"),
    ({"hist_access_type": "tail", "n": 2.5}, "n must be a whole number"),
    ({"hist_access_type": "range", "start": 1e300}, "start must be a whole number"),
    ({"hist_access_type": "range", "session": [1]}, "session must be a whole number"),
    ({"hist_access_type": "search", "pattern": 5}, "pattern must be a string"),
    ({"hist_access_type": "tail", "output": "yes"}, "output must be true or false"),
    ({"hist_access_type": "search", "unique": 1}, "unique must be true or false"),
])
def test_history_bad_arguments_are_an_error_reply(kernel, args, why):
    km, kc = kernel
    msg = kc.session.msg("history_request", args)
    kc.shell_channel.send(msg)
    r = kc.get_shell_msg(timeout=10)
    assert r["parent_header"]["msg_id"] == msg["header"]["msg_id"]
    assert r["content"]["status"] == "error", r["content"]
    assert why in r["content"]["evalue"]
    assert r["content"]["history"] == []
    still_serving(kc)


def test_user_expressions_are_evaluated_after_the_cell(kernel):
    """Each is evaluated in the state the cell left, as a MIME bundle or an error dict as
    ipykernel gives them; the cell's own outputs are as without them."""
    km, kc = kernel
    ue = {"plus": "ue_x + 1", "html": "type('H', (), {'_repr_html_': lambda s: '<b>h</b>'})()",
          "bad": "1 / 0", "missing": "ue_nowhere", "notstr": 5}
    reply, msgs = execute(kc, "ue_x = 41\nprint('cell')", user_expressions=ue)
    c = reply["content"]
    assert c["status"] == "ok", c
    got = c["user_expressions"]
    assert set(got) == set(ue)
    assert got["plus"] == {"status": "ok", "data": {"text/plain": "42"}, "metadata": {}}
    assert got["html"]["status"] == "ok" and got["html"]["data"]["text/html"] == "<b>h</b>"
    assert got["bad"]["status"] == "error" and got["bad"]["ename"] == "ZeroDivisionError"
    assert got["bad"]["traceback"] and "division by zero" in got["bad"]["evalue"]
    assert got["missing"]["ename"] == "NameError"
    assert got["notstr"]["ename"] == "TypeError" and "not a string" in got["notstr"]["evalue"]
    # nothing of the evaluation is published: the cell's outputs only
    kinds = [m["msg_type"] for m in msgs if m["msg_type"] not in ("status", "execute_input")]
    assert kinds == ["stream"], kinds
    # the evaluator left nothing in the state, and the cell's state is there
    reply, msgs = execute(kc, "sorted(n for n in globals() if 'pysnip' in n), ue_x")
    assert result_text(msgs) == "([], 41)"


def test_user_expressions_that_hang_are_cut_and_the_state_kept(kernel):
    """An expression that runs past the cell's wall limit ends the evaluating cell: the ones
    before it have their values, it and those after an error saying why; the cell's state is
    as the cell left it, and a broken expression is a SyntaxError dict."""
    km, kc = kernel
    ue = {"first": "ue_y * 2", "syntax": "1 +", "hang": "[0 for _ in iter(int, 1)]",
          "after": "ue_y"}
    reply, _ = execute(kc, "ue_y = 21", user_expressions=ue,
                       metadata={"pysnip": {"limits": {"wall": "1s"}}})
    got = reply["content"]["user_expressions"]
    assert reply["content"]["status"] == "ok"
    assert got["first"]["data"]["text/plain"] == "42"
    assert got["syntax"]["ename"] == "SyntaxError"
    for name in ("hang", "after"):
        assert got[name]["status"] == "error" and "timeout" in got[name]["evalue"], got[name]
    reply, msgs = execute(kc, "ue_y")
    assert result_text(msgs) == "21"


def test_user_expressions_not_evaluated_after_an_error(kernel):
    km, kc = kernel
    reply, _ = execute(kc, "raise ValueError('no')", user_expressions={"a": "1"},
                       stop_on_error=False)
    assert reply["content"]["status"] == "error"
    assert reply["content"].get("user_expressions", {}) == {}


@pytest.mark.parametrize("ue", [5, "1+1", ["1+1"], True])
def test_user_expressions_of_a_wrong_type_are_refused(kernel, ue):
    """Not an object: an error reply naming user_expressions; the cell did not run."""
    km, kc = kernel
    reply, msgs = execute(kc, "ue_ran = True", user_expressions=ue, stop_on_error=False)
    c = reply["content"]
    assert c["status"] == "error" and c["ename"] == "ProtocolError", c
    assert "user_expressions must be an object" in c["evalue"]
    reply, msgs = execute(kc, "'ue_ran' in globals()")
    assert result_text(msgs) == "False"
    still_serving(kc)


def test_help_syntax_pages_the_inspection(kernel):
    """`name?`, `name??` and `?name` (IPython's help syntax) are not run: the name is inspected
    on the live state and comes back as a "page" payload, no execute_result."""
    km, kc = kernel
    execute(kc, "class PageMe:\n    'Docs of PageMe.'\npage_obj = PageMe()")
    for code in ("page_obj?", "  PageMe??\n", "?page_obj"):
        reply, msgs = execute(kc, code)
        c = reply["content"]
        assert c["status"] == "ok", c
        assert len(c["payload"]) == 1 and c["payload"][0]["source"] == "page", c
        assert "Docs of PageMe." in c["payload"][0]["data"]["text/plain"]
        assert outputs(msgs, "execute_result") == []
    reply, msgs = execute(kc, "page_nowhere?")
    assert reply["content"]["status"] == "ok" and reply["content"]["payload"] == []
    assert [s["text"] for s in outputs(msgs, "stream")] == ["Object `page_nowhere` not found.\n"]
    reply, msgs = execute(kc, "page_obj?.x", stop_on_error=False)	# not the help shape: Python
    assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "SyntaxError"


def test_state_persists_and_count_grows(kernel):
    km, kc = kernel
    r1, _ = execute(kc, "kept_value = 41")
    r2, msgs = execute(kc, "kept_value + 1")
    assert result_text(msgs) == "42"
    assert r2["content"]["execution_count"] == r1["content"]["execution_count"] + 1


def test_exception_keeps_effects_before_it(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "before_error = 5\nraise ValueError('bad value')")
    c = reply["content"]
    assert c["status"] == "error" and c["ename"] == "ValueError" and c["evalue"] == "bad value"
    err = outputs(msgs, "error")
    assert len(err) == 1 and err[0]["ename"] == "ValueError"
    assert "ValueError: bad value" in "\n".join(err[0]["traceback"])
    _, msgs = execute(kc, "before_error")
    assert result_text(msgs) == "5"


def test_timeout_rolls_back_state(kernel):
    km, kc = kernel
    execute(kc, "counter = 1")
    t0 = time.monotonic()
    reply, msgs = execute(kc, "counter = 2\nwhile True: pass",
                          metadata={"pysnip": {"limits": {"wall": "1s"}}})
    took = time.monotonic() - t0
    c = reply["content"]
    assert c["status"] == "error" and c["ename"] == "TimeLimit", c
    assert "rolled back" in c["evalue"]
    assert 0.9 < took < 10, took
    assert outputs(msgs, "error")[0]["ename"] == "TimeLimit"
    _, msgs = execute(kc, "counter")
    assert result_text(msgs) == "1"	# the dead cell's assignment is gone
    assert km.is_alive()


def test_request_limits_cannot_loosen(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "1", metadata={"pysnip": {"limits": {"wall": "10h"}}})
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "LimitsError", reply["content"]


def test_memory_limit_named_and_state_intact(kernel):
    km, kc = kernel
    execute(kc, "small = [1, 2, 3]")
    reply, msgs = execute(kc, "small.append(4)\nhuge = bytearray(64 * 1024**3)")
    assert reply["content"]["ename"] == "MemoryLimit", reply["content"]
    _, msgs = execute(kc, "small")
    assert result_text(msgs) in ("[1, 2, 3]", "[1, 2, 3, 4]")
    assert km.is_alive()


def test_stop_on_error_aborts_queued_cells(kernel):
    km, kc = kernel
    # the first cell runs long enough for the second to be queued behind it (as ipykernel's
    # default stop_on_error_timeout of 0 s, a cell sent after the failure is not aborted)
    first = kc.execute("import time\ntime.sleep(0.5)\nraise RuntimeError('first')")
    second = kc.execute("never_ran = 1")
    replies = {}
    while len(replies) < 2:
        r = kc.get_shell_msg(timeout=30)
        replies[r["parent_header"]["msg_id"]] = r["content"]
    assert replies[first]["status"] == "error"
    assert replies[second]["status"] == "aborted"
    reply, msgs = execute(kc, "'never_ran' in globals()")
    assert result_text(msgs) == "False"


def test_a_cell_sent_after_a_failures_reply_is_not_aborted(kernel):
    """stop_on_error aborts the cells that were waiting when a cell failed, not one the client
    sends once it has the failure's reply (nbclient's next cell after an allowed error): the
    kernel set its abort flag after the reply and aborted whatever it read next, so a quick
    client lost its next cell (a 30 s hang of test_interrupt_at_once_after_the_cell_starts in
    the unprivileged run). A raw socket sends the next request the moment the reply is in."""
    km, kc = kernel
    from jupyter_client.session import Session
    info = km.get_connection_info()
    sess = Session(key=info["key"] if isinstance(info["key"], bytes) else info["key"].encode(),
                   signature_scheme=info.get("signature_scheme", "hmac-sha256"))
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 0
    sock.connect("%s://%s:%d" % (info["transport"], info["ip"], info["shell_port"]))
    body = {"silent": True, "store_history": False, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True}
    statuses = []
    try:
        for i in range(300):
            sess.send(sock, "execute_request", dict(body, code="1/0"))
            while True:
                _, r = sess.recv(sock, mode=0)
                if r["msg_type"] == "execute_reply":
                    break
            assert r["content"]["status"] == "error", r["content"]
            sess.send(sock, "execute_request", dict(body, code="pass"))
            while True:
                _, r = sess.recv(sock, mode=0)
                if r["msg_type"] == "execute_reply":
                    break
            statuses.append(r["content"]["status"])
    finally:
        sock.close()
    assert statuses.count("ok") == 300, [s for s in statuses if s != "ok"][:3]


def test_silent_cell_publishes_nothing(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "print('hidden'); 7", silent=True)
    assert reply["content"]["status"] == "ok"
    assert [m["msg_type"] for m in msgs] == ["status", "status"]


def test_stream_text_is_valid_utf8():
    """Its own kernel: a session that hangs here must not take the module's kernel with it."""
    with running_kernel() as (km, kc):
        code = ("import sys\nsys.stdout.buffer.write(b'caf\\xc3')\nsys.stdout.flush()\n"
                "sys.stdout.buffer.write(b'\\xa9 \\xff end\\n')\n")
        reply, msgs = execute(kc, code, timeout=10)
        text = "".join(s["text"] for s in outputs(msgs, "stream"))
        assert text == "caf\u00e9 \ufffd end\n"


def test_input_through_stdin(kernel):
    km, kc = kernel
    msg = kc.session.msg("execute_request", {"code": "answer = input('who? ')",
                                             "silent": False, "allow_stdin": True})
    kc.shell_channel.send(msg)
    req = kc.get_stdin_msg(timeout=30)
    assert req["msg_type"] == "input_request"
    assert req["content"] == {"prompt": "who? ", "password": False}
    kc.input("bob")
    reply = kc.get_shell_msg(timeout=30)
    assert reply["content"]["status"] == "ok"
    _, msgs = execute(kc, "answer")
    assert result_text(msgs) == "'bob'"


def test_input_refused_without_allow_stdin(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "input('x')", allow_stdin=False)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "EOFError"
    err = "".join(s["text"] for s in outputs(msgs, "stream") if s["name"] == "stderr")
    assert "allow_stdin is false" in err


def test_interrupt_reaches_busy_cell(kernel):
    km, kc = kernel
    execute(kc, "before_interrupt = 'kept'")
    msg_id = kc.execute("import time\nwhile True: time.sleep(0.01)")
    while True:	# wait until the cell runs
        m = kc.get_iopub_msg(timeout=30)
        if m["msg_type"] == "execute_input" and m["parent_header"]["msg_id"] == msg_id:
            break
    time.sleep(0.3)
    t0 = time.monotonic()
    km.interrupt_kernel()
    reply = kc.get_shell_msg(timeout=30)
    assert time.monotonic() - t0 < 5
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    _, msgs = execute(kc, "before_interrupt")
    assert result_text(msgs) == "'kept'"


def test_complete_and_inspect_on_live_state(kernel):
    km, kc = kernel
    execute(kc, "my_variable_xyz = 12345")
    kc.complete("my_variable_x", 13)
    r = kc.get_shell_msg(timeout=30)["content"]
    assert r["status"] == "ok" and "my_variable_xyz" in r["matches"]
    assert r["cursor_end"] == 13
    kc.inspect("my_variable_xyz", 15)
    r = kc.get_shell_msg(timeout=30)["content"]
    assert r["status"] == "ok" and r["found"] is True
    assert "12345" in r["data"]["text/plain"]


def test_complete_runs_in_a_disposable_fork(kernel):
    """rlcompleter evaluates `obj.attr` to complete after it; a property with a side effect
    runs in the fork, never in the kept state."""
    km, kc = kernel
    execute(kc, "hits = 0\nclass C:\n    @property\n    def p(self):\n        global hits\n"
                "        hits += 1\n        return 'abc'\nc = C()")
    kc.complete("c.p.up", 6)
    r = kc.get_shell_msg(timeout=30)["content"]
    assert r["status"] == "ok"
    _, msgs = execute(kc, "hits")
    assert result_text(msgs) == "0"


def test_is_complete(kernel):
    km, kc = kernel
    for code, want in [("x = 1", "complete"), ("def f():", "incomplete"),
                       ("for i in", "invalid")]:
        kc.is_complete(code)
        r = kc.get_shell_msg(timeout=30)["content"]
        assert r["status"] == want, (code, r)
        if want == "incomplete":
            assert "indent" in r


def test_seccomp_kill_is_named_and_kernel_survives(kernel_log):
    """With the Python layer off, socket() reaches seccomp, which kills the cell: the error
    names the syscall, the state is rolled back, the kernel process lives on."""
    with running_kernel(extra_args=["--disable-layer", "python"]) as (km, kc):
        pid = km.provisioner.process.pid
        execute(kc, "alive = 'yes'")
        # positive control: the same cell without the syscall runs
        reply, _ = execute(kc, "import socket")
        assert reply["content"]["status"] == "ok", reply["content"]
        reply, msgs = execute(kc, "alive = 'no'\nsocket.socket()")
        c = reply["content"]
        assert c["ename"] == "SeccompDenied", c
        assert c["evalue"].startswith("socket"), c
        assert "rolled back" in c["evalue"]
        _, msgs = execute(kc, "alive")
        assert result_text(msgs) == "'yes'"
        assert km.is_alive() and km.provisioner.process.pid == pid


# ------------------------------------------------------------------ the process

def wait_running(kc, msg_id):
    while True:
        m = kc.get_iopub_msg(timeout=30)
        if m["msg_type"] == "execute_input" and m["parent_header"]["msg_id"] == msg_id:
            return


def test_heartbeat_answers_while_a_cell_runs(kernel):
    km, kc = kernel
    msg_id = kc.execute("import time\ntime.sleep(1.5)")
    wait_running(kc, msg_id)
    info = km.get_connection_info()
    s = zmq.Context.instance().socket(zmq.REQ)
    s.linger = 0
    s.connect(f"tcp://{info['ip']}:{info['hb_port']}")
    try:
        t0 = time.monotonic()
        s.send(b"busy?")
        assert s.poll(1000) and s.recv() == b"busy?"
        assert time.monotonic() - t0 < 1.0	# answered during the cell, not after it
    finally:
        s.close()
    assert kc.get_shell_msg(timeout=30)["content"]["status"] == "ok"


def test_control_answers_while_a_cell_runs(kernel):
    km, kc = kernel
    msg_id = kc.execute("import time\ntime.sleep(1.5)")
    wait_running(kc, msg_id)
    t0 = time.monotonic()
    msg = kc.session.msg("kernel_info_request", {})
    kc.control_channel.send(msg)
    assert kc.get_control_msg(timeout=10)["content"]["status"] == "ok"
    assert time.monotonic() - t0 < 1.0
    assert kc.get_shell_msg(timeout=30)["content"]["status"] == "ok"


def test_sigint_interrupts_like_the_message(kernel):
    km, kc = kernel
    msg_id = kc.execute("while True: pass")
    wait_running(kc, msg_id)
    time.sleep(0.2)
    os.kill(km.provisioner.process.pid, signal.SIGINT)
    reply = kc.get_shell_msg(timeout=30)
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    assert km.is_alive()


def test_session_lost_is_said_and_a_new_one_serves():
    with running_kernel() as (km, kc):
        execute(kc, "lost_soon = 1")
        pid = km.provisioner.process.pid
        hosts = [p for p in descendants(pid) if f"PPid:\t{pid}\n" in
                 open(f"/proc/{p}/status").read()]
        assert len(hosts) == 1, hosts	# the session host, the kernel's only child
        assert b"session-host" in open(f"/proc/{hosts[0]}/cmdline", "rb").read()
        os.kill(hosts[0], signal.SIGKILL)
        time.sleep(0.2)
        reply, msgs = execute(kc, "lost_soon")
        assert reply["content"]["ename"] == "SessionEnded", reply["content"]
        assert "state is lost" in reply["content"]["evalue"]
        reply, msgs = execute(kc, "'lost_soon' in globals(), 1 + 1")
        assert result_text(msgs) == "(False, 2)"
        assert km.provisioner.process.pid == pid


def test_shutdown_during_a_cell_leaves_no_process():
    from jupyter_client import KernelManager
    from kernelkit import jupyter_path, KERNEL_NAME
    with jupyter_path():
        km = KernelManager(kernel_name=KERNEL_NAME)
        km.start_kernel()
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=30)
        pid = km.provisioner.process.pid
        proc = km.provisioner.process
        msg_id = kc.execute("while True: pass")
        wait_running(kc, msg_id)
        below = descendants(pid)
        assert below, "the session host and holder run under the kernel"
        t0 = time.monotonic()
        msg = kc.session.msg("shutdown_request", {"restart": False})
        kc.control_channel.send(msg)
        assert kc.get_control_msg(timeout=10)["content"]["status"] == "ok"
        assert proc.wait(8) == 0	# on its own, not killed by the client
        assert time.monotonic() - t0 < 8
        kc.stop_channels()
        km.cleanup_resources()
        time.sleep(0.2)
        assert [p for p in below if alive(p)] == []


def test_ipc_transport():
    from jupyter_client import KernelManager
    from kernelkit import jupyter_path, KERNEL_NAME
    with jupyter_path(), tempfile.TemporaryDirectory() as d:
        km = KernelManager(kernel_name=KERNEL_NAME, transport="ipc", ip=os.path.join(d, "k"))
        km.start_kernel()
        try:
            kc = km.client()
            kc.start_channels()
            kc.wait_for_ready(timeout=30)
            reply, msgs = execute(kc, "6 * 7")
            assert result_text(msgs) == "42"
            assert any(n.startswith("k-") for n in os.listdir(d))	# ipc://IP-PORT files
            kc.stop_channels()
        finally:
            km.shutdown_kernel()


def test_interrupt_at_once_after_the_cell_starts():
    """An interrupt sent the moment execute_input arrives can reach the session before the
    cell's process exists (it was lost there 1 time in ~3 on a fresh kernel's first cell):
    the kernel repeats it while the same cell runs. Checked to fail without the repeat."""
    with running_kernel() as (km, kc):
        for _ in range(4):
            msg_id = kc.execute("while True: pass")
            wait_running(kc, msg_id)
            km.interrupt_kernel()
            reply = kc.get_shell_msg(timeout=3)
            assert reply["content"]["ename"] == "KeyboardInterrupt"


def test_bad_policy_is_a_usage_error_at_start():
    """A policy that does not load ends the kernel at once, exit 1, naming it."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        ports = {}
        for name in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port"):
            s = zmq.Context.instance().socket(zmq.PUB)
            ports[name] = s.bind_to_random_port("tcp://127.0.0.1")
            s.close()
        json.dump(dict(ports, ip="127.0.0.1", key="k", transport="tcp"), f)
        f.flush()
        t0 = time.monotonic()
        p = subprocess.run([PYSNIP, "kernel", "-f", f.name, "--policy", "no-such-policy"],
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 1
        assert "no-such-policy" in p.stderr
        assert time.monotonic() - t0 < 5


def test_display_bundles_reach_iopub_in_order(kernel):
    """display() bundles (here a raw image/png, as a figure's) come as display_data, after the
    cell's stream output and before its execute_result."""
    km, kc = kernel
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
    code = (f"print('before')\ndisplay({{'image/png': '{png}'}}, raw=True)\n"
            "display('second')\n'result'")
    reply, msgs = execute(kc, code)
    assert reply["content"]["status"] == "ok"
    kinds = [m["msg_type"] for m in msgs if m["msg_type"] not in ("status", "execute_input")]
    assert kinds == ["stream", "display_data", "display_data", "execute_result"], kinds
    shown = outputs(msgs, "display_data")
    assert shown[0]["data"] == {"image/png": png}
    assert shown[1]["data"]["text/plain"] == "'second'"


def test_clear_output_goes_out_in_order(kernel):
    """clear_output(wait=...) in a cell is an iopub clear_output in its place among the
    cell's displays and after what it printed before; it is none of the verdict's bundles
    (the displays after it are published once each)."""
    km, kc = kernel
    code = ("print('before')\nclear_output(wait=True)\ndisplay('one')\nclear_output()\n"
            "display('two')\n'result'")
    reply, msgs = execute(kc, code)
    assert reply["content"]["status"] == "ok", reply["content"]
    kinds = [m["msg_type"] for m in msgs if m["msg_type"] not in ("status", "execute_input")]
    assert kinds == ["stream", "clear_output", "display_data", "clear_output", "display_data",
                     "execute_result"], kinds
    assert [c["wait"] for c in outputs(msgs, "clear_output")] == [True, False]
    assert [d["data"]["text/plain"] for d in outputs(msgs, "display_data")] == ["'one'", "'two'"]
    reply, msgs = execute(kc, "clear_output()", silent=True)
    assert reply["content"]["status"] == "ok"
    assert outputs(msgs, "clear_output") == []	# silent: nothing published


def test_sigterm_ends_kernel_and_session():
    from jupyter_client import KernelManager
    from kernelkit import jupyter_path, KERNEL_NAME
    with jupyter_path():
        km = KernelManager(kernel_name=KERNEL_NAME)
        km.start_kernel()
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=30)
            execute(kc, "1")
            proc = km.provisioner.process
            below = descendants(proc.pid)
            assert below
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(10) == 0
            time.sleep(0.2)
            assert [p for p in below if alive(p)] == []
        finally:
            kc.stop_channels()
            km.cleanup_resources()


def test_stream_arrives_as_the_cell_writes(kernel):
    km, kc = kernel
    msg_id = kc.execute("import time\nprint('early', flush=True)\ntime.sleep(1)\nprint('late')")
    t0 = time.monotonic()
    got = {}
    while "late" not in got:
        m = kc.get_iopub_msg(timeout=30)
        if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "stream":
            got[m["content"]["text"].strip()] = time.monotonic() - t0
    assert got["late"] - got["early"] > 0.8	# the first line came a second before the last
    assert kc.get_shell_msg(timeout=30)["content"]["status"] == "ok"
