# attack: os.execv replacing the worker with a shell
# expect: denied
# layer: audit
import os

os.execv("/bin/sh", ["sh", "-c", "echo ESCAPED"])
