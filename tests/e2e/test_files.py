"""Files in and out (issue 11, step 2): `exec --input/--output-dir` and serve's "files".

Inputs are read-only at input/NAME (a read-only bind mount, or a root-owned copy where no mount
namespace exists); the caller's file never changes. Only regular files with one link leave
output/, under the count and byte caps, with names the host checks again; refusals are named;
nothing is written outside --output-dir."""
import base64
import hashlib
import io
import json
import os
import subprocess

import pytest

from conftest import PYSNIP, run_pysnip, needs_rlimit_as

pytestmark = pytest.mark.skipif(
    subprocess.run(["/usr/bin/python3", "-c", "import PIL, pandas"],
                   capture_output=True).returncode != 0,
    reason="Debian's python3-pil/pandas are not installed (tools/install-deps)")


def image_module():
    import sys
    if "/usr/lib/python3/dist-packages" not in sys.path:
        sys.path.append("/usr/lib/python3/dist-packages")
    from PIL import Image
    return Image


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def run_files(code, *args, timeout=120):
    p = subprocess.run([PYSNIP, "exec", *args, "-"], input=code.encode(), capture_output=True,
                       timeout=timeout)
    v = json.loads(p.stdout) if p.stdout.strip() else None
    return v, p.returncode, p.stderr.decode(errors="replace")


@pytest.fixture
def picture(tmp_path):
    Image = image_module()
    path = tmp_path / "in.png"
    im = Image.new("RGB", (64, 48))
    for x in range(64):
        for y in range(48):
            im.putpixel((x, y), (4 * x, 5 * y, 255 - 4 * x))
    im.save(path)
    return path


GRAYSCALE_JOB = """
from PIL import Image
im = Image.open("input/in.png").convert("L")
im.save("output/out.png")
try:
    open("input/in.png", "r+b").write(b"overwritten")
except OSError as e:
    print("input write", e.errno)
import socket
"""


@needs_rlimit_as
@pytest.mark.parametrize("layers", [(), ("--disable-layer", "namespaces")],
                         ids=["bind-mount", "copy"])
def test_reference_job_grayscale(picture, tmp_path, layers):
    """The seed's job: a PNG in, read-only; a grayscale PNG out with the right pixels; the
    input unchanged; network none; --memory 100M."""
    out = tmp_path / "out"
    before, mtime = sha(picture), os.stat(picture).st_mtime_ns
    v, rc, err = run_files(GRAYSCALE_JOB, "--policy", "scientific", "--memory", "100M",
                           "--input", str(picture), "--output-dir", str(out), *layers)
    assert rc == 0, err
    # the run ends at `import socket` (denied): everything before it happened
    assert v["status"] == "denied" and v["denials"][-1]["detail"] == "socket", v
    # EACCES: as root the file is root's and the run is not (bind or copy alike); EROFS: run
    # by an unprivileged caller, the bind-mounted file is the run's uid's own and only the
    # read-only mount refuses
    assert v["stdout"].split()[-1] == ("13" if os.geteuid() == 0 or layers else "30"), v["stdout"]
    if not layers:
        assert "net" in v["sandbox"]["namespaces"]
    assert sha(picture) == before and os.stat(picture).st_mtime_ns == mtime
    Image = image_module()
    got = Image.open(out / "out.png")
    want = Image.open(picture).convert("L")
    assert got.mode == "L" and got.size == (64, 48)
    assert list(got.getdata()) == list(want.getdata())
    f = v["files"]
    assert [x["path"] for x in f] == ["out.png"]
    assert f[0]["size"] == os.path.getsize(out / "out.png")
    assert f[0]["sha256"] == sha(out / "out.png")
    assert v["limits"]["memory_bytes"] == 100 << 20


def test_input_is_a_read_only_mount(picture):
    """Root in the worker (identity layer off) may write any file it can open: the bind mount
    itself is what refuses (EROFS), and the caller's file is unchanged."""
    before = sha(picture)
    v, rc, err = run_files("try:\n    open('input/in.png', 'r+b').write(b'x')\n"
                           "except OSError as e:\n    print(e.errno)",
                           "--input", str(picture), "--disable-layer", "identity")
    assert rc == 0 and v["status"] == "ok", v
    assert v["stdout"].strip() == "30"
    assert sha(picture) == before


def test_input_rename_and_listing(picture, tmp_path):
    v, rc, err = run_files("import os\nprint(sorted(os.listdir('input')))\n"
                           "print(open('input/pic.png', 'rb').read(8) == b'\\x89PNG\\r\\n\\x1a\\n')",
                           "--policy", "scientific", "--input", "pic.png=%s" % picture,
                           "--input", "%s" % picture)
    assert rc == 0, err
    assert v["stdout"].split("\n")[:2] == ["['in.png', 'pic.png']", "True"]


@pytest.mark.parametrize("arg,why", [
    ("../x=/etc/hostname", "one path component"),
    ("a/b=/etc/hostname", "one path component"),
    ("/nonexistent/file", "No such file"),
    ("/etc", "not a regular file"),
])
def test_bad_inputs_are_usage_errors(arg, why):
    v, rc, err = run_files("print(1)", "--input", arg)
    assert rc == 1 and v is None
    assert why in err, err


def test_same_input_name_twice_is_an_error(picture):
    v, rc, err = run_files("print(1)", "--input", str(picture), "--input", "in.png=/etc/hostname")
    assert rc == 1 and "given twice" in err


def test_pandas_csv_in_summary_out(tmp_path):
    csv = tmp_path / "data.csv"
    csv.write_text("city,temp\n" + "".join("c%d,%d\n" % (i % 3, 10 + i) for i in range(30)))
    out = tmp_path / "out"
    v, rc, err = run_files("""
import pandas as pd
df = pd.read_csv("input/data.csv")
df.groupby("city")["temp"].agg(["count", "mean"]).to_csv("output/summary.csv")
ax = df.plot(y="temp")
ax.figure.savefig("output/plot.png")
""", "--policy", "scientific", "--input", str(csv), "--output-dir", str(out))
    assert rc == 0 and v["status"] == "ok", (err, v and v["exception"])
    assert (out / "summary.csv").read_text().splitlines() == [
        "city,count,mean", "c0,10,23.5", "c1,10,24.5", "c2,10,25.5"]
    Image = image_module()
    assert Image.open(out / "plot.png").size == (640, 480)
    assert sorted(f["path"] for f in v["files"]) == ["plot.png", "summary.csv"]


# ---- attacks on the way out ----

def refused(v):
    return {r["path"]: r["reason"] for r in v["files_refused"]}


def test_symlink_hardlink_and_dirs(tmp_path):
    out = tmp_path / "out"
    v, rc, err = run_files("""
import os
os.symlink("/etc/passwd", "output/passwd")
os.symlink("../input", "output/up")
open("output/a", "w").write("a")
os.link("output/a", "output/b")
os.makedirs("output/d/e")
open("output/d/e/f.txt", "w").write("deep")
""", "--output-dir", str(out))
    assert rc == 0 and v["status"] == "ok", v
    r = refused(v)
    assert r["passwd"] == "a symlink" and r["up"] == "a symlink"
    assert r["a"].startswith("a hard link") and r["b"].startswith("a hard link")
    assert [f["path"] for f in v["files"]] == ["d/e/f.txt"]
    assert sorted(os.path.relpath(os.path.join(d, f), out)
                  for d, _, fs in os.walk(out) for f in fs) == ["d/e/f.txt"]
    assert (out / "d/e/f.txt").read_text() == "deep"


def test_fifo_is_refused_without_blocking(tmp_path):
    """mknod is seccomp-denied in every policy; with that layer off the fifo can be made, and
    the collector must neither block on it nor let it out."""
    out = tmp_path / "out"
    v, rc, err = run_files("import os\nos.mkfifo('output/pipe')\nopen('output/ok', 'w').write('1')",
                           "--output-dir", str(out), "--disable-layer", "seccomp",
                           "--wall-time", "10s", timeout=60)
    assert rc == 0 and v["status"] == "ok", v
    assert refused(v) == {"pipe": "not a regular file"}
    assert [f["path"] for f in v["files"]] == ["ok"]
    assert v["usage"]["wall_ms"] < 8000
    assert sorted(os.listdir(out)) == ["ok"]
    # control: with seccomp on, mkfifo itself is the denial
    v, _, _ = run_files("import os\nos.mkfifo('output/pipe')", "--output-dir", str(out))
    assert v["status"] == "denied"


def test_ten_thousand_files_are_capped(tmp_path):
    out = tmp_path / "out"
    v, rc, err = run_files("for i in range(10000):\n    open('output/f%05d' % i, 'w').write('x')",
                           "--policy", "scientific", "--output-dir", str(out), timeout=120)
    assert rc == 0 and v["status"] == "ok", v
    assert len(v["files"]) == 64 == v["limits"]["output_files"]
    assert len(os.listdir(out)) == 64
    assert len(v["files_refused"]) == 65           # 64 named, then how many more
    assert v["files_refused"][0]["reason"] == "over the cap of 64 files"
    assert v["files_refused"][-1]["reason"] == "%d more refused, not listed" % (10000 - 128)


def test_byte_cap(tmp_path):
    out = tmp_path / "out"
    pol = tmp_path / "small.json"
    pol.write_text(json.dumps({"extends": "default", "limits": {"output_files_size": "100K"}}))
    v, rc, err = run_files("open('output/a', 'wb').write(b'a' * 60000)\n"
                           "open('output/b', 'wb').write(b'b' * 60000)",
                           "--policy", str(pol), "--output-dir", str(out))
    assert rc == 0 and v["status"] == "ok", (err, v)
    assert [f["path"] for f in v["files"]] == ["a"]
    assert refused(v)["b"] == "over the limit on output bytes"
    assert os.listdir(out) == ["a"] and os.path.getsize(out / "a") == 60000


# A worker subverted by native code (here: the Python layer off, so gc finds pyshim's
# collector) can put any name in its report: the host must check every one.
FORGED = """
import gc, base64
for o in gc.get_objects():
    if isinstance(o, dict) and "_collect_outputs" in o and "finish" in o:
        def forged(scratch):
            data = base64.b64encode(b"pwned").decode()
            return ([{"path": p, "data": data} for p in
                     ("../../etc/pysnip-pwned", "/tmp/pysnip-abs", "a/../../b", "ok.txt",
                      "x/./y", "", "ok.txt")], [], 0)
        o["_collect_outputs"] = forged
# a file in output/, so that the report is built by finish() (an empty output/ ends plainly,
# from C, and the forged collector is never asked)
open("output/unlisted", "w").write("x")
"""


def test_forged_names_never_leave_the_output_dir(tmp_path):
    out = tmp_path / "deep" / "out"
    out.mkdir(parents=True)
    v, rc, err = run_files(FORGED, "--output-dir", str(out), "--disable-layer", "python")
    assert rc == 0 and v["status"] == "ok", (err, v)
    assert [f["path"] for f in v["files"]] == ["ok.txt"]
    r = refused(v)
    assert r["../../etc/pysnip-pwned"] == "a '.' or '..' component"
    assert r["/tmp/pysnip-abs"] == "an absolute name"
    assert r["a/../../b"] == "a '.' or '..' component"
    assert r["x/./y"] == "a '.' or '..' component"
    assert r[""] == "an empty name"
    assert len(v["files_refused"]) == 6        # the second ok.txt too
    assert not os.path.exists("/etc/pysnip-pwned") and not os.path.exists("/tmp/pysnip-abs")
    assert sorted(os.listdir(tmp_path / "deep")) == ["out"]
    assert os.listdir(out) == ["ok.txt"]


def test_output_dir_symlink_planted_by_nobody_else_is_not_followed(tmp_path):
    """A name whose directory part is a symlink in the caller's --output-dir is not followed
    (O_NOFOLLOW at every step): the write fails, nothing lands elsewhere."""
    out = tmp_path / "out"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, out / "d")
    v, rc, err = run_files("import os\nos.makedirs('output/d')\nopen('output/d/x', 'w').write('x')",
                           "--output-dir", str(out))
    assert rc == 2 and "output-dir" in err
    assert os.listdir(elsewhere) == []


def test_so_written_to_scratch_cannot_be_loaded(tmp_path):
    """No execute anywhere writable: a real extension copied into the scratch. The Python
    layer refuses the import; with it off, the noexec scratch tmpfs refuses the mapping."""
    import glob
    src = glob.glob("/usr/lib/python3/dist-packages/numpy/core/_umath_tests.*.so")[0]
    code = """
import sys
sys.path.insert(0, ".")
open("_umath_tests.so", "wb").write(open(%r, "rb").read())
try:
    import _umath_tests
    print("LOADED")
except ImportError as e:
    print("refused", e)
""" % src
    v, rc, _ = run_files(code, "--policy", "scientific")
    assert "LOADED" not in v["stdout"]
    assert v["status"] == "denied" or "refused" in v["stdout"], v
    assert any(d["layer"] == "import" for d in v["denials"]), v["denials"]
    v, rc, _ = run_files(code, "--policy", "scientific", "--disable-layer", "python")
    assert v["status"] == "ok", v
    assert "LOADED" not in v["stdout"]
    assert "failed to map segment" in v["stdout"] or "Operation not permitted" in v["stdout"]
    assert v["sandbox"]["scratch"] == "tmpfs"


# ---- served ----

@pytest.fixture(scope="module")
def server():
    import servekit
    s = servekit.Server("--policy", "scientific,default")
    yield s
    s.stop()


def test_served_reference_job(server, picture):
    png = picture.read_bytes()
    st, _, v = server.request("POST", "/v1/exec", {
        "code": GRAYSCALE_JOB.replace("import socket", ""),
        "policy": "scientific",
        "files": [{"path": "input/in.png", "content": base64.b64encode(png).decode()}]})
    assert st == 200 and v["status"] == "ok", v
    assert v["stdout"].split() == ["input", "write", "13"]   # the run's own read-only copy
    f = v["files"][0]
    data = base64.b64decode(f["content"])
    assert f["path"] == "out.png" and f["size"] == len(data)
    assert f["sha256"] == hashlib.sha256(data).hexdigest()
    Image = image_module()
    want = Image.open(picture).convert("L")
    assert list(Image.open(io.BytesIO(data)).getdata()) == list(want.getdata())


@pytest.mark.parametrize("files,field", [
    ([{"path": "input/../x", "content": ""}], "files[0]"),
    ([{"path": "x.png", "content": ""}], "files[0]"),
    ([{"path": "input/a", "content": "!!"}], "files[0]"),
    ([{"path": "input/a", "content": ""}, {"path": "input/a", "content": ""}], "files[1]"),
    ("nope", "files"),
])
def test_served_bad_files_are_400(server, files, field):
    st, _, v = server.request("POST", "/v1/exec", {"code": "print(1)", "files": files})
    assert st == 400 and v["field"] == field, v


def test_served_default_policy_files(server):
    st, _, v = server.request("POST", "/v1/exec", {
        "code": "print(open('input/a.txt').read())\nopen('output/b.txt', 'w').write('bee')",
        "policy": "default", "files": [{"path": "input/a.txt",
                                        "content": base64.b64encode(b"hello").decode()}]})
    assert st == 200 and v["status"] == "ok", v
    assert v["stdout"] == "hello\n"
    assert [(f["path"], base64.b64decode(f["content"])) for f in v["files"]] == [("b.txt", b"bee")]


def test_exec_server_sends_inputs_and_writes_outputs(server, picture, tmp_path):
    """`pysnip exec --server URL --input --output-dir` is the one-shot run over HTTP: the
    file goes in the request, the outputs land in --output-dir, and the verdict printed is the
    one-shot one (files without their content)."""
    out = tmp_path / "out"
    p = subprocess.run([PYSNIP, "exec", "--server", server.url, "--policy", "scientific",
                        "--input", "pic.png=%s" % picture, "--output-dir", str(out), "-"],
                       input=b"from PIL import Image\n"
                             b"Image.open('input/pic.png').convert('L').save('output/g.png')",
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    v = json.loads(p.stdout)
    assert v["status"] == "ok" and [f["path"] for f in v["files"]] == ["g.png"]
    assert "content" not in v["files"][0]
    assert v["files"][0]["sha256"] == sha(out / "g.png")
    p = subprocess.run([PYSNIP, "exec", "--server", server.url, "--input", "../x=%s" % picture,
                        "-"], input=b"print(1)", capture_output=True, timeout=60)
    assert p.returncode == 1 and b"files[0]" in p.stderr
