# attack: gc.get_referents of a function to walk to its globals and closure without attribute access
# expect: denied
# layer: audit|import
import gc
import linecache

print("ESCAPED", gc.get_referents(linecache.getline))
