# attack: one single 50 MB line without newline
# expect: output_limit
# args: --output-limit 64K
import sys

sys.stdout.write("z" * (50 << 20))
