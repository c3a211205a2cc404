# attack: probe host PIDs with kill(pid, 0) to find and then signal other processes
# expect: denied
# layer: audit
import os

alive = [p for p in range(2, 400) if os.kill(p, 0) is None]
print("ESCAPED: can signal", alive)
