# attack: flood fd 1 directly with posix.write from sys.modules (bypassing sys.stdout)
# expect: output_limit
# args: --output-limit 64K
import sys

posix = sys.modules["posix"]
while True:
    posix.write(1, b"w" * 65536)
