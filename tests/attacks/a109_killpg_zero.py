# attack: killpg(0)/kill(0) to signal the whole process group and anything that shares it
# expect: denied
# layer: audit
import os

os.killpg(0, 15)
print("ESCAPED: killpg(0) returned")
