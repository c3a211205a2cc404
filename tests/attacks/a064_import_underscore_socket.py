# attack: import _socket (the C module) directly
# expect: denied
# layer: import
import _socket

s = _socket.socket()
print("ESCAPED: raw socket", s)
