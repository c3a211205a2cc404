# attack: sqlite3 (not allowed) reached through a stdlib-looking code object, then ATTACH a database in /tmp: sqlite's C code opens files with no audit event
# expect: denied
# layer: audit|import
import sys

fie = sys.modules["_frozen_importlib_external"]
exec(fie.SourceLoader.source_to_code(None, b"import sqlite3", "/usr/lib/python3.11/x.py"), globals())
con = sqlite3.connect(":memory:")  # noqa: F821
con.execute("ATTACH DATABASE '/tmp/pysnip-attack-a068.db' AS x")
con.execute("CREATE TABLE x.t(a)")
print("ESCAPED: sqlite wrote /tmp/pysnip-attack-a068.db")
