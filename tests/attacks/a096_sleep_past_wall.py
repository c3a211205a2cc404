# attack: time.sleep past the wall clock (no CPU used)
# expect: timeout
# args: --wall-time 1s
import time

time.sleep(60)
print("ESCAPED: slept through")
