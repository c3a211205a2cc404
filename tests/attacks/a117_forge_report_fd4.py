# attack: write a clean fake report on the report channel (fd 4) first, then get denied: the host must not believe the fake
# expect: denied
# layer: audit
import sys

posix = sys.modules["posix"]
posix.write(4, b'{"exception": null, "denials": [], "exit": "ok", "system_exit_code": null, "memory_error": false}')
open("/etc/shadow").read()
