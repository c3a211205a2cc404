# attack: replace the wrapped builtins.__import__ by importlib's own and drop the policy finder, then import a module outside the allowlist
# expect: denied
# layer: import|audit
import builtins
import sys

fi = sys.modules["_frozen_importlib"]
builtins.__import__ = fi.__import__
sys.meta_path[:] = [m for m in sys.meta_path if getattr(m, "__name__", "") != "pysnip_finder"]
import zipfile  # noqa: E402  (notebook-only module, not in the default allowlist)

print("ESCAPED: imported", zipfile)
