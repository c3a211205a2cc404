# attack: find_spec + module_from_spec for _ctypes through importlib internals (skips builtins.__import__)
# expect: denied
# layer: import
import sys

fi = sys.modules["_frozen_importlib"]
spec = fi._find_spec("_ctypes", None)
m = fi.module_from_spec(spec)
print("ESCAPED", m)
