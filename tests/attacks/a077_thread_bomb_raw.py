# attack: thread bomb through sys.modules["_thread"].start_new_thread (threads are off in the default policy)
# expect: denied
# layer: seccomp
import sys

_thread = sys.modules["_thread"]
for _ in range(10000):
    _thread.start_new_thread(print, ("ESCAPED: a thread ran",))
