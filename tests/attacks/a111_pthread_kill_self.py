# attack: signal.pthread_kill of the main thread with SIGTERM (only the worker itself may be signalled)
# expect: signal
import sys

_signal = sys.modules["_signal"]
_signal.pthread_kill(sys.modules["_thread"].get_ident(), _signal.SIGTERM)
print("ESCAPED: survived SIGTERM")
