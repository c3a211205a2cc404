# attack: write a fake seccomp "syscall" record on fd 3: a clean run would be reported as denied (execve)
# expect: ok
import struct
import sys

posix = sys.modules["posix"]
rec = struct.pack("<IiiiI", 3, 0, 0, 59, 0xC000003E) + b"\0" * 240
try:
    posix.write(3, rec)
except OSError as e:
    print("blocked:", e)
print("done")
