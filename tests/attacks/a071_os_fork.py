# attack: os.fork
# expect: denied
# layer: audit
import os

if os.fork() == 0:
    print("ESCAPED: child")
    os._exit(0)
