# attack: chdir out of scratch to /, then open a relative path
# expect: denied
# layer: audit
import os

os.chdir("/")
print("ESCAPED", open("etc/passwd").read()[:40])
