# attack: _imp.create_dynamic to dlopen lib-dynload's _ctypes without the import statement, then call fork() natively
# expect: denied
# layer: audit|import
import glob
import sys

fi = sys.modules["_frozen_importlib"]
path = glob.glob("/usr/lib/python3.11/lib-dynload/_ctypes.*.so")[0]
m = sys.modules["_imp"].create_dynamic(fi.ModuleSpec("_ctypes", None, origin=path))
print("ESCAPED: native module loaded", m)
