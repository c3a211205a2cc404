# attack: build a code object with types.CodeType whose bytecode loads out of range (memory read primitive)
# expect: denied
# layer: audit
import types

c = (lambda: 0).__code__
evil = types.CodeType(c.co_argcount, c.co_posonlyargcount, c.co_kwonlyargcount, c.co_nlocals,
                      c.co_stacksize, c.co_flags, bytes([100, 255, 83, 0]), (), c.co_names,
                      c.co_varnames, c.co_filename, c.co_name, c.co_qualname, c.co_firstlineno,
                      c.co_linetable, c.co_exceptiontable)
print("ESCAPED: crafted code object", evil)
