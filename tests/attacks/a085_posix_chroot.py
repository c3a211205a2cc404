# attack: posix.chroot (no audit event): classic chroot escape set-up
# expect: denied
# layer: seccomp
import sys

posix = sys.modules["posix"]
posix.chroot(".")
print("ESCAPED: chroot worked")
