# attack: _io.open from sys.modules on /etc/passwd
# expect: denied
# layer: audit
import sys

print("ESCAPED", sys.modules["_io"].open("/etc/passwd").read())
