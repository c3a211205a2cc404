# attack: fill the scratch file system with empty files (inode exhaustion)
# expect: ok
import os

n = 0
try:
    while n < 300000:
        os.close(os.open("f%d" % n, os.O_CREAT | os.O_WRONLY, 0o600))
        n += 1
except OSError as e:
    print("blocked after", n, "files:", e.strerror)
if n >= 300000:
    print("ESCAPED: 300000 files in scratch")
