# attack: (notebook policy, threads allowed) a non-daemon thread that keeps running after the main code ends, to outlive the wall clock
# expect: timeout
# args: --policy notebook --wall-time 1s
import threading
import time


def spin():
    while True:
        time.sleep(0.05)


threading.Thread(target=spin).start()
print("main done")
