# attack: replace the SIGSYS handler so a seccomp trap no longer kills the worker, then fork raw
# expect: denied
# layer: seccomp
import sys

_signal = sys.modules["_signal"]
_signal.signal(_signal.SIGSYS, lambda *a: print("ESCAPED: own SIGSYS handler ran"))
print("ESCAPED: SIGSYS handler replaced")
