# attack: mknod a character device for /dev/mem-like access (1, 1) in the scratch dir
# expect: denied
import os
import sys

posix = sys.modules["posix"]
posix.mknod("mem", 0o20600, posix.makedev(1, 1))
print("ESCAPED: device node created")
print(open("mem", "rb").read(16))
