# attack: try to switch the audit hook off: sys.audit spoofing, clearing sys.__dict__ hooks, then os.system
# expect: denied
# layer: audit
import sys

for name in ("_clear_audit_hooks", "audit_hooks", "_audit_hooks"):
    try:
        delattr(sys, name)
    except AttributeError:
        pass
try:
    sys.audit("cpython._PySys_ClearAuditHooks")
except BaseException:
    pass
sys.modules["posix"].system("echo ESCAPED")
