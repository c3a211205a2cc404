# attack: hard-link /etc/passwd into the scratch directory, then read or write the link
# expect: denied
# layer: audit
import os

os.link("/etc/passwd", "p")
print("ESCAPED", open("p").read()[:40])
