# attack: use builtins.__loader__ (BuiltinImporter) to load the posix module and fork
# expect: denied
# layer: audit|import
import builtins

posix = builtins.__loader__.load_module("posix")
pid = posix.fork()
if pid == 0:
    print("ESCAPED: forked")
    posix._exit(0)
