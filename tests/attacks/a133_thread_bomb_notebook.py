# attack: (notebook policy, threads allowed) start threads without bound until something gives
# expect: ok
# args: --policy notebook --wall-time 5s
import threading
import time

n = 0
try:
    while n < 100000:
        threading.Thread(target=time.sleep, args=(10,), daemon=True).start()
        n += 1
except RuntimeError as e:
    print("blocked after", n, "threads:", e)
if n >= 100000:
    print("ESCAPED: 100000 threads")
