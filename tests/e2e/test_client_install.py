"""The README's install of the Python client, run as written on Debian 12 with no network.

The commands are read from README.md ("Python client"), not copied here, so the test fails
when the README says something that does not work. They run with HOME set to a fresh
directory (so their ~/pysnip-venv is a temporary venv and pip's cache goes there too), in a
copy of the checkout (pip builds in the source tree; the checkout itself is left untouched).
The installed client then talks to a real `pysnip serve`."""
import json
import os
import re
import shutil
import subprocess
import tempfile

from servekit import ROOT, Server

# What the README's first line (apt-get, as root) installs; tools/install-deps has them.
DEBIAN_PACKAGES = ("python3-venv", "python3-setuptools", "python3-wheel")
# Build outputs and binaries at the top of the checkout: not part of what pip installs from.
TOP_LEVEL_SKIP = {".git", "build", "build-asan", "build-fuzz", "build-py", "pysnip",
                  "pysnip-serve", ".pytest_cache"}


def readme_install_lines():
    """The indented command lines of the README's install block, less the root apt-get."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"To install it\s+from this checkout.*?\n\n((?:    [^\n]*\n)+)", text, re.S)
    assert m, "README.md has no 'To install it from this checkout' block"
    lines = [l.strip() for l in m.group(1).splitlines()]
    lines = [l for l in lines if not l.startswith("apt-get ")]
    assert any(" -m venv " in l for l in lines) and any(" pip install " in l for l in lines), lines
    return lines


def clean_env(home):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIP_", "PYTHON", "VIRTUAL_ENV"))}
    env["HOME"] = home
    return env


def copy_checkout(dst):
    def ignore(d, names):
        if os.path.abspath(d) == ROOT:
            return [n for n in names if n in TOP_LEVEL_SKIP]
        return [n for n in names if n == "__pycache__" or n.endswith(".egg-info")]
    shutil.copytree(ROOT, dst, ignore=ignore, symlinks=True)


CLIENT_SCRIPT = r"""
import json, sys
import pysnip_client
from pysnip_client import Client
with Client(sys.argv[1]) as c:
    v = c.exec("print(input() * 2)", stdin="ab", wall="2s")
print(json.dumps({"file": pysnip_client.__file__, "status": v["status"],
                  "stdout": v["stdout"], "wall_ms": v["limits"]["wall_ms"]}))
"""


def test_readme_install_then_one_request():
    for p in DEBIAN_PACKAGES:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True,
                           text=True)
        assert "install ok installed" in r.stdout, \
            "%s is not installed (tools/install-deps installs it)" % p
    tmp = tempfile.mkdtemp(prefix="pysnip-client-install-")
    try:
        home, src = os.path.join(tmp, "home"), os.path.join(tmp, "src")
        os.mkdir(home)
        copy_checkout(src)
        env = clean_env(home)
        for line in readme_install_lines():
            r = subprocess.run(["bash", "-c", line], cwd=src, env=env, capture_output=True,
                               text=True, timeout=300)
            assert r.returncode == 0, "README line failed: %s\n%s%s" % (line, r.stdout,
                                                                      r.stderr)
        venv = os.path.join(home, "pysnip-venv")
        py = os.path.join(venv, "bin", "python")
        assert os.access(py, os.X_OK), "the README's commands made no venv at " + venv

        # The client comes from the venv's site-packages, not from the source tree: -I drops
        # the current directory and PYTHON* variables, and the run is from elsewhere.
        s = Server("--workers", "1")
        try:
            r = subprocess.run([py, "-I", "-c", CLIENT_SCRIPT, s.url], cwd=tmp, env=env,
                               capture_output=True, text=True, timeout=120)
        finally:
            s.stop()
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        site = os.path.realpath(os.path.join(venv, "lib"))
        assert os.path.realpath(out["file"]).startswith(site + os.sep), out["file"]
        assert (out["status"], out["stdout"], out["wall_ms"]) == ("ok", "abab\n", 2000), out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
