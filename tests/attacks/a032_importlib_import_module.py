# attack: importlib.import_module("posix") then posix_spawn a shell
# expect: denied
# layer: import|audit
import importlib

posix = importlib.import_module("posix")
posix.posix_spawn("/bin/sh", ["sh", "-c", "echo ESCAPED"], {})
