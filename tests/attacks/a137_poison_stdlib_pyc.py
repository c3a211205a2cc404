# attack: poison the stdlib's bytecode cache (the root host would load it next start) with importlib's own set_data writer
# expect: ok
# layer: audit
import sys

fie = sys.modules["_frozen_importlib_external"]
src = "/usr/lib/python3.11/colorsys.py"
cache = fie.cache_from_source(src)
fie.SourceFileLoader("colorsys", src).set_data(cache, b"ESCAPED-poisoned-pyc")
try:
    with open(cache, "rb") as f:
        if b"poisoned" in f.read():
            print("ESCAPED: wrote", cache)
except OSError:
    pass
print("blocked: the stdlib cache is read-only")
