# attack: write a fake "phase failed" record on the status channel (fd 3): the verdict would become internal_error
# expect: ok
import struct
import sys

posix = sys.modules["posix"]
rec = struct.pack("<IiiiI", 1, 0, 1, 0, 0) + b"\0" * 40 + b"ESCAPED: forged phase failure".ljust(200, b"\0")
try:
    posix.write(3, rec)
    posix.write(3, rec)
except OSError as e:
    print("blocked:", e)
print("done")
