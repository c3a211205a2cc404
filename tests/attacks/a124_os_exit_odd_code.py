# attack: os._exit with an odd code (125 is the worker's phase-failure code) and no report
# expect: ok
import os

print("before exit")
os._exit(125)
