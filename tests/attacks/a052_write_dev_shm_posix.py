# attack: create a file in /dev/shm with posix.open(O_CREAT) from sys.modules
# expect: denied
# layer: audit
import sys

posix = sys.modules["posix"]
fd = posix.open("/dev/shm/pysnip-attack-a052", posix.O_WRONLY | posix.O_CREAT, 0o644)
print("ESCAPED: created /dev/shm file", fd)
