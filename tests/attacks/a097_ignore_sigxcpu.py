# attack: ignore SIGXCPU (soft CPU limit) to keep burning
# expect: cpu_limit
# args: --cpu-time 1s --wall-time 6s
import sys

_signal = sys.modules["_signal"]
_signal.signal(_signal.SIGXCPU, _signal.SIG_IGN)
while True:
    pass
