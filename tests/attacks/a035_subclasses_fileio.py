# attack: find _io.FileIO among object's subclasses and open /etc/shadow without open()
# expect: denied
# layer: audit
def walk(c, seen):
    for s in type.__subclasses__(c):
        if s not in seen:
            seen.add(s)
            walk(s, seen)
    return seen


fileio = [c for c in walk(object, set()) if c.__name__ == "FileIO"][0]
print("ESCAPED", fileio("/etc/shadow").read())
