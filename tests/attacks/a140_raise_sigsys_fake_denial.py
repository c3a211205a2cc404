# attack: raise SIGSYS itself so that the run ends looking like a seccomp denial (event "read") that never happened
# expect: ok
import sys

_signal = sys.modules["_signal"]
_signal.raise_signal(_signal.SIGSYS)
_signal.pthread_kill(sys.modules["_thread"].get_ident(), _signal.SIGSYS)
print("ignored: a SIGSYS that is not the filter's ends nothing")
