# attack: load a stdlib module outside the allowlist straight from its file with SourceFileLoader, no finder consulted
# expect: denied
# layer: audit|import
import sys

fie = sys.modules["_frozen_importlib_external"]
fi = sys.modules["_frozen_importlib"]
loader = fie.SourceFileLoader("zipfile", "/usr/lib/python3.11/zipfile.py")
spec = fi.spec_from_loader("zipfile", loader)
mod = fi.module_from_spec(spec)
loader.exec_module(mod)
print("ESCAPED: loaded", mod.ZipFile)
