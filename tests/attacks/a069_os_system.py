# attack: os.system
# expect: denied
# layer: audit
import os

os.system("echo ESCAPED")
