# attack: gc.get_objects() (via sys.modules if import is refused) to find pyshim's report encoder
# expect: denied
# layer: audit|import
import sys

gc = sys.modules.get("gc") or __import__("gc")
for o in gc.get_objects():
    if isinstance(o, dict) and "_ESC" in o:
        o["_ESC"] = {}
        print("ESCAPED: found pyshim globals")
