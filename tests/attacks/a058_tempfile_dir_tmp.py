# attack: tempfile.mkstemp(dir="/tmp") to create a file outside scratch
# expect: denied
# layer: audit
import tempfile

fd, path = tempfile.mkstemp(dir="/tmp")
print("ESCAPED: created", path)
