# attack: zipimport.zipimporter on a file outside the grant (reads it with io.open_code)
# expect: ok
# layer: audit
import sys

zipimport = sys.modules["zipimport"]

try:
    z = zipimport.zipimporter("/etc/passwd")
    print("ESCAPED: zipimporter opened /etc/passwd", z)
except zipimport.ZipImportError as e:
    print("blocked:", e)
