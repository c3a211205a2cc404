# attack: code.replace(co_filename=stdlib path) so the code counts as trusted, then import outside the allowlist
# expect: denied
# layer: audit
src = compile("import zipfile\nprint('ESCAPED: trusted import', zipfile)", "<x>", "exec")
exec(src.replace(co_filename="/usr/lib/python3.11/os.py"))
