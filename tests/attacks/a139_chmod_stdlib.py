# attack: chmod a stdlib file world-writable through posix (path-based, no open)
# expect: denied
# layer: audit
import sys

sys.modules["posix"].chmod("/usr/lib/python3.11/colorsys.py", 0o777)
print("ESCAPED: chmod on the stdlib")
