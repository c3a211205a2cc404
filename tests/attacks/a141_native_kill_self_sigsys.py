# attack: (native code) kill(getpid(), SIGSYS) and tgkill to itself, the routes the filter allows, to fake a seccomp death
# expect: ok
# args: --disable-layer python
import ctypes
import os

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
print("kill", libc.syscall(62, os.getpid(), 31), flush=True)
print("tgkill", libc.syscall(234, os.getpid(), libc.syscall(186), 31), flush=True)
print("still running: neither counted as a denial")
