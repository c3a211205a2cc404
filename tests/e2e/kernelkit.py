"""Start `pysnip kernel` the way Jupyter does: a kernelspec written by `pysnip kernel install`
into a temporary JUPYTER_PATH, a jupyter_client KernelManager, a BlockingKernelClient."""
import contextlib
import os
import subprocess
import tempfile

from conftest import PYSNIP

KERNEL_NAME = "pysnip-test"


def install_spec(prefix, name=KERNEL_NAME, policy=None):
    """`pysnip kernel install --prefix PREFIX`; returns the JUPYTER_PATH entry for it."""
    cmd = [PYSNIP, "kernel", "install", "--prefix", prefix, "--name", name]
    if policy:
        cmd += ["--policy", policy]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return os.path.join(prefix, "share", "jupyter")


@contextlib.contextmanager
def jupyter_path(policy=None, name=KERNEL_NAME):
    """A temporary JUPYTER_PATH holding the pysnip kernelspec (the env var restored after)."""
    old = os.environ.get("JUPYTER_PATH")
    with tempfile.TemporaryDirectory() as d:
        os.environ["JUPYTER_PATH"] = install_spec(d, name, policy)
        try:
            yield d
        finally:
            if old is None:
                os.environ.pop("JUPYTER_PATH", None)
            else:
                os.environ["JUPYTER_PATH"] = old


@contextlib.contextmanager
def running_kernel(policy=None, name=KERNEL_NAME, extra_args=(), stderr=None):
    """(KernelManager, BlockingKernelClient) of a started pysnip kernel, shut down after.
    stderr: a file for the kernel's log."""
    from jupyter_client import KernelManager
    with jupyter_path(policy, name):
        km = KernelManager(kernel_name=name)
        kw = {"stderr": stderr} if stderr is not None else {}
        km.start_kernel(extra_arguments=list(extra_args), **kw)
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=30)
            yield km, kc
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=False)
            assert not km.is_alive()


def iopub_until_idle(kc, parent_id, timeout=30):
    """Every iopub message of request parent_id up to and including its idle status."""
    out = []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != parent_id:
            continue
        out.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return out
