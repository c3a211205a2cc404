# attack: flood stdout and stderr alternately (each under the cap alone, not together)
# expect: output_limit
# args: --output-limit 64K
import sys

for _ in range(10 ** 6):
    sys.stdout.write("o" * 1000)
    sys.stderr.write("e" * 1000)
