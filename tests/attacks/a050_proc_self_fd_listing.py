# attack: list /proc/self/fd to find descriptors inherited from the host
# expect: denied
# layer: audit
import os

print("ESCAPED", os.listdir("/proc/self/fd"))
