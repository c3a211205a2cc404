# attack: call system() on the posix module already in sys.modules, without any import
# expect: denied
# layer: audit
import sys

sys.modules["posix"].system("echo ESCAPED")
