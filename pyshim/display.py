"""Rich results as Jupyter MIME bundles, the same object in exec, serve, sessions and the kernel.

    bundle(obj) -> {"data": {mime: value}, "metadata": {mime: {...}}}

follows IPython's DisplayFormatter: obj._repr_mimebundle_() when it gives anything, else every
one of _repr_html_, _repr_markdown_, _repr_svg_, _repr_png_, _repr_jpeg_, _repr_latex_,
_repr_json_ that gives something (a method may return data or (data, metadata)), and text/plain
from repr() always. Binary images (PNG, JPEG) are base64 text, as in a notebook file. A
matplotlib Figure is a PNG as the inline backend makes it (bbox_inches="tight"); a PIL Image
has its own _repr_png_.

display(*objs, metadata=None) appends their bundles to the run's outputs; at the end of the
run, flush() adds the matplotlib figures still open (those with axes, as the inline backend
does), closes them, and hands every bundle to the report.

This file runs in a namespace of its own (host/python/interp.c): the snippet calls into it and
can reach its globals, so nothing here leads back to the rest of pyshim. The session engine
and the kernel call bundle() for a cell's result; keep it self-contained."""

import builtins as _builtins

_outputs = []
_bytes = 0
MAX_BYTES = 8 << 20     # the host's output cap, set at setup; the host counts again

# (method, mime type): IPython's formatters, in its order
_FORMATS = (
    ("_repr_html_", "text/html"),
    ("_repr_markdown_", "text/markdown"),
    ("_repr_svg_", "image/svg+xml"),
    ("_repr_png_", "image/png"),
    ("_repr_jpeg_", "image/jpeg"),
    ("_repr_latex_", "text/latex"),
    ("_repr_json_", "application/json"),
)
_BINARY = ("image/png", "image/jpeg")


def _b64(data):
    import binascii
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def _text(mime, value):
    """A bundle value as JSON can carry it: base64 for binary images, str for text, the
    object itself for JSON; None when the method gave nothing usable."""
    if value is None:
        return None
    if mime in _BINARY:
        if isinstance(value, (bytes, bytearray, memoryview)):
            return _b64(bytes(value))
        return str(value) if isinstance(value, str) else None
    if mime == "application/json":
        return value if isinstance(value, (dict, list, str, int, float, bool)) else None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    return value if isinstance(value, str) else str(value)


def _call(obj, method):
    f = getattr(type(obj), method, None)
    if f is None or isinstance(obj, type):  # the class itself: its repr, not its methods'
        return None
    try:
        return getattr(obj, method)()
    except NotImplementedError:
        return None


def _figure_png(fig):
    import io
    buf = io.BytesIO()
    fig.canvas.print_figure(buf, format="png", bbox_inches="tight",
                            facecolor=fig.get_facecolor(), edgecolor=fig.get_edgecolor())
    return buf.getvalue()


def _is_figure(obj):
    import sys
    figure = sys.modules.get("matplotlib.figure")
    return figure is not None and isinstance(obj, figure.Figure)


def bundle(obj):
    """The MIME bundle of obj: {"data": {...}, "metadata": {...}}."""
    data, metadata = {}, {}
    if _is_figure(obj):
        data["image/png"] = _b64(_figure_png(obj))
    else:
        mb = _call(obj, "_repr_mimebundle_")
        if isinstance(mb, tuple) and len(mb) == 2:
            mb, md = mb
            if isinstance(md, dict):
                metadata.update(md)
        if isinstance(mb, dict) and mb:
            for mime, value in mb.items():
                v = _text(str(mime), value)
                if v is not None:
                    data[str(mime)] = v
        else:
            for method, mime in _FORMATS:
                r = _call(obj, method)
                if isinstance(r, tuple) and len(r) == 2:
                    r, md = r
                    if isinstance(md, dict):
                        metadata[mime] = md
                v = _text(mime, r)
                if v is not None:
                    data[mime] = v
    if "text/plain" not in data:
        data["text/plain"] = _builtins.repr(obj)
    return {"data": data, "metadata": metadata}


def _size(b):
    n = 0
    for v in b["data"].values():
        n += len(v) if isinstance(v, str) else 64
    return n


def _add(b):
    global _bytes
    _bytes += _size(b)
    if _bytes > MAX_BYTES:  # the host sees the run over its output cap and says so
        b = {"data": {"text/plain": "<display output over the cap>"}, "metadata": {},
             "truncated": True}
    _outputs.append(b)


def display(*objs, metadata=None, raw=False, **kwargs):
    """IPython's display(): each object's bundle, in order, into the run's outputs. raw=True:
    the objects are bundles already ({mime: value})."""
    for obj in objs:
        if raw and isinstance(obj, dict):
            b = {"data": {str(k): _text(str(k), v) for k, v in obj.items()}, "metadata": {}}
        else:
            b = bundle(obj)
        if isinstance(metadata, dict):
            b["metadata"].update(metadata)
        _add(b)


def rehearse_plot():
    """A plot spare's warm-up before its request (host/run/worker.c): a 100-point line plot
    rendered as flush() renders it, thrown away and closed, so that the pages matplotlib
    writes for a figure (what the worker shares with its zygote, the fonts its fork hook
    dropped) are copied and loaded now rather than on the run's path. Nothing is kept or
    counted: the outputs and their bytes are untouched, the figure numbers start at 1 again."""
    import sys
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    try:
        fig, ax = plt.subplots()
        ax.plot(range(100), [(i * 37) % 100 for i in range(100)])
        ax.set_title("rehearsal")
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        _b64(_figure_png(fig))
    finally:
        plt.close("all")


def flush():
    """The run's end: open figures with axes as PNG (then all closed), and every bundle."""
    import sys
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        try:
            for num in plt.get_fignums():
                fig = plt.figure(num)
                if fig.axes:
                    _add({"data": {"image/png": _b64(_figure_png(fig)),
                                   "text/plain": _builtins.repr(fig)}, "metadata": {}})
        finally:
            plt.close("all")
    out = list(_outputs)
    del _outputs[:]
    return out
