# attack: code.replace(co_code=...) with a LOAD_CONST far out of bounds, then run it
# expect: denied
# layer: audit
f = lambda: 0  # noqa: E731
f.__code__ = f.__code__.replace(co_code=bytes([151, 0, 100, 200, 83, 0]), co_consts=())
print("ESCAPED: crafted bytecode installed")
f()
