"""Client for `pysnip serve`: run Python snippets in a remote sandbox, get the verdict as a dict.

Standard library only. TCP or a Unix socket:

    from pysnip_client import Client
    c = Client("http://127.0.0.1:8080")            # or Client("unix:/run/pysnip.sock")
    v = c.exec("print(input()*2)", stdin="ab", wall="1s", memory="64M")
    v["status"], v["stdout"]                        # 'ok', 'abab\\n'
    c.batch("print(int(input())+1)", ["1", "2"])    # a list of verdicts

Limits may only tighten the server's policy: ``wall``, ``cpu`` (durations: "500ms", "2s", or a
number of seconds), ``memory``, ``output``, ``file_size``, ``scratch`` (sizes: "64M", or a number
of bytes). HTTP errors raise a subclass of ``PysnipError`` carrying the status and the server's
message; a host failure during a run raises ``ServerError`` whose ``verdict`` holds the
``internal_error`` verdict.

Sessions keep a notebook's state across cells (a cell that dies is rolled back):

    with c.session(policy="notebook", idle="10m") as s:
        s.exec("x = 41")
        s.exec("x += 1; x")["result"]["data"]["text/plain"]   # '42'
        s.exec("import os; os.kill(os.getpid(), 9)")["state"] # 'rolled_back'
"""
import http.client
import json
import socket

__all__ = ["Client", "Session", "PysnipError", "BadRequest", "Unauthorized", "Busy",
           "ServerError", "SessionGone", "exec"]
__version__ = "0.1.0"


class PysnipError(Exception):
    """An HTTP error answer from the server."""

    def __init__(self, status, message, field=None, body=None, verdict=None):
        self.status = status
        self.message = message
        self.field = field
        self.body = body
        self.verdict = verdict
        where = " (field %s)" % field if field else ""
        super().__init__("pysnip server: HTTP %d: %s%s" % (status, message, where))


class BadRequest(PysnipError):
    """400/404/405/413: the request itself is wrong; `field` names the offending field."""


class Unauthorized(PysnipError):
    """401: missing or wrong bearer token."""


class Busy(PysnipError):
    """429/503: every worker busy and the queue full, or the server is draining.

    `retry_after` is the server's hint in seconds."""

    def __init__(self, *args, retry_after=None, **kw):
        super().__init__(*args, **kw)
        self.retry_after = retry_after


class SessionGone(PysnipError):
    """404/410 on a session: it ended (a session limit, idle timeout) or was deleted."""


class ServerError(PysnipError):
    """5xx: the host failed; `verdict` is the internal_error verdict when the server sent one."""


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=None):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if self.timeout is not None:
            s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


def _error_class(status):
    if status == 401:
        return Unauthorized
    if status in (429, 503):
        return Busy
    if status >= 500:
        return ServerError
    return BadRequest


class Client:
    """A keep-alive connection to one server. Not thread-safe: use one Client per thread."""

    def __init__(self, url="http://127.0.0.1:8080", token=None, timeout=60.0):
        self.url = url
        self.token = token
        self.timeout = timeout
        self._conn = None

    def _connect(self):
        if self.url.startswith("unix:"):
            return _UnixHTTPConnection(self.url[5:], timeout=self.timeout)
        if self.url.startswith("http://"):
            hostport = self.url[7:].split("/", 1)[0]
            return http.client.HTTPConnection(hostport, timeout=self.timeout)
        raise ValueError("url must be http://HOST:PORT or unix:/path, not %r" % self.url)

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def request(self, method, path, body=None):
        """One request; returns (status, headers, parsed-or-raw body). Retries once on a
        connection the server had closed (keep-alive timeout)."""
        headers = {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        for attempt in (0, 1):
            if self._conn is None:
                self._conn = self._connect()
            try:
                self._conn.request(method, path, body=data, headers=headers)
                resp = self._conn.getresponse()
                raw = resp.read()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.close()
                if attempt:
                    raise
        if resp.getheader("Connection", "").lower() == "close":
            self.close()
        ctype = resp.getheader("Content-Type", "")
        parsed = json.loads(raw) if ctype.startswith("application/json") and raw else raw
        return resp.status, resp, parsed

    def _check(self, status, resp, parsed):
        if status < 400:
            return parsed
        msg, field, verdict = None, None, None
        if isinstance(parsed, dict):
            if "version" in parsed and "status" in parsed:
                verdict = parsed
                msg = parsed.get("error", parsed["status"])
            else:
                msg, field = parsed.get("error"), parsed.get("field")
        elif isinstance(parsed, list):
            verdict = parsed
            msg = "a run of the batch failed in the host"
        cls = _error_class(status)
        kw = dict(field=field, body=parsed, verdict=verdict)
        if cls is Busy:
            ra = resp.getheader("Retry-After")
            kw["retry_after"] = float(ra) if ra else None
        raise cls(status, msg or "HTTP %d" % status, **kw)

    @staticmethod
    def _body(code, stdin, policy, limits):
        body = {"code": code}
        if stdin is not None:
            body["stdin"] = stdin
        if policy is not None:
            body["policy"] = policy
        if limits:
            body["limits"] = limits
        return body

    def exec(self, code, stdin=None, policy=None, **limits):
        """Run code (str); returns the verdict dict (see the README's verdict table)."""
        return self._check(*self.request("POST", "/v1/exec",
                                         self._body(code, stdin, policy, limits)))

    def batch(self, code, stdins, policy=None, **limits):
        """Run code once per stdin input (a judge's test cases); returns a list of verdicts."""
        return self._check(*self.request("POST", "/v1/batch",
                                         self._body(code, list(stdins), policy, limits)))

    def healthz(self):
        return self._check(*self.request("GET", "/healthz"))

    def metrics(self):
        """The Prometheus text of GET /metrics."""
        out = self._check(*self.request("GET", "/metrics"))
        return out.decode() if isinstance(out, bytes) else out

    def session(self, policy=None, idle=None, lifetime=None, session_cpu=None, cells=None,
                **limits):
        """A new session (POST /v1/sessions); use it as a context manager so that it is
        deleted at the end. limits: the cells' (wall, cpu, output; memory is the session's),
        tightening the policy's; idle, lifetime, session_cpu (durations) and cells (a count)
        end the session when reached."""
        body = {}
        if policy is not None:
            body["policy"] = policy
        if limits:
            body["limits"] = {k: str(v) for k, v in limits.items()}
        sl = {k: v for k, v in (("idle", idle), ("lifetime", lifetime), ("cpu", session_cpu),
                                ("cells", cells)) if v is not None}
        if sl:
            body["session"] = {k: (v if k == "cells" else str(v)) for k, v in sl.items()}
        info = self._check(*self.request("POST", "/v1/sessions", body))
        return Session(self, info)


class Session:
    """A server-side session: cells over a kept state. Made by Client.session()."""

    def __init__(self, client, info):
        self.client = client
        self.info = info
        self.id = info["id"]

    def _path(self, verb=""):
        return "/v1/sessions/%s%s" % (self.id, verb)

    def _call(self, method, verb="", body=None):
        status, resp, parsed = self.client.request(method, self._path(verb), body)
        if status in (404, 410):
            msg = parsed.get("error") if isinstance(parsed, dict) else None
            raise SessionGone(status, msg or "session gone", body=parsed)
        return self.client._check(status, resp, parsed)

    def exec(self, code, **limits):
        """Run one cell; returns its verdict (with state, result, display, execution_count)."""
        body = {"code": code}
        if limits:
            body["limits"] = {k: str(v) for k, v in limits.items()}
        return self._call("POST", "/exec", body)

    def interrupt(self):
        """Interrupt the running cell (KeyboardInterrupt; killed and rolled back if it does
        not stop). Safe from another thread: it uses a connection of its own."""
        with Client(self.client.url, token=self.client.token,
                    timeout=self.client.timeout) as c:
            Session(c, self.info)._call("POST", "/interrupt", {})

    def status(self):
        return self._call("GET")

    def close(self):
        """End the session (DELETE): its processes and scratch are gone. Idempotent."""
        try:
            self._call("DELETE")
        except SessionGone:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def exec(code, stdin=None, policy=None, *, url="http://127.0.0.1:8080", token=None, **limits):
    """One-off: Client(url, token).exec(code, stdin, policy, **limits)."""
    with Client(url, token=token) as c:
        return c.exec(code, stdin=stdin, policy=policy, **limits)
