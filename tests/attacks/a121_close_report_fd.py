# attack: close the report channel (fd 4), then get denied: without a report the denial would vanish
# expect: denied
# layer: audit
import sys

sys.modules["posix"].close(4)
open("/etc/shadow").read()
