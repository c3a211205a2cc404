# attack: look for a secret in the environment the host was started with (os.environ, posix.environ)
# expect: ok
# env: PYSNIP_ATTACK_CANARY=canary-3f9a1c
import os
import sys

if any(b"canary-3f9a1c" in v for v in sys.modules["posix"].environ.values()) or \
        "canary-3f9a1c" in os.environ.get("PYSNIP_ATTACK_CANARY", ""):
    print("ESCAPED: host environment visible:", os.environ.get("PYSNIP_ATTACK_CANARY"))
print("blocked: no host secret in the environment")
