# attack: exec bytes whose coding cookie (unicode_escape) hides an import of posix and a call to system
# expect: denied
# layer: import|audit
exec(b"# -*- coding: unicode_escape -*-\n\\x69mport posix; posix.system('echo ESC' 'APED')\n")
