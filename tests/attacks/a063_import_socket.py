# attack: import socket and connect to localhost
# expect: denied
# layer: import
import socket

socket.create_connection(("127.0.0.1", 80), timeout=1)
print("ESCAPED: connected")
