# attack: pathlib.Path.read_bytes on /etc/shadow
# expect: denied
# layer: audit
import pathlib

print("ESCAPED", pathlib.Path("/etc/shadow").read_bytes())
