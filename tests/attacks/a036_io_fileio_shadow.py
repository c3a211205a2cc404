# attack: io.FileIO on /etc/shadow (open() never called)
# expect: denied
# layer: audit
import io

print("ESCAPED", io.FileIO("/etc/shadow").read())
