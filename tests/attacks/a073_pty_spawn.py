# attack: pty.spawn a shell
# expect: denied
# layer: import
import pty

pty.spawn(["sh", "-c", "echo ESCAPED"])
