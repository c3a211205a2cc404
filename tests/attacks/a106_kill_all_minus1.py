# attack: kill(-1, SIGKILL): every process the worker may signal
# expect: denied
# layer: audit
import os

os.kill(-1, 9)
print("ESCAPED: kill(-1) returned")
