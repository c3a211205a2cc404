# attack: importlib's FileLoader.get_data (the import system's own reader) on /etc/shadow
# expect: denied
# layer: audit
import sys

fie = sys.modules["_frozen_importlib_external"]
print("ESCAPED", fie.FileLoader("x", "/etc/shadow").get_data("/etc/shadow"))
