# attack: types.FunctionType(code, posix.__dict__) so the function's globals are the posix module, then call system
# expect: denied
# layer: audit
import sys
import types

code = compile("system('echo ESCAPED')", "<f>", "eval")
f = types.FunctionType(code, sys.modules["posix"].__dict__)
f()
