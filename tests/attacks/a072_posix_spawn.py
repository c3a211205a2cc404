# attack: os.posix_spawn /bin/sh
# expect: denied
# layer: audit
import os

os.posix_spawn("/bin/sh", ["sh", "-c", "echo ESCAPED"], {})
