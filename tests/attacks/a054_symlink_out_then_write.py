# attack: make a symlink in scratch pointing at /tmp and write through it
# expect: denied
# layer: audit
import os

os.symlink("/tmp", "out")
with open("out/pysnip-attack-a054", "w") as f:
    f.write("x")
print("ESCAPED: wrote through a symlink")
