# attack: exec with a custom __builtins__ whose __import__ is importlib's unwrapped one, reach posix.system
# expect: denied
# layer: audit|import
import sys

imp = sys.modules["_frozen_importlib"].__import__
exec("import posix\nposix.system('echo ESCAPED')", {"__builtins__": {"__import__": imp}})
