# attack: os.spawnv (fork+exec inside os.py)
# expect: denied
# layer: audit
import os

os.spawnv(os.P_WAIT, "/bin/sh", ["sh", "-c", "echo ESCAPED"])
