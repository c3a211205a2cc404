# attack: open /proc/self/mem read-write to patch the interpreter (e.g. the audit hook's state) from inside
# expect: denied
# layer: audit
import sys

posix = sys.modules["posix"]
fd = posix.open("/proc/self/mem", posix.O_RDWR)
print("ESCAPED: /proc/self/mem open", fd)
