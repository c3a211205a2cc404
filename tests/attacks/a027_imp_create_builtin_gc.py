# attack: _imp.create_builtin to get a module that the allowlist refuses (gc), then gc.get_objects
# expect: denied
# layer: audit|import
import sys

spec = sys.modules["_frozen_importlib"].ModuleSpec("gc", None)
gc = sys.modules["_imp"].create_builtin(spec)
print("ESCAPED: %d objects" % len(gc.get_objects()))
