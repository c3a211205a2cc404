# attack: compile() with a stdlib filename so the resulting frames look trusted, then import outside the allowlist
# expect: denied
# layer: audit
exec(compile("import zipfile\nprint('ESCAPED', zipfile)", "/usr/lib/python3.11/zipfile.py", "exec"))
