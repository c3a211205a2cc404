"""Compile pyshim/*.py into one marshalled list of (module name, code object).

Run by the interpreter version the host links, so the bytecode matches."""
import marshal
import os
import sys


def main(out, sources):
    mods = []
    for path in sorted(sources):
        name = os.path.splitext(os.path.basename(path))[0]
        with open(path, "rb") as f:
            src = f.read()
        mods.append((name, compile(src, "<pysnip:%s>" % name, "exec", dont_inherit=True, optimize=0)))
    with open(out, "wb") as f:
        f.write(marshal.dumps(mods))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
