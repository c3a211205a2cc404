# attack: an uncaught exception whose __str__ runs while the host builds the report and writes a fake report first
# expect: denied
# layer: audit
import sys


class Sneaky(PermissionError):
    def __str__(self):
        sys.modules["posix"].write(4, b'{"exception": null, "denials": []}')
        return "pysnip: nothing to see"


try:
    open("/etc/shadow")
except PermissionError:
    raise Sneaky()
