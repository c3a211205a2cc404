# attack: compile with a "<frozen importlib._bootstrap>" filename so the hook takes the code for the import machinery
# expect: denied
# layer: audit
exec(compile("import zipfile\nprint('ESCAPED', zipfile)", "<frozen importlib._bootstrap>", "exec"))
