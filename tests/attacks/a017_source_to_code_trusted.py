# attack: have importlib's SourceLoader.source_to_code compile snippet text under a stdlib filename (compile() runs from an importlib frame, so it passes), exec it, import outside the allowlist
# expect: denied
# layer: audit|import
import sys

fie = sys.modules["_frozen_importlib_external"]
code = fie.SourceLoader.source_to_code(None, b"import zipfile\nprint('ESCAPED: import outside the allowlist', zipfile)",
                                       "/usr/lib/python3.11/evil.py")
exec(code)
