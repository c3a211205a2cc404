# attack: os._wrap_close reached from object.__subclasses__() after something imported os; popen through its globals
# expect: denied
# layer: audit|import
import tempfile  # noqa: F401  (imports os, defining os._wrap_close)

for c in object.__subclasses__():
    if c.__name__ == "_wrap_close":
        print(c.__init__.__globals__["popen"]("echo ESCAPED").read())
        break
