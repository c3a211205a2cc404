# attack: symlink in scratch to /etc/shadow, then read the link
# expect: denied
# layer: audit
import os

os.symlink("/etc/shadow", "s")
print("ESCAPED", open("s").read())
