# attack: exhaust file descriptors with pipes (no audit event for pipe())
# expect: ok
import sys

posix = sys.modules["posix"]
fds = []
try:
    while len(fds) < 100000:
        fds.extend(posix.pipe())
except OSError as e:
    print("blocked after", len(fds), "fds:", e.strerror)
if len(fds) >= 100000:
    print("ESCAPED: 100000 descriptors")
