# attack: SIGKILL the parent (the pysnip supervisor) through posix.kill
# expect: denied
# layer: audit
import sys

posix = sys.modules["posix"]
ppid = posix.getppid()
posix.kill(ppid if ppid > 0 else 1 << 22, 9)
print("ESCAPED: signalled the parent", ppid)
