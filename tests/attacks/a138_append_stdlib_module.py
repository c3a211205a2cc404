# attack: append code to a stdlib module file (readable, so maybe writable?) to run in later runs
# expect: denied
# layer: audit
with open("/usr/lib/python3.11/colorsys.py", "a") as f:
    f.write("\nprint('ESCAPED')\n")
