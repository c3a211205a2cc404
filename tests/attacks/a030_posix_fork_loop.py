# attack: fork bomb through sys.modules["posix"].fork
# expect: denied
# layer: audit
import sys

posix = sys.modules["posix"]
for _ in range(1000):
    if posix.fork() == 0:
        print("ESCAPED: child process")
