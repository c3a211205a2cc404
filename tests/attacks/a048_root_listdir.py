# attack: list /root (root's home) with os.scandir
# expect: denied
# layer: audit
import os

print("ESCAPED", [e.name for e in os.scandir("/root")])
