# attack: import ctypes and call libc system()
# expect: denied
# layer: import
import ctypes

ctypes.CDLL(None).system(b"echo ESCAPED")
