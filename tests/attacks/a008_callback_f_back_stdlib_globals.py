# attack: from a json object_hook callback, read the stdlib caller's frame globals and builtins, hunting an unhooked import
# expect: ok
import builtins
import json
import sys

hits = []


def hook(d):
    f = sys._getframe(1)
    while f is not None:
        if f.f_builtins.get("__import__") is not builtins.__import__:
            hits.append(f.f_code.co_filename)
        if "_report" in f.f_globals:
            hits.append("pyshim")
        f = f.f_back
    return d


json.loads('{"a": {"b": 1}}', object_hook=hook)
if hits:
    print("ESCAPED:", hits)
print("blocked: every frame shares the hooked builtins")
