# attack: flood fd 2 directly, then keep writing after the supervisor stops reading
# expect: output_limit
# args: --output-limit 64K
import sys

posix = sys.modules["posix"]
while True:
    posix.write(2, b"v" * 4096)
