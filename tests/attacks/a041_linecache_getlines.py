# attack: linecache.getlines("/etc/passwd") (linecache swallows OSError, so check what it returns)
# expect: ok
# layer: audit
import linecache

lines = linecache.getlines("/etc/passwd")
if lines:
    print("ESCAPED", lines[:2])
print("blocked: linecache got nothing")
