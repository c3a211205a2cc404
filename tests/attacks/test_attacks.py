"""The attack corpus: every tests/attacks/*.py is an escape attempt run through the real binary
with the default policy and every layer on.

Each file starts with a header of comment lines:
    # attack: one line on what it tries
    # expect: STATUS[|STATUS...]          the statuses the run may end in
    # layer: LAYER[|LAYER...]             (optional) a denial from one of these layers must be reported
    # args: --wall-time 2s ...             (optional) extra pysnip exec arguments
    # env: NAME=VALUE                      (optional) set in pysnip's own environment for the run
An attack that gets through prints the sentinel ESCAPED (it must never appear in stdout/stderr).
Unless the args switch a layer off, the verdict's sandbox block must show every layer held.
"""
import glob
import os
import shlex
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from conftest import SANITIZER, run_exec  # noqa: E402  (tests/e2e/conftest.py, also when run alone)

HERE = os.path.dirname(os.path.abspath(__file__))
ATTACKS = sorted(glob.glob(os.path.join(HERE, "a[0-9][0-9][0-9]_*.py")))


def header(path):
    h = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("# ") or ":" not in line:
                break
            k, v = line[2:].split(":", 1)
            h[k.strip()] = v.strip()
    return h


def test_corpus_is_big_enough():
    assert len(ATTACKS) >= 60, len(ATTACKS)


@pytest.mark.parametrize("path", ATTACKS, ids=[os.path.basename(p)[:-3] for p in ATTACKS])
def test_attack(path, monkeypatch):
    h = header(path)
    assert "attack" in h and "expect" in h, "header missing in " + path
    if SANITIZER and "memory_limit" in h["expect"]:
        pytest.skip("sanitizer build: RLIMIT_AS cannot apply under ASan's shadow memory")
    with open(path, "rb") as f:
        code = f.read()
    if "env" in h:
        name, value = h["env"].split("=", 1)
        monkeypatch.setenv(name, value)
    args = shlex.split(h.get("args", ""))
    v, rc, err = run_exec(code, *args, timeout=120)
    assert rc == 0, err
    assert "ESCAPED" not in v["stdout"] and "ESCAPED" not in v["stderr"], v
    assert v["status"] in h["expect"].split("|"), (v["status"], v.get("exception"), v["denials"])
    if "layer" in h:
        layers = {d["layer"] for d in v["denials"]}
        assert layers & set(h["layer"].split("|")), v["denials"]
    if "--disable-layer" not in args:
        sb = v["sandbox"]
        held = (sb["applied"], sb["python"], sb["seccomp"], sb["capabilities"], sb["no_new_privs"])
        assert held == (True, True, "kill", "none", True) and sb["landlock_abi"] > 0, sb
        assert sb["uid"] != 0 and sb["gid"] != 0, sb
