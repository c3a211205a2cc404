"""The report pyshim writes for the host: one JSON object, built without importing json
(json costs ~10 ms of start-up through re) and with as little allocation as possible, since it
must also be written after a MemoryError.

Host-provided names in this namespace: _denials() (from the C audit hook)."""

_ESC = {i: "\\u%04x" % i for i in range(32)}
_ESC.update({0x22: '\\"', 0x5C: "\\\\", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"})


def _json(v):
    """JSON text of None/bool/int/str/dict/list/tuple. Runs no snippet code: str methods are
    called unbound, so a str subclass from the snippet cannot intervene."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return int.__repr__(v)
    if isinstance(v, str):
        try:
            str.encode(v, "utf-8")
        except UnicodeEncodeError:  # lone surrogates: spelled out, as no JSON parser takes them
            v = str.encode(v, "utf-8", "backslashreplace").decode("utf-8")
        return '"' + str.translate(v, _ESC) + '"'
    if isinstance(v, dict):
        return "{" + ", ".join([_json(k) + ": " + _json(x) for k, x in v.items()]) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join([_json(x) for x in v]) + "]"
    return _json(_safe_str(v))


def _safe_str(v):
    try:
        s = str(v)
        return str.__str__(s) if isinstance(s, str) else "<unprintable>"
    except BaseException:
        return "<unprintable %s object>" % type(v).__name__


def _source_line(src, n):
    """Line n (1-based) of the snippet's source (a read-only memoryview of its bytes),
    decoded leniently, or None. Walks the source in chunks: a huge snippet is never copied."""
    if not isinstance(n, int) or n < 1 or src is None:
        return None
    chunk, pos, line_no, cur = 1 << 20, 0, 1, []
    while pos < len(src):
        block = bytes(src[pos:pos + chunk])
        pos += len(block)
        start = 0
        while line_no < n:
            nl = block.find(b"\n", start)
            if nl < 0:
                break
            line_no, start = line_no + 1, nl + 1
        if line_no < n:
            continue
        end = block.find(b"\n", start)
        cur.append(block[start:] if end < 0 else block[start:end])
        if end >= 0:
            break
        while pos < len(src):  # the line goes on into the next chunk
            block = bytes(src[pos:pos + chunk])
            pos += len(block)
            end = block.find(b"\n")
            cur.append(block if end < 0 else block[:end])
            if end >= 0:
                break
        break
    if line_no < n or not cur:
        return None
    return b"".join(cur).decode("utf-8", "replace").strip()


def _type_name(t):
    mod = getattr(t, "__module__", "builtins")
    name = getattr(t, "__qualname__", None) or t.__name__
    if mod in ("builtins", "__main__") or not isinstance(mod, str):
        return str.__str__(name)
    return mod + "." + name


_KEEP = 50


def _describe(exc, src):
    """type, message and the snippet's own frames (no pyshim, no stdlib frames)."""
    frames = []
    # A runaway recursion leaves a million frames: keep the outermost and innermost _KEEP
    # (as CPython's own traceback cuts repeats), and say how many were left out.
    total, tb = 0, exc.__traceback__
    while tb is not None:
        total += tb.tb_frame.f_code.co_filename == "<snippet>"
        tb = tb.tb_next
    index, omitted, tb = 0, 0, exc.__traceback__
    while tb is not None:
        co = tb.tb_frame.f_code
        if co.co_filename == "<snippet>":
            if index < _KEEP or index >= total - _KEEP:
                frames.append({"file": "<snippet>", "line": tb.tb_lineno,
                               "function": co.co_name, "text": _source_line(src, tb.tb_lineno)})
            else:
                omitted += 1
            index += 1
        tb = tb.tb_next
    if isinstance(exc, SyntaxError) and exc.filename == "<snippet>":
        text = exc.text
        text = text.strip() if isinstance(text, str) else _source_line(src, exc.lineno)
        frames.append({"file": "<snippet>", "line": exc.lineno, "function": "<module>",
                       "text": text})
    info = {
        "type": _type_name(type(exc)),
        "message": _safe_str(exc),
        "line": frames[-1]["line"] if frames else None,
        "traceback": frames,
        "frames_omitted": omitted,
    }
    if isinstance(exc, OSError):
        # the kernel's errno and the path, read through OSError's own slots (a subclass's
        # properties would run snippet code): the host tells a Landlock denial (EACCES) or
        # an allocation the memory limit refused (ENOMEM) from them
        err, name = OSError.errno.__get__(exc), OSError.filename.__get__(exc)
        if type(err) is int:
            info["errno"] = err
        if type(name) in (str, bytes):
            info["filename"] = _safe_str(name if type(name) is str else
                                         name.decode("utf-8", "surrogateescape"))
    return info


def _report(exc, exc_info, exit_kind, system_exit_code, memory_error, extra=None):
    denials = [{"layer": d[0], "event": d[1], "detail": d[2], "line": d[3]}
               for d in _denials()]
    # an import the stdlib made for the snippet (asyncio importing socket) was refused without
    # a record; if that refusal is what ended the snippet, it is the snippet's denial
    if (exc_info is not None and exc_info["type"] == "pysnip.PolicyImportError"
            and not any(d["layer"] == "import" and d["detail"] == exc.name for d in denials)):
        denials.append({"layer": "import", "event": "import", "detail": _safe_str(exc.name),
                        "line": exc_info["line"]})
    report = {
        "exception": exc_info,
        "denials": denials,
        "exit": exit_kind,
        "system_exit_code": system_exit_code,
        "memory_error": memory_error,
    }
    if extra:
        report.update(extra)
    return _json(report).encode("utf-8")
