# attack: walk tb_frame.f_back from a caught exception to a host/pyshim frame and rewrite the report encoder
# expect: ok
try:
    1 / 0
except ZeroDivisionError as e:
    f = e.__traceback__.tb_frame
found = []
while f is not None:
    g = f.f_globals
    if "_report" in g or "finish" in g or "_ESC" in g:
        g["_ESC"] = {}  # the report would no longer escape quotes: verdict forgery
        found.append(g.get("__name__"))
    f = f.f_back
if found:
    print("ESCAPED: reached pyshim globals", found)
print("blocked: only snippet frames on the stack")
