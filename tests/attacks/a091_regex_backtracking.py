# attack: catastrophic regex backtracking to hog the CPU past the wall clock
# expect: timeout
# args: --wall-time 1s --cpu-time 5s
import re

re.match(r"(a+)+$", "a" * 64 + "b")
print("ESCAPED: finished")
