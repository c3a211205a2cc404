# attack: signal.alarm(1) with the default action: the worker kills itself with SIGALRM (reported as a signal, nothing else)
# expect: signal
# args: --wall-time 4s
import sys
import time

_signal = sys.modules["_signal"]
_signal.alarm(1)
time.sleep(3)
print("ESCAPED: alarm ignored")
