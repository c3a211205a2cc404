# attack: catch SIGALRM/SIGTERM/SIGINT and keep running, hoping the wall clock is a catchable signal
# expect: timeout
# args: --wall-time 1s --cpu-time 5s
import sys

_signal = sys.modules["_signal"]
for s in (_signal.SIGALRM, _signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP, _signal.SIGUSR1):
    _signal.signal(s, lambda *a: None)
_signal.setitimer(_signal.ITIMER_REAL, 0.1, 0.1)
while True:
    pass
