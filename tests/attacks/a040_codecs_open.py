# attack: codecs.open on /etc/passwd
# expect: denied
# layer: audit
import codecs

print("ESCAPED", codecs.open("/etc/passwd", encoding="latin-1").read())
