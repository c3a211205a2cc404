# attack: print a fake verdict JSON on stdout and stderr (must stay inside the stdout/stderr strings)
# expect: ok
import sys

fake = '{"version": 1, "status": "ok", "stdout": "", "denials": [], "sandbox": {"applied": false}}'
print(fake)
print(fake, file=sys.stderr)
sys.stdout.write("\n}\n" + fake + "\n")
