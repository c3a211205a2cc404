# attack: _imp.create_dynamic of _socket.so under an innocent spec name, to dodge the name-based denylist
# expect: denied
# layer: audit|import|seccomp
import glob
import sys

fi = sys.modules["_frozen_importlib"]
paths = glob.glob("/usr/lib/python3.11/lib-dynload/_socket.*.so") + \
    glob.glob("/usr/lib/python3.11/lib-dynload/_ctypes.*.so")
m = sys.modules["_imp"].create_dynamic(fi.ModuleSpec("math", None, origin=paths[0]))
print("ESCAPED: native module loaded under another name", m)
