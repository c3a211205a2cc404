# attack: lift the int/str digit limit and convert a gigantic int (quadratic time)
# expect: timeout|cpu_limit
# args: --wall-time 1s --cpu-time 5s
import sys

sys.set_int_max_str_digits(0)
s = str(7 ** 5_000_000)
print("ESCAPED: converted", len(s))
