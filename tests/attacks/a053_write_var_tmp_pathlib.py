# attack: pathlib.Path.write_text in /var/tmp
# expect: denied
# layer: audit
import pathlib

pathlib.Path("/var/tmp/pysnip-attack-a053").write_text("x")
print("ESCAPED: wrote /var/tmp")
