"""The Python layer alone (every kernel layer switched off): the import allowlist, the absent
dangerous modules and the C audit hook each deny, attributably (layer, event, detail, snippet
line), and each denial has a positive control: the same operation with the permission granted
(a policy fixture, or the python layer itself switched off) succeeds."""
import json
import os

import pytest

from conftest import run_exec

KERNEL_OFF = ["--disable-layer", "landlock", "--disable-layer", "seccomp",
              "--disable-layer", "identity", "--disable-layer", "namespaces"]
ALL_OFF = KERNEL_OFF + ["--disable-layer", "python"]


def run(code, *args):
    v, rc, err = run_exec(code, *KERNEL_OFF, *args)
    assert rc == 0, err
    assert v is not None, err
    return v


def policy(tmp_path, name, **sections):
    """A policy file extending default; the verdict names it by its stem."""
    body = {"extends": "default"}
    body.update(sections)
    path = tmp_path / (name + ".json")
    path.write_text(json.dumps(body))
    return str(path)


def assert_denied(v, layer, event, line, detail=None):
    assert v["status"] == "denied", v
    d = v["denials"][0]
    assert d["layer"] == layer, d
    assert d["event"] == event, d
    assert d["line"] == line, d
    if detail is not None:
        assert d["detail"] == detail, d
    assert v["exception"]["line"] == line


def assert_ok(v, stdout=None):
    assert v["status"] == "ok", (v["exception"], v["denials"], v["stderr"])
    assert v["denials"] == []
    if stdout is not None:
        assert v["stdout"] == stdout


@pytest.fixture
def secret(tmp_path):
    d = tmp_path / "host"
    d.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(d, 0o777)
    f = d / "secret.txt"
    f.write_text("s3cret")
    os.chmod(f, 0o644)
    return f


def test_layer_reported():
    v = run("pass")
    assert v["sandbox"]["python"] is True
    v, _, _ = run_exec("pass", *ALL_OFF)
    assert v["sandbox"]["python"] is False


# --- files: read ----------------------------------------------------------------------

def test_read_outside_denied(secret):
    v = run("x = 1\nprint(open(%r).read())\n" % str(secret))
    assert_denied(v, "audit", "open", 2, str(secret))
    assert v["exception"]["type"] == "PermissionError"
    assert v["exception"]["message"] == (
        "pysnip: open('%s') denied by policy 'default'" % secret)
    assert "s3cret" not in v["stdout"]


def test_read_granted_by_policy(secret, tmp_path):
    p = policy(tmp_path, "reader", filesystem={"read": [str(secret.parent)]})
    assert_ok(run("print(open(%r).read())" % str(secret), "--policy", p), "s3cret\n")


def test_read_stdlib_allowed():
    assert_ok(run("print(open('/usr/lib/python3.11/os.py').readline().strip())"),
              'r"""OS routines for NT or Posix depending on what system we\'re on.\n')


def test_listdir_outside_denied_and_scratch_allowed(secret):
    v = run("import os\nos.listdir(%r)" % str(secret.parent))
    assert_denied(v, "audit", "os.listdir", 2, str(secret.parent))
    assert_ok(run("import os\nopen('a', 'w').close()\nprint(os.listdir('.'))"), "['a']\n")


def test_symlink_out_of_scratch_is_followed(secret):
    """A link made in scratch does not launder a path: the hook resolves it."""
    code = "import os\nos.symlink(%r, 'l')\nopen('l').read()" % str(secret)
    assert_denied(run(code), "audit", "open", 3, "l")


def test_pathlike_with_lying_fspath(secret):
    """A path-like object whose __fspath__ changes its answer cannot pass the check with one
    path and be used with another: the path checked is the path used."""
    lying = ("class P:\n"
             "    n = 0\n"
             "    def __fspath__(self):\n"
             "        P.n += 1\n"
             "        return '.' if P.n == 1 else %r\n" % str(secret.parent))
    v = run(lying + "import os\nprint(os.listdir(P()))\n")
    assert_ok(v, "[]\n")
    v = run(lying.replace("'.'", "'ok.txt'") + "print(open(P()).read())\n")
    assert v["exception"]["type"] == "FileNotFoundError"
    assert "s3cret" not in v["stdout"]


def test_pathlib_paths_are_checked(secret):
    v = run("import pathlib\npathlib.Path(%r).read_text()" % str(secret))
    assert_denied(v, "audit", "open", 2, str(secret))
    assert_ok(run("import pathlib\np = pathlib.Path('f')\np.write_text('x')\nprint(p.read_text())"),
              "x\n")


# --- files: write ---------------------------------------------------------------------

def test_write_outside_scratch_denied(secret):
    target = secret.parent / "new.txt"
    v = run("open(%r, 'w').write('x')" % str(target))
    assert_denied(v, "audit", "open", 1, str(target))
    assert not target.exists()


def test_write_granted_by_policy(secret, tmp_path):
    target = secret.parent / "new.txt"
    p = policy(tmp_path, "writer", filesystem={"write": [str(secret.parent)]})
    assert_ok(run("open(%r, 'w').write('x')" % str(target), "--policy", p))
    assert target.read_text() == "x"


def test_write_in_scratch_allowed():
    code = ("import os\nos.mkdir('d')\nwith open('d/f', 'w') as f: f.write('hi')\n"
            "os.rename('d/f', 'd/g')\nprint(open('d/g').read())\nos.remove('d/g')\nos.rmdir('d')")
    assert_ok(run(code), "hi\n")


def test_readonly_open_of_host_file_cannot_write(secret):
    """Read access does not imply write access, even with os.open flags."""
    code = "import os\nos.open(%r, os.O_WRONLY | os.O_TRUNC)" % str(secret)
    v = run(code, "--policy", policy(secret.parent.parent, "r", filesystem={
        "read": [str(secret.parent)]}))
    assert_denied(v, "audit", "open", 2, str(secret))
    assert secret.read_text() == "s3cret"


def test_remove_outside_denied(secret):
    v = run("import os\n\nos.remove(%r)" % str(secret))
    assert_denied(v, "audit", "os.remove", 3, str(secret))
    assert secret.exists()


def test_relative_escape_from_scratch_denied():
    v = run("open('../../../../../../../../etc/passwd').read()")
    assert_denied(v, "audit", "open", 1, "../../../../../../../../etc/passwd")


# --- processes ------------------------------------------------------------------------

@pytest.mark.parametrize("code,event", [
    ("import os\nos.system('true')", "os.system"),
    ("import os\nos.fork()", "os.fork"),
    ("import os\nos.execv('/bin/true', ['true'])", "os.exec"),
    ("import os\nos.posix_spawn('/bin/true', ['true'], {})", "os.posix_spawn"),
])
def test_process_creation_denied(code, event):
    assert_denied(run(code), "audit", event, 2)


def test_os_system_granted_by_policy(tmp_path):
    p = policy(tmp_path, "shell", audit={"allow": ["os.system"]})
    assert_ok(run("import os\nprint(os.system('exit 3') >> 8)", "--policy", p), "3\n")


def test_fork_granted_by_policy(tmp_path):
    p = policy(tmp_path, "forker", audit={"allow": ["os.fork"]},
               limits={"processes": 16})
    code = ("import os\npid = os.fork()\nif pid == 0:\n    os._exit(7)\n"
            "print(os.waitpid(pid, 0)[1] >> 8)")
    assert_ok(run(code, "--policy", p), "7\n")


def test_subprocess_module_absent():
    v = run("\nimport subprocess")
    assert_denied(v, "import", "import", 2, "subprocess")
    assert v["exception"]["type"] == "pysnip.PolicyImportError"
    assert "subprocess" in v["exception"]["message"]
    assert "policy 'default'" in v["exception"]["message"]


def test_subprocess_works_with_python_layer_off():
    v, rc, _ = run_exec("import subprocess\nprint(subprocess.run(['true']).returncode)", *ALL_OFF)
    assert v["status"] == "ok" and v["stdout"] == "0\n", v


def test_kill_other_process_denied():
    v = run("import os\nos.kill(os.getppid(), 0)")
    assert_denied(v, "audit", "os.kill", 2)
    assert_ok(run("import os\nos.kill(os.getpid(), 0)"))


# --- network --------------------------------------------------------------------------

@pytest.mark.parametrize("mod", ["socket", "_socket", "ssl"])
def test_socket_modules_absent(mod):
    assert_denied(run("import %s" % mod), "import", "import", 1, mod)


def test_socket_works_with_python_layer_off():
    v, _, _ = run_exec("import socket\ns = socket.socket()\ns.close()\nprint('made')", *ALL_OFF)
    assert v["status"] == "ok" and v["stdout"] == "made\n", v


# --- native code ----------------------------------------------------------------------

@pytest.mark.parametrize("mod", ["ctypes", "_ctypes", "mmap", "resource", "fcntl", "pty",
                                 "multiprocessing", "_posixsubprocess", "ctypes.util"])
def test_dangerous_module_absent(mod):
    v = run("x = 0\n__import__(%r)" % mod)
    assert_denied(v, "import", "import", 2, mod)


def test_ctypes_works_with_python_layer_off():
    v, _, _ = run_exec("import ctypes, os\nprint(ctypes.CDLL(None).getpid() == os.getpid())",
                       *ALL_OFF)
    assert v["status"] == "ok" and v["stdout"] == "True\n", v


@pytest.mark.parametrize("name", ["_ctypes", "x._ctypes"])
def test_extension_loaded_by_hand_denied(name):
    """The import machinery, driven by hand past every finder, still cannot load a denied
    extension, not even under a package name that hides it."""
    code = ("import sys\next = sys.modules['_frozen_importlib_external']\n"
            "boot = sys.modules['_frozen_importlib']\n"
            "p = '/usr/lib/python3.11/lib-dynload/_ctypes.cpython-311-x86_64-linux-gnu.so'\n"
            "spec = boot.spec_from_loader(%r, ext.ExtensionFileLoader(%r, p))\n"
            "boot._load(spec)\n" % (name, name))
    assert_denied(run(code), "import", "import", 6, name)


# --- imports --------------------------------------------------------------------------

def test_unlisted_module_denied_and_allowed_by_policy(tmp_path):
    v = run("import math\nimport zipfile")
    assert_denied(v, "import", "import", 2, "zipfile")
    assert "(not allowed)" in v["exception"]["message"]
    p = policy(tmp_path, "zip", modules={"allow": ["zipfile"]})
    assert_ok(run("import zipfile\nprint(zipfile.is_zipfile('nope'))", "--policy", p),
              "False\n")


@pytest.mark.parametrize("mod", ["posix", "_imp", "marshal", "gc", "_thread"])
def test_already_loaded_internal_module_denied(mod):
    """Modules the interpreter loaded at start-up are cached, yet still not importable."""
    assert_denied(run("import %s" % mod), "import", "import", 1, mod)


def test_transitive_imports_of_allowed_modules_work():
    code = ("import json, collections, random, datetime, decimal\n"
            "print(json.dumps(collections.OrderedDict(a=1)), datetime.datetime.strptime("
            "'2024', '%Y').year)")
    assert_ok(run(code), '{"a": 1} 2024\n')


def test_stdlib_fallback_probe_is_not_a_denial():
    """pdb (through doctest) probes for readline; its absence is silent."""
    code = ("import doctest\ndef f():\n    '''\n    >>> 2 * 3\n    6\n    '''\n"
            "doctest.run_docstring_examples(f, {})\nprint('done')")
    assert_ok(run(code), "done\n")


def test_import_via_exec_with_foreign_filename_denied():
    code = "exec(compile('import zipfile', 'innocent.py', 'exec'))"
    assert_denied(run(code), "import", "import", 1, "zipfile")


def test_policy_import_error_is_an_import_error():
    code = ("try:\n    import ctypes\nexcept ImportError as e:\n"
            "    print(type(e).__mro__[1].__name__, e.name)")
    v = run(code)
    assert v["stdout"] == "ModuleNotFoundError ctypes\n"
    assert v["denials"][0]["line"] == 2


# --- interpreter tampering ------------------------------------------------------------

GC_POLICY = {"modules": {"allow": ["gc"]}}


@pytest.mark.parametrize("call", ["gc.get_objects()", "gc.get_referrers(1)",
                                  "gc.get_referents([])"])
def test_gc_introspection_denied(tmp_path, call):
    p = policy(tmp_path, "gcmod", **GC_POLICY)
    v = run("import gc\n%s" % call, "--policy", p)
    assert_denied(v, "audit", call.split("(")[0], 2)


def test_gc_introspection_granted_by_policy(tmp_path):
    p = policy(tmp_path, "gcall", audit={"allow": ["gc.get_objects"]}, **GC_POLICY)
    assert_ok(run("import gc\nprint(len(gc.get_objects()) > 100)", "--policy", p), "True\n")


def test_code_object_construction_denied(tmp_path):
    v = run("f = lambda: 0\ng = f.__code__.replace(co_name='x')")
    assert_denied(v, "audit", "code.__new__", 2)
    p = policy(tmp_path, "codes", audit={"allow": ["code.__new__"]})
    assert_ok(run("f = lambda: 0\nprint(f.__code__.replace(co_name='x').co_name)",
                  "--policy", p), "x\n")


def test_compile_with_stdlib_filename_denied():
    v = run("compile('x = 1', '/usr/lib/python3.11/os.py', 'exec')")
    assert_denied(v, "audit", "compile", 1, "/usr/lib/python3.11/os.py")
    assert_ok(run("exec(compile('print(1)', 'mine.py', 'exec'))"), "1\n")


def test_settrace_denied():
    v = run("import sys\nsys.settrace(lambda *a: None)")
    assert_denied(v, "audit", "sys.settrace", 2)


def test_no_host_frame_below_the_snippet():
    """The snippet runs at the bottom of the stack: no pyshim frame to walk into."""
    code = "import sys\nf = sys._getframe()\nprint(f.f_back is None, f.f_code.co_filename)"
    assert_ok(run(code), "True <snippet>\n")


def test_report_fd_cannot_be_opened():
    code = ("import os\nfor fd in range(3, 20):\n    try:\n        os.fdopen(fd, 'w')\n"
            "    except PermissionError:\n        print('refused')\n    except OSError:\n"
            "        pass\n")
    v = run(code)
    assert "refused" in v["stdout"]


# --- what the layer reports -----------------------------------------------------------

def test_traceback_has_snippet_frames_only():
    code = "import json\n\ndef parse(s):\n    return json.loads(s)\nparse('{')"
    v = run(code)
    assert v["status"] == "exception"
    e = v["exception"]
    assert e["type"] == "json.decoder.JSONDecodeError"
    assert [(f["file"], f["line"], f["function"]) for f in e["traceback"]] == [
        ("<snippet>", 5, "<module>"), ("<snippet>", 4, "parse")]
    assert e["traceback"][1]["text"] == "return json.loads(s)"


def test_caught_denial_is_still_recorded(secret):
    code = "try:\n    open(%r)\nexcept PermissionError:\n    print('caught')" % str(secret)
    v = run(code)
    assert v["stdout"] == "caught\n"
    assert v["denials"][0]["event"] == "open" and v["denials"][0]["line"] == 2


def test_python_layer_off_denies_nothing(secret):
    v, _, _ = run_exec("print(open(%r).read())" % str(secret), *ALL_OFF)
    assert v["status"] == "ok" and v["stdout"] == "s3cret\n" and v["denials"] == []


def test_dangerous_builtins_removed_from_the_interpreter():
    code = ("import sys\nprint(sorted(set(sys.builtin_module_names) & "
            "{'_socket', '_posixsubprocess', 'fcntl', 'pwd', 'grp', 'syslog', 'math'}))")
    assert_ok(run(code), "['math']\n")
    v, _, _ = run_exec(code, *ALL_OFF)
    assert v["stdout"] == "['_posixsubprocess', '_socket', 'fcntl', 'grp', 'math', 'pwd', 'syslog']\n"


def test_sys_path_is_pinned():
    assert_ok(run("import sys\nprint(sys.path, sys.flags.isolated, sys.flags.no_site, "
                  "sys.dont_write_bytecode)"),
              "['/usr/lib/python3.11', '/usr/lib/python3.11/lib-dynload'] 1 1 True\n")


# --- hardening: environment, metadata, channels, deputies --------------------------------

def test_host_environment_not_visible(monkeypatch):
    monkeypatch.setenv("PYSNIP_TEST_CANARY", "c4n4ry")
    v = run("import os, sys\nprint(sorted(os.environ), sorted(sys.modules['posix'].environ))")
    assert_ok(v, "['HOME', 'TMPDIR'] [b'HOME', b'TMPDIR']\n")


def test_stat_outside_readable_denied(secret):
    v = run("import os\nos.stat(%r)" % str(secret))
    assert_denied(v, "audit", "os.stat", 2, str(secret))
    assert "Landlock has no right for stat" in v["exception"]["message"]
    assert_ok(run("import os\nopen('f', 'w').close()\nprint(os.stat('f').st_size, "
                  "os.path.isdir('/usr/lib/python3.11'))"), "0 True\n")


def test_channels_cannot_be_closed_or_replaced():
    for code, event in (("import os\nos.close(4)", "os.close"),
                        ("import os\nos.dup2(1, 4)", "os.dup2"),
                        ("import os\nos.close(3)", "os.close")):
        assert_denied(run(code), "audit", event, 2)
    # positive control: closing everything else is fine, and the report still arrives
    assert_ok(run("import os\nr, w = os.pipe()\nos.closerange(3, 1000)\nprint('done')"), "done\n")


def test_stdlib_deputy_import_denied():
    v = run("import pickle\npickle._loads(b'czipfile\\nZipFile\\n.')")
    assert_denied(v, "import", "import", 2, "zipfile")


def test_denied_flag_only_for_the_hooks_own_exceptions(secret):
    v = run("open(%r)" % str(secret))
    assert v["exception"].get("denied") is True
    v = run("raise PermissionError(\"pysnip: open('/x') denied by policy 'default'\")")
    assert v["status"] == "exception" and "denied" not in v["exception"], v
