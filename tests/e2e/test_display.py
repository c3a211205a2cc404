"""Rich results (issue 11, step 3): the verdict's `display`, Jupyter MIME bundles in order.
display(obj) follows IPython's precedence; matplotlib figures open at the end become PNGs as
with the inline backend; a PIL Image is a PNG, a DataFrame text/html + text/plain; display
bytes count against the output cap."""
import base64
import io
import json
import subprocess
import sys

import pytest

from conftest import PYSNIP, run_exec

pytestmark = pytest.mark.skipif(
    subprocess.run(["/usr/bin/python3", "-c", "import numpy, pandas, PIL, matplotlib"],
                   capture_output=True).returncode != 0,
    reason="Debian's python3-numpy/pandas/pil/matplotlib are not installed (tools/install-deps)")

SCI = ("--policy", "scientific")


def Image():
    if "/usr/lib/python3/dist-packages" not in sys.path:
        sys.path.append("/usr/lib/python3/dist-packages")
    from PIL import Image as I
    return I


def ok(code, *args):
    v, rc, err = run_exec(code, *args)
    assert rc == 0, err
    assert v["status"] == "ok", (v["exception"], v["stderr"][-2000:])
    return v


def png(b):
    return Image().open(io.BytesIO(base64.b64decode(b["data"]["image/png"])))


def test_display_is_always_in_the_verdict():
    v = ok("print(1)")
    assert v["display"] == []


REPRS = '''
class Mime:
    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/html": "<b>mime</b>", "application/x-custom": "c"}, {"text/html": {"k": 1}}
    def _repr_html_(self):
        return "<i>never: the mimebundle wins</i>"

class Many:
    def _repr_html_(self):
        return "<p>many</p>"
    def _repr_markdown_(self):
        return "**many**"
    def _repr_latex_(self):
        return "$m$"
    def _repr_json_(self):
        return {"m": [1, 2]}, {"expanded": True}
    def _repr_svg_(self):
        return "<svg/>"
    def _repr_png_(self):
        return b"\\x89PNG fake"
    def __repr__(self):
        return "Many()"

class Nothing:
    def _repr_html_(self):
        return None

display(Mime(), Many())
display(Nothing(), metadata={"note": "x"})
display({"text/plain": "raw"}, raw=True)
'''


def test_ipython_precedence():
    v = ok(REPRS)
    mime, many, nothing, raw = v["display"]
    assert mime["data"]["text/html"] == "<b>mime</b>"
    assert mime["data"]["application/x-custom"] == "c"
    assert mime["metadata"] == {"text/html": {"k": 1}}
    assert mime["data"]["text/plain"].startswith("<__main__.Mime object")
    assert many["data"] == {
        "text/html": "<p>many</p>", "text/markdown": "**many**", "image/svg+xml": "<svg/>",
        "image/png": base64.b64encode(b"\x89PNG fake").decode(), "text/latex": "$m$",
        "application/json": {"m": [1, 2]}, "text/plain": "Many()"}
    assert many["metadata"] == {"application/json": {"expanded": True}}
    assert list(nothing["data"]) == ["text/plain"] and nothing["metadata"] == {"note": "x"}
    assert raw["data"] == {"text/plain": "raw"}


def test_pil_image_and_dataframe():
    v = ok("from PIL import Image\nimport pandas as pd\n"
           "display(Image.new('RGB', (7, 5), (1, 2, 3)))\n"
           "display(pd.DataFrame({'a': [1, 2], 'b': ['x', 'y']}))", *SCI)
    im, df = v["display"]
    got = png(im)
    assert got.size == (7, 5) and got.getpixel((0, 0)) == (1, 2, 3)
    assert set(df["data"]) >= {"text/html", "text/plain"}
    assert "<table" in df["data"]["text/html"] and "x" in df["data"]["text/plain"]


def expected_png_size(code):
    """The same figure drawn outside the sandbox by the system matplotlib, the inline way."""
    out = subprocess.run(["/usr/bin/python3", "-c", """
import io, sys
sys.path.append("/usr/lib/python3/dist-packages")
import matplotlib; matplotlib.use("Agg")
import matplotlib.pyplot as plt
%s
from PIL import Image
fig = plt.gcf(); b = io.BytesIO()
fig.canvas.print_figure(b, format="png", bbox_inches="tight", facecolor=fig.get_facecolor(),
                        edgecolor=fig.get_edgecolor())
print(*Image.open(b).size)
""" % code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return tuple(int(x) for x in out.stdout.split())


PLOT = ("fig, ax = plt.subplots(figsize=(4, 3), dpi=100)\n"
        "ax.plot(range(100), [x * x for x in range(100)])\n")


def test_open_figures_become_pngs_at_the_end():
    v = ok("import matplotlib.pyplot as plt\n" + PLOT +
           "plt.figure()   # no axes: skipped, as the inline backend does\n"
           "print(len(plt.get_fignums()))", *SCI)
    assert v["stdout"] == "2\n"
    assert len(v["display"]) == 1
    b = v["display"][0]
    assert set(b["data"]) == {"image/png", "text/plain"}
    assert png(b).size == expected_png_size(PLOT)
    assert png(b).format == "PNG"


def test_display_of_a_figure_and_order_with_the_end():
    v = ok("import matplotlib.pyplot as plt\ndisplay('first')\n" + PLOT +
           "display(fig)\nplt.close(fig)\ndisplay('last')", *SCI)
    kinds = [sorted(b["data"]) for b in v["display"]]
    assert kinds == [["text/plain"], ["image/png", "text/plain"], ["text/plain"]]
    assert png(v["display"][1]).size == expected_png_size(PLOT)


def test_pandas_csv_plot_display(tmp_path):
    """The data-analysis job: a CSV in, a summary CSV out, the plot as a PNG display that
    opens with Pillow outside and has the expected size."""
    csv = tmp_path / "t.csv"
    csv.write_text("x,y\n" + "".join("%d,%d\n" % (i, i * i) for i in range(50)))
    out = tmp_path / "out"
    code = ("import pandas as pd\ndf = pd.read_csv('input/t.csv')\n"
            "df.describe().to_csv('output/summary.csv')\n"
            "ax = df.plot(x='x', y='y', figsize=(5, 4))\n")
    v = ok(code, *SCI, "--input", str(csv), "--output-dir", str(out))
    assert (out / "summary.csv").read_text().startswith(",x,y\ncount,50.0,50.0\n")
    assert len(v["display"]) == 1
    size = expected_png_size("import pandas as pd\ndf = pd.read_csv(%r)\n"
                             "ax = df.plot(x='x', y='y', figsize=(5, 4))" % str(csv))
    assert png(v["display"][0]).size == size


def test_display_counts_against_the_output_cap():
    v, rc, _ = run_exec("print('x' * 1000)\ndisplay('a' * 5000)\ndisplay('b' * 5000)",
                        "--output-limit", "8K")
    assert v["status"] == "output_limit" and v["truncated"] is True
    assert [b["data"]["text/plain"][:2] for b in v["display"]] == ["'a"]
    # control: under the cap, both
    v = ok("print('x' * 1000)\ndisplay('a' * 5000)\ndisplay('b' * 5000)", "--output-limit", "16K")
    assert len(v["display"]) == 2


def test_display_namespace_leads_nowhere_else():
    """display() is the snippet's to call, and its globals are the snippet's to read: none of
    the rest of pyshim (finish, the report, the denials) is reachable from them."""
    v = ok("g = display.__globals__\n"
           "print(sorted(k for k in ('finish', '_report', '_denials', 'begin', '_display') "
           "if k in g))")
    assert v["stdout"] == "[]\n"


def test_forged_display_outputs_stay_valid_json():
    v = ok("g = display.__globals__\n"
           "g['_outputs'].extend([{'data': {'text/plain': object()}}, 'junk', {'data': 3}])")
    assert v["display"][0]["data"]["text/plain"].startswith("<object object")
    assert len(v["display"]) == 1


def test_served_display():
    import servekit
    s = servekit.Server("--policy", "scientific")
    try:
        st, _, v = s.exec("import matplotlib.pyplot as plt\n" + PLOT + "display('x')")
        assert st == 200 and v["status"] == "ok", v
        assert [sorted(b["data"]) for b in v["display"]] == [["text/plain"],
                                                            ["image/png", "text/plain"]]
        assert png(v["display"][1]).size == expected_png_size(PLOT)
        # figures are closed at the end: the next run on a fresh worker has none
        st, _, v = s.exec("import matplotlib.pyplot as plt\nprint(plt.get_fignums())")
        assert v["stdout"] == "[]\n" and v["display"] == []
    finally:
        s.stop()


# A run that ends with nothing to describe is reported from C without pyshim's finish()
# (host/python/interp.c, finished_plainly): under the scientific policy threading and pyplot
# are always imported, so "nothing" is decided on their state. Each case here is one that
# must still go through finish(), next to its plain twin.
PLAIN_CASES = {
    # a non-daemon thread still running at the end is waited for, as at interpreter exit
    "thread": ("import threading, time\n"
               "threading.Thread(target=lambda: (time.sleep(0.05), print('late'))).start()",
               lambda v: v["stdout"] == "late\n"),
    "thread_joined": ("import threading\nt = threading.Thread(target=print, args=('in',))\n"
                      "t.start(); t.join()", lambda v: v["stdout"] == "in\n"),
    # a figure open at the end becomes a PNG; one closed by the snippet does not
    "figure": ("import matplotlib.pyplot as plt\nplt.plot([1, 2])",
               lambda v: [sorted(b["data"]) for b in v["display"]] == [["image/png",
                                                                       "text/plain"]]),
    "figure_closed": ("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.close('all')",
                      lambda v: v["display"] == []),
    # a file left in output/ is collected
    "output": ("open('output/r.txt', 'w').write('r')",
               lambda v: [f["path"] for f in v["files"]] == ["r.txt"]),
    "output_empty": ("import os\nopen('output/r.txt', 'w').write('r')\nos.remove('output/r.txt')",
                     lambda v: v["files"] == [] and v["files_refused"] == []),
}


@pytest.mark.parametrize("case", sorted(PLAIN_CASES))
def test_served_plain_ending_still_reports_threads_figures_and_files(case):
    import servekit
    code, check = PLAIN_CASES[case]
    s = servekit.Server("--policy", "scientific")
    try:
        for _ in range(2):      # a spare forked after the first run too
            st, _, v = s.exec(code)
            assert st == 200 and v["status"] == "ok", v
            assert check(v), v
    finally:
        s.stop()
