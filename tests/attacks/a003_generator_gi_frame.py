# attack: from a running generator, follow gi_frame.f_back and f_builtins looking for an unhooked __import__
# expect: ok
import builtins


def gen():
    f = g.gi_frame
    seen = []
    while f is not None:
        seen.append(f)
        f = f.f_back
    yield seen


g = gen()
frames = next(g)
for fr in frames:
    imp = fr.f_builtins.get("__import__")
    if imp is not builtins.__import__ or "_report" in fr.f_globals:
        print("ESCAPED: frame with different builtins or pyshim globals", fr)
    if fr.f_code.co_filename != "<snippet>":
        print("ESCAPED: non-snippet frame below the snippet", fr.f_code.co_filename)
print("blocked: %d snippet frames only" % len(frames))
