# attack: read /proc/self/environ, the environment the worker inherited from the host
# expect: denied
# layer: audit
print("ESCAPED", open("/proc/self/environ", "rb").read())
