# attack: gc via _imp.create_builtin/exec_builtin (gc is not allowed), unfreeze + DEBUG_SAVEALL + collect, search gc.garbage for host objects
# expect: denied
# layer: audit|import
import sys

_imp = sys.modules["_imp"]
gc = _imp.create_builtin(sys.modules["_frozen_importlib"].ModuleSpec("gc", None))
_imp.exec_builtin(gc)
gc.unfreeze()
gc.set_debug(32)  # DEBUG_SAVEALL
gc.collect()
print("ESCAPED: gc usable without an import,", len(getattr(gc, "garbage", [])), "objects saved")
for o in getattr(gc, "garbage", []):
    if isinstance(o, dict) and ("_ESC" in o or "finish" in o):
        print("ESCAPED: pyshim globals in gc.garbage")
