# attack: create a file in scratch, then rename it into /tmp
# expect: denied
# layer: audit
import os

open("f", "w").write("x")
os.rename("f", "/tmp/pysnip-attack-a057")
print("ESCAPED: renamed out of scratch")
