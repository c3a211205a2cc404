# attack: read /proc/1/environ (the environment of PID 1, or of whatever process holds that PID)
# expect: denied
# layer: audit
print("ESCAPED", open("/proc/1/environ", "rb").read())
