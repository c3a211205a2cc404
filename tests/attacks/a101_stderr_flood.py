# attack: flood stderr
# expect: output_limit
# args: --output-limit 64K
import sys

while True:
    sys.stderr.write("y" * 100 + "\n")
