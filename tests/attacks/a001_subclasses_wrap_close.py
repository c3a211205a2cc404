# attack: walk object.__subclasses__() to os._wrap_close and call os.system through its __init__.__globals__
# expect: denied
# layer: audit
for c in ().__class__.__base__.__subclasses__():
    if c.__name__ == "_wrap_close":
        c.__init__.__globals__["system"]("echo ESCAPED")
        break
else:
    # os not imported yet: any class defined in os.py or a stdlib module with system reachable
    import os
    os.system("echo ESCAPED")
