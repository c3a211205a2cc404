# attack: subprocess.run a shell
# expect: denied
# layer: import
import subprocess

subprocess.run(["sh", "-c", "echo ESCAPED"])
