# attack: write a fake "held" record on fd 3 claiming every kernel layer off: the verdict's sandbox block would lie
# expect: ok
import struct
import sys

posix = sys.modules["posix"]
held = struct.pack("<iiBBBBiIBBxxII", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
rec = struct.pack("<IiiiI", 2, -1, 0, 0, 0) + held + b"\0" * 200
try:
    posix.write(3, rec)
except OSError as e:
    print("blocked:", e)
print("done")
