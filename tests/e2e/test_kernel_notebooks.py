"""Notebooks in tests/notebooks/ executed by the real nbconvert (`jupyter nbconvert --to notebook
--execute --ExecutePreprocessor.kernel_name=pysnip`) against `pysnip kernel`, from a kernelspec
`pysnip kernel install` wrote in a temporary JUPYTER_PATH; the executed notebook is read back
with nbformat and its outputs checked."""
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import PYSNIP, ROOT

nbformat = pytest.importorskip("nbformat")
NOTEBOOKS = os.path.join(ROOT, "tests", "notebooks")
NBCONVERT = shutil.which("jupyter-nbconvert") or "/usr/bin/jupyter-nbconvert"


def run_notebook(name, spec_args=(), allow_errors=False, timeout=300):
    with tempfile.TemporaryDirectory() as d:
        cmd = [PYSNIP, "kernel", "install", "--prefix", d, "--name", "pysnip"] + list(spec_args)
        p = subprocess.run(cmd, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        env = dict(os.environ, JUPYTER_PATH=os.path.join(d, "share", "jupyter"))
        out = os.path.join(d, "out.ipynb")
        cmd = [NBCONVERT, "--to", "notebook", "--execute",
               "--ExecutePreprocessor.kernel_name=pysnip",
               "--ExecutePreprocessor.timeout=120", "--output", out,
               os.path.join(NOTEBOOKS, name)]
        if allow_errors:
            cmd.insert(1, "--allow-errors")
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        assert p.returncode == 0, p.stderr[-3000:]
        return nbformat.read(out, as_version=4)


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def result(cell):
    res = [o for o in cell.outputs if o.output_type == "execute_result"]
    assert len(res) == 1, cell.outputs
    return res[0].data["text/plain"]


def error(cell):
    err = [o for o in cell.outputs if o.output_type == "error"]
    assert len(err) == 1, cell.outputs
    return err[0]


@pytest.mark.skipif(not os.path.exists(os.path.join(ROOT, "policies", "scientific.json")),
                    reason="policies/scientific.json is not in this tree (the scientific "
                           "policy's branch brings it)")
def test_pandas_matplotlib_notebook_has_png():
    nb = run_notebook("plots.ipynb", ["--policy", "scientific"])
    cells = code_cells(nb)
    assert result(cells[0]) == "285"
    pngs = [o for o in cells[1].outputs
            if o.output_type == "display_data" and "image/png" in o.data]
    assert len(pngs) == 1, cells[1].outputs
    import base64
    assert base64.b64decode(pngs[0].data["image/png"])[:8] == b"\x89PNG\r\n\x1a\n"
    assert cells[2].outputs[0].text == "10\n"


def test_endless_cell_under_per_cell_limit_then_earlier_state():
    nb = run_notebook("limits.ipynb", ["--wall", "2s"], allow_errors=True)
    cells = code_cells(nb)
    err = error(cells[1])
    assert err.ename == "TimeLimit" and "rolled back" in err.evalue
    assert result(cells[2]) == "42"	# `answer = 0` of the dead cell is gone


def test_endless_cell_stops_the_notebook_without_allow_errors():
    """The positive control of --allow-errors: nbconvert stops at the dead cell, saying why."""
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([PYSNIP, "kernel", "install", "--prefix", d, "--name", "pysnip",
                        "--wall", "2s"], check=True, capture_output=True)
        env = dict(os.environ, JUPYTER_PATH=os.path.join(d, "share", "jupyter"))
        p = subprocess.run([NBCONVERT, "--to", "notebook", "--execute",
                            "--ExecutePreprocessor.kernel_name=pysnip", "--output",
                            os.path.join(d, "o.ipynb"), os.path.join(NOTEBOOKS, "limits.ipynb")],
                           capture_output=True, text=True, env=env, timeout=300)
        assert p.returncode != 0
        assert "TimeLimit" in p.stderr


def test_crashing_cell_with_allow_errors_keeps_state():
    nb = run_notebook("crash.ipynb", allow_errors=True)
    cells = code_cells(nb)
    err = error(cells[1])
    assert err.ename == "Signal" and "Segmentation fault" in err.evalue, err
    assert "rolled back" in err.evalue
    assert result(cells[2]) == "2"	# state['cells'] = -1 of the dead cell is gone
