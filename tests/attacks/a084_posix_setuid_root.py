# attack: posix.setuid(0) (no audit event exists for it): regain root after the identity drop
# expect: denied
# layer: seccomp
import sys

sys.modules["posix"].setuid(0)
print("ESCAPED: uid", sys.modules["posix"].getuid())
