# attack: import fcntl and push a command into the terminal with ioctl TIOCSTI
# expect: denied
# layer: import
import fcntl

fcntl.ioctl(0, 0x5412, b"e")
print("ESCAPED: TIOCSTI")
