# attack: _frozen_importlib.__import__ (no policy wrapper) for posix, then execv /bin/sh
# expect: denied
# layer: audit|import
import sys

posix = sys.modules["_frozen_importlib"].__import__("posix")
posix.execv("/bin/sh", ["sh", "-c", "echo ESCAPED"])
