# attack: symlink to the parent directory of scratch (other runs' scratch dirs) and list it
# expect: denied
# layer: audit
import os

os.symlink("..", "up")
print("ESCAPED", os.listdir("up"))
