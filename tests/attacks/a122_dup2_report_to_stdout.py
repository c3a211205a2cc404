# attack: dup2 stdout onto the report fd so the real report lands in stdout, then get denied
# expect: denied
# layer: audit
import sys

sys.modules["posix"].dup2(1, 4)
open("/etc/shadow").read()
