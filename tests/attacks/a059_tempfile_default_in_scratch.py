# attack: tempfile's default directory must be the scratch dir, not the host's /tmp (positive control: it works)
# expect: ok
import os
import tempfile

d = tempfile.gettempdir()
if os.path.realpath(d) != os.path.realpath(os.getcwd()):
    print("ESCAPED: tempfile writes to", d)
with tempfile.NamedTemporaryFile("w") as f:
    f.write("data")
    f.flush()
    if not os.path.realpath(f.name).startswith(os.path.realpath(os.getcwd())):
        print("ESCAPED: temp file outside scratch", f.name)
print("blocked: temp files stay in scratch")
