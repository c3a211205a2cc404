# attack: http.client.HTTPConnection to an internal address
# expect: denied
# layer: import
import http.client

c = http.client.HTTPConnection("169.254.169.254", timeout=1)
c.request("GET", "/")
print("ESCAPED", c.getresponse().read())
