# attack: os.readlink outside the readable paths (CPython raises no audit event for it): where pysnip's binary and the host's symlinks point
# expect: denied
# layer: audit
import os

os.symlink("in-scratch", "mine")
assert os.readlink("mine") == "in-scratch"       # control: a link in scratch reads
for p in ("/proc/self/exe", "/proc/self/cwd", "/etc/mtab"):
    print("ESCAPED: readlink", p, "->", os.readlink(p))
