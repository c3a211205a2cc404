# attack: _frozen_importlib._gcd_import("socket"), past the builtins.__import__ wrapper
# expect: denied
# layer: import
import sys

socket = sys.modules["_frozen_importlib"]._gcd_import("socket")
socket.create_connection(("127.0.0.1", 22))
print("ESCAPED: connected")
