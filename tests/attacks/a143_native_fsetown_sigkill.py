# attack: (native code) make the kernel SIGKILL another process for us: a pipe with F_SETOWN to pid 1 (the namespace's init), F_SETSIG SIGKILL, O_ASYNC, one byte
# expect: denied
# layer: seccomp
# args: --disable-layer python
import ctypes
import os

libc = ctypes.CDLL(None, use_errno=True)
fds = (ctypes.c_int * 2)()
libc.pipe(fds)
for target in (1, os.getpid() + 1, os.getpid() - 1):
    if libc.fcntl(fds[0], 8, ctypes.c_int(target)) == 0:            # F_SETOWN
        libc.fcntl(fds[0], 10, ctypes.c_int(9))                      # F_SETSIG SIGKILL
        libc.fcntl(fds[0], 4, ctypes.c_int(libc.fcntl(fds[0], 3) | os.O_ASYNC))
        libc.write(fds[1], b"x", 1)
        print("ESCAPED: F_SETOWN", target, "allowed")
