# attack: io.open_code (the hook-able opener for code) on /etc/passwd
# expect: denied
# layer: audit
import sys

print("ESCAPED", sys.modules["_io"].open_code("/etc/passwd").read())
