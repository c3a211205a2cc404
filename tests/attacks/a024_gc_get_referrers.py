# attack: gc.get_referrers(builtins) to find module dicts and frames holding it, via the builtin gc module
# expect: denied
# layer: audit|import
import builtins
import sys

gc = sys.modules["_imp"].create_builtin(sys.modules["_frozen_importlib"].ModuleSpec("gc", None))
refs = gc.get_referrers(builtins)
print("ESCAPED: %d referrers of builtins" % len(refs))
