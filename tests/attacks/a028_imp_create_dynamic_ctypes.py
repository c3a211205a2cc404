# attack: _imp.create_dynamic to dlopen lib-dynload's _ctypes without the import statement, then call fork() natively
# expect: denied
# layer: audit|import
import os
import sys

fi = sys.modules["_frozen_importlib"]
D = "/usr/lib/python3.11/lib-dynload"
path = [os.path.join(D, n) for n in os.listdir(D) if n.startswith("_ctypes.")][0]
m = sys.modules["_imp"].create_dynamic(fi.ModuleSpec("_ctypes", None, origin=path))
print("ESCAPED: native module loaded", m)
