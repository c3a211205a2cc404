# attack: confused deputy: pure-Python pickle's find_class imports a module outside the allowlist from a stdlib frame
# expect: denied
# layer: audit|import
import pickle

obj = pickle._loads(b"czipfile\nZipFile\n.")
print("ESCAPED: pickle imported", obj)
