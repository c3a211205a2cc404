"""jupyter_kernel_test's conformance suite (Debian's python3-jupyter-kernel-test) against
`pysnip kernel`, started by jupyter_client from a kernelspec in a temporary JUPYTER_PATH.
Every message is validated against the messaging spec's schemas by the suite itself."""
import os
import tempfile
import unittest

import pytest

from kernelkit import install_spec

jkt = pytest.importorskip("jupyter_kernel_test")

NAME = "pysnip-conformance"


class PysnipKernelTests(jkt.KernelTests):
    kernel_name = NAME
    language_name = "python"
    file_extension = ".py"

    code_hello_world = "print('hello, world')"
    code_stderr = "import sys; print('test', file=sys.stderr)"
    completion_samples = [
        {"text": "zi", "matches": {"zip"}},
        {"text": "str.upp",
         "matches": {"str.upper"}},
    ]
    complete_code_samples = ["1", "print('hello, world')", "def f(x):\n  return x*2\n\n\n"]
    incomplete_code_samples = ["print('''hello", "def f(x):\n  x*2"]
    invalid_code_samples = ["import = 7q"]
    code_generate_error = "raise ValueError('boom')"
    code_execute_result = [
        {"code": "6*7", "result": "42"},
        {"code": "'hello'", "result": "'hello'"},
        {"code": "[1, 2][0]", "result": "1"},
    ]
    code_display_data = [
        {"code": "display(42)", "mime": "text/plain"},
        {"code": "class H:\n    def _repr_html_(self):\n        return '<b>hi</b>'\ndisplay(H())",
         "mime": "text/html"},
    ]
    code_inspect_sample = "zip"
    code_clear_output = "clear_output()"
    code_page_something = "zip?"
    code_history_pattern = "6?7"
    supported_history_operations = ("tail", "range", "search")

    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory()
        cls._old_path = os.environ.get("JUPYTER_PATH")
        os.environ["JUPYTER_PATH"] = install_spec(cls._tmp.name, NAME)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        if cls._old_path is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = cls._old_path
        cls._tmp.cleanup()


if __name__ == "__main__":
    unittest.main()
