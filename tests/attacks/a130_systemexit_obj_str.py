# attack: SystemExit whose code object's __str__ runs in the host's finish() and tries to reopen /etc/passwd
# expect: ok
# layer: audit
class Code:
    def __str__(self):
        try:
            return "ESCAPED " + open("/etc/passwd").read()
        except PermissionError:
            return "blocked: still hooked during finish"


raise SystemExit(Code())
