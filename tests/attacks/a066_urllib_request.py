# attack: urllib.request.urlopen (urllib is allowed; urllib.request needs http.client and socket)
# expect: denied
# layer: import
import urllib.request

print("ESCAPED", urllib.request.urlopen("http://127.0.0.1/", timeout=1).read())
