"""Session cells (host/python/interp_cell.c, host/session/): a cell is compiled here, split
as IPython does (the last expression apart, its value the cell's result), and evaluated by C
at the bottom of the stack; its report adds "result" and "display" to the run's (report.py).

Host-provided names (interp_cell.c, given to cell_setup): _input_line(prompt, password),
_display_out(json_bytes)."""

_PyCF_ONLY_AST = 0x400
_cell = {"main": None, "outputs": [], "expression": None}

# The MIME types of IPython's display formatter, in its order: (method, mime type, binary).
_REPR_METHODS = (
    ("_repr_html_", "text/html", False),
    ("_repr_markdown_", "text/markdown", False),
    ("_repr_svg_", "image/svg+xml", False),
    ("_repr_png_", "image/png", True),
    ("_repr_jpeg_", "image/jpeg", True),
    ("_repr_latex_", "text/latex", False),
    ("_repr_json_", "application/json", False),
    ("_repr_javascript_", "application/javascript", False),
)


def _b64(data):
    import binascii
    return binascii.b2a_base64(bytes(data), newline=False).decode("ascii")


def _result_bundle(obj):
    """A Jupyter MIME bundle of obj, by pyshim/display.py's rules (IPython's precedence, PIL
    images as PNG, DataFrames as HTML, figures), the same as a one-shot run's display();
    without them (a policy without display.py's namespace, or its bundle() failing), text/plain
    from repr plus each _repr_*_ the object has."""
    fmt = _cell.get("bundle")
    if fmt is not None:
        try:
            b = fmt(obj)
            data, md = b["data"], b.get("metadata") or {}
            if type(data) is dict and type(md) is dict and type(data.get("text/plain")) is str:
                return {"data": dict(data), "metadata": dict(md)}
        except BaseException:
            pass
    return _repr_bundle(obj)


def _repr_bundle(obj):
    try:
        text = repr(obj)
        text = str.__str__(text) if isinstance(text, str) else "<unprintable>"
    except BaseException as e:
        text = "<repr failed: %s>" % _safe_str(e)
    data, metadata = {"text/plain": text}, {}
    for name, mime, binary in _REPR_METHODS:
        try:
            method = getattr(obj, name, None)
            if method is None or not callable(method) or isinstance(obj, type):
                continue
            value = method()
            if isinstance(value, tuple) and len(value) == 2:
                value, md = value
                if isinstance(md, dict):
                    metadata[mime] = md
            if value is None:
                continue
            if binary and isinstance(value, (bytes, bytearray, memoryview)):
                value = _b64(value)
            elif mime == "application/json" and not isinstance(value, (dict, list)):
                continue
            elif not binary and mime != "application/json" and not isinstance(value, str):
                continue
            data[mime] = value
        except BaseException:
            continue  # as IPython: a failing _repr_*_ leaves its type out
    return {"data": data, "metadata": metadata}


def _output(bundle):
    """One display bundle: to the front now (streamed), and to the verdict's "display"."""
    _cell["outputs"].append(bundle)
    _flush()  # what the cell printed before it comes first
    _display_out(_json(bundle).encode("utf-8"))


def display(*objs, **kwargs):
    """display() in a cell: each object's bundle goes to the front as it is made and to the
    verdict's "display", in order."""
    raw = kwargs.get("raw", False)
    for obj in objs:
        if raw and isinstance(obj, dict):
            _output({"data": obj, "metadata": kwargs.get("metadata") or {}})
        else:
            _output(_result_bundle(obj))


def clear_output(wait=False):
    """IPython.display.clear_output() in a cell: the front end clears the cell's output, at
    once or (wait=True) when the next output comes. It goes out in order with the streams and
    displays, as a display frame of its own shape, {"clear_output": {"wait": bool}} (no
    "data"; the kernel publishes it as clear_output), and is not one of the verdict's
    "display" bundles."""
    _flush()
    _display_out(_json({"clear_output": {"wait": bool(wait)}}).encode("utf-8"))


def _cell_input(prompt=""):
    """builtins.input in a session: the line comes from the session's front (Jupyter's
    input_request), never from the holder's channels."""
    _flush()
    return _input_line(_safe_str(prompt), False)


def cell_setup(input_line, display_out, main):
    """Holder, once: output streams as it is written, input() and display() as in a notebook,
    and the compiler's AST types built now rather than in every cell's fork."""
    import builtins
    global _input_line, _display_out
    _input_line, _display_out = input_line, display_out
    _cell["main"] = main
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(line_buffering=True)
        except BaseException:
            pass
    builtins.input = _cell_input
    # a cell's display() streams to the front (display.py's collects for a one-shot verdict);
    # its formatting is display.py's, taken now, before any cell could replace it
    builtins.display = display
    builtins.clear_output = clear_output
    disp = globals().get("_display")
    _cell["bundle"] = disp.get("bundle") if isinstance(disp, dict) else None
    cell_compile(memoryview(b"pass\n"))
    return True


def cell_compile(src):
    """(body, last expression or None): code objects named "<snippet>" as a run's are, so
    that tracebacks, denials and the audit hook treat a cell as a snippet."""
    _cell["outputs"] = []
    tree = compile(bytes(src), "<snippet>", "exec", _PyCF_ONLY_AST, dont_inherit=True)
    expr = None
    if tree.body and type(tree.body[-1]).__name__ == "Expr":
        last = tree.body.pop()
        expression = _cell["expression"]
        if expression is None:  # ast.Expression without importing ast
            for cls in type(tree).__mro__[1].__subclasses__():
                if cls.__name__ == "Expression":
                    expression = _cell["expression"] = cls
        expr = compile(expression(last.value), "<snippet>", "eval", dont_inherit=True)
    body = compile(tree, "<snippet>", "exec", dont_inherit=True)
    return body, expr


def cell_rehearse():
    """A spare's warm-up before its command (host/session/holder.c): a cell's compile (both
    halves) and report, thrown away, so that the pages they write are copied from the holder
    now rather than on the cell's path. Nothing is run, shown, flushed or kept."""
    cell_compile(memoryview(b"pass\n0\n"))
    _report(None, None, "ok", None, False)
    _json({"result": None, "display": [], "execution_count": 0})
    _cell["outputs"] = []


def _open_figures():
    """matplotlib figures still open at the cell's end, as image/png bundles (then closed)."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    try:
        import io
        for num in plt.get_fignums():
            fig = plt.figure(num)
            buf = io.BytesIO()
            fig.savefig(buf, format="png")
            _output({"data": {"image/png": _b64(buf.getvalue()), "text/plain": "<Figure>"},
                     "metadata": {}})
        plt.close("all")
    except BaseException:
        pass


def cell_join_threads():
    """At a cell's end its non-daemon threads are joined, as at interpreter exit: threads do
    not outlive a cell (the daemon ones still running are stopped: host/session/holder.c)."""
    th = sys.modules.get("threading")
    if th is None:
        return
    me, main = th.current_thread(), th.main_thread()
    for t in th.enumerate():
        if t is not me and t is not main and not t.daemon:
            t.join()


def cell_finish(exc, src, denied, value, has_value, count, threads=0):
    """(report bytes, exit code) of a cell: the run's report plus result and display.
    SystemExit is the cell's exception, as in IPython. threads: the cell's threads still
    running at its end (daemon ones; the others were joined), which the session stops."""
    result, code = None, 0
    if exc is None and has_value and value is not None:
        try:
            result = _result_bundle(value)
            main = _cell["main"]
            if main is not None:
                main["_"] = value
        except BaseException as e:
            exc = e
    if exc is None:
        _open_figures()
    exc_info, kind, memory_error = None, "ok", False
    if exc is not None:
        kind, code = "exception", 1
        memory_error = isinstance(exc, MemoryError)
        exc_info = _describe(exc, src)
        if denied:
            exc_info["denied"] = True
    _flush()
    rep = _report(exc, exc_info, kind, None, memory_error)
    extra = _json({"result": result, "display": _cell["outputs"], "execution_count": count,
                   "threads_running": threads})
    return rep[:-1] + b", " + extra[1:].encode("utf-8"), code


_KEYWORDS = ("False", "None", "True", "and", "as", "assert", "async", "await", "break",
             "class", "continue", "def", "del", "elif", "else", "except", "finally", "for",
             "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or",
             "pass", "raise", "return", "try", "while", "with", "yield")


def _token_at(code, cursor, right):
    start = cursor
    while start > 0 and (code[start - 1].isalnum() or code[start - 1] in "_."):
        start -= 1
    end = cursor
    while right and end < len(code) and (code[end].isalnum() or code[end] == "_"):
        end += 1
    return start, end, code[start:end]


def _complete(code, cursor, g):
    import builtins
    start, _, token = _token_at(code, cursor, False)
    if "." in token:
        base, _, attr = token.rpartition(".")
        try:
            names = [base + "." + n for n in dir(eval(base, g)) if n.startswith(attr)]
        except BaseException:
            names = []
    else:
        pool = set(g) | set(dir(builtins)) | set(_KEYWORDS)
        names = [n for n in pool if isinstance(n, str) and n.startswith(token)]
    return {"matches": sorted(names), "cursor_start": start, "cursor_end": cursor}


def _inspect(code, cursor, g):
    start, end, token = _token_at(code, cursor, True)
    token = token.strip(".")
    if not token:
        return {"found": False, "data": {}}
    try:
        obj = eval(token, g)
    except BaseException:
        return {"found": False, "data": {}}
    doc = getattr(obj, "__doc__", None)
    text = "Type: %s\nString form: %s" % (_type_name(type(obj)), _result_bundle(obj)["data"]
                                           ["text/plain"][:1000])
    if isinstance(doc, str):
        text += "\nDocstring: " + doc
    return {"found": True, "data": {"text/plain": text}}


_INCOMPLETE = ("was never closed", "expected an indented block", "unterminated triple-quoted",
               "unexpected EOF")


def _is_complete(code):
    try:
        compile(code, "<snippet>", "exec", _PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as e:
        msg = _safe_str(e.msg)
        if any(m in msg for m in _INCOMPLETE):
            return {"status": "incomplete", "indent": "    "}
        return {"status": "invalid"}
    except BaseException:
        return {"status": "invalid"}
    lines = [ln for ln in code.split("\n") if ln.strip()]
    if lines and not code.endswith("\n\n") and (lines[-1][:1] in (" ", "\t") or
                                               lines[-1].rstrip().endswith(":")):
        indent = lines[-1][:len(lines[-1]) - len(lines[-1].lstrip())]
        return {"status": "incomplete", "indent": indent}
    return {"status": "complete"}


def cell_query(kind, code, cursor, g):
    """A disposable fork's answer: (report bytes, 0)."""
    if kind == "complete":
        answer = _complete(code, cursor, g)
    elif kind == "inspect":
        answer = _inspect(code, cursor, g)
    elif kind == "is_complete":
        answer = _is_complete(code)
    else:
        answer = {"error": "unknown query %s" % _safe_str(kind)}
    return _json(answer).encode("utf-8"), 0
