# attack: _imp.create_dynamic of _socket.so under an innocent spec name, to dodge the name-based denylist
# expect: denied
# layer: audit|import|seccomp
import os
import sys

fi = sys.modules["_frozen_importlib"]
D = "/usr/lib/python3.11/lib-dynload"
paths = [os.path.join(D, n) for n in sorted(os.listdir(D)) if n.startswith(("_socket.", "_ctypes."))]
m = sys.modules["_imp"].create_dynamic(fi.ModuleSpec("math", None, origin=paths[0]))
print("ESCAPED: native module loaded under another name", m)
