"""The Python client (clients/python/pysnip_client.py) against a real running server."""
import os
import signal
import threading
import time

import pytest

from servekit import Server, wait_for
import pysnip_client
from pysnip_client import BadRequest, Busy, Client, ServerError, Unauthorized


@pytest.fixture(scope="module")
def tcp():
    s = Server("--workers", "2", "--policy", "default,strict")
    yield s
    s.stop()


def test_exec_roundtrip(tcp):
    with Client(tcp.url) as c:
        v = c.exec("print(input() * 2)", stdin="ab")
        assert v["status"] == "ok" and v["stdout"] == "abab\n"
        v = c.exec("1/0")
        assert v["status"] == "exception" and v["exception"]["type"] == "ZeroDivisionError"
        v = c.exec("print(3)", policy="strict")
        assert v["policy"] == "strict"


def test_limits_kwargs(tcp):
    c = Client(tcp.url)
    v = c.exec("while True: pass", wall="250ms")
    assert v["status"] == "timeout" and v["limits"]["wall_ms"] == 250
    v = c.exec("print(1)", memory="64M", output=4096)
    assert v["limits"]["memory_bytes"] == 64 << 20 and v["limits"]["output_bytes"] == 4096
    c.close()


def test_errors_are_exceptions(tcp):
    c = Client(tcp.url)
    with pytest.raises(BadRequest) as e:
        c.exec("print(1)", wall="1h")
    assert e.value.status == 400 and e.value.field == "limits.wall"
    assert "looser" in str(e.value)
    with pytest.raises(BadRequest) as e:
        c.exec("print(1)", policy="no-such")
    assert e.value.field == "policy"
    with pytest.raises(BadRequest) as e:
        c.exec("print(1)", bogus="1")
    assert e.value.field == "limits.bogus"
    # the connection is still usable after errors
    assert c.exec("print(9)")["stdout"] == "9\n"


def test_keepalive_reuses_connection(tcp):
    c = Client(tcp.url)
    c.exec("print(1)")
    sock = c._conn.sock
    for _ in range(5):
        assert c.exec("print(2)")["status"] == "ok"
    assert c._conn.sock is sock
    c.close()


def test_batch_healthz_metrics(tcp):
    c = Client(tcp.url)
    vs = c.batch("print(int(input()) ** 2)", ["2", "3"])
    assert [v["stdout"] for v in vs] == ["4\n", "9\n"]
    assert c.healthz() == {"status": "ok"}
    assert "pysnip_requests_total" in c.metrics()


def test_module_level_exec(tcp):
    v = pysnip_client.exec("print('m')", url=tcp.url, wall="1s")
    assert v["stdout"] == "m\n" and v["limits"]["wall_ms"] == 1000


def test_bad_url():
    with pytest.raises(ValueError):
        Client("ftp://x").exec("1")


def test_unix_socket_and_token():
    s = Server("--workers", "1", "--policy", "default", unix=True, token="tok-123")
    try:
        v = Client(s.url, token="tok-123").exec("print('u')")
        assert v["stdout"] == "u\n"
        with pytest.raises(Unauthorized) as e:
            Client(s.url, token="nope").exec("print('u')")
        assert e.value.status == 401
        with pytest.raises(Unauthorized):
            Client(s.url).exec("print('u')")
    finally:
        s.stop()


def test_busy_raises_with_retry_after():
    s = Server("--workers", "1", "--queue", "1", "--policy", "default")
    try:
        ts = [threading.Thread(target=lambda: Client(s.url).exec(
            "import time; time.sleep(1.2)")) for _ in range(2)]
        for t in ts:
            t.start()
        assert wait_for(lambda: "pysnip_queue_depth 1" in Client(s.url).metrics(), 5)
        with pytest.raises(Busy) as e:
            Client(s.url).exec("print(1)")
        assert e.value.status == 429 and e.value.retry_after == 1.0
        for t in ts:
            t.join()
    finally:
        s.stop()


def test_server_error_carries_verdict():
    s = Server("--workers", "1", "--policy", "default")
    try:
        z = s.zygotes()["default"]
        out = {}

        def run():
            try:
                Client(s.url).exec("while True: pass", wall="4s")
            except ServerError as e:
                out["e"] = e
        t = threading.Thread(target=run)
        t.start()
        assert wait_for(lambda: "pysnip_workers_busy 1" in Client(s.url).metrics(), 5)
        time.sleep(0.2)
        os.kill(z, signal.SIGKILL)
        t.join(10)
        e = out["e"]
        assert e.status == 500 and e.verdict["status"] == "internal_error"
        assert Client(s.url).exec("print(1)")["status"] == "ok"
    finally:
        s.stop()
