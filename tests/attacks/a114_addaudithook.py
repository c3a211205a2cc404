# attack: sys.addaudithook with a hook that ends the run on the next event (CPython swallows the hook's refusal, so check it is not installed)
# expect: ok
# layer: audit
import sys


def hook(event, args):
    if event == "pysnip.attack":
        print("ESCAPED: my audit hook was installed")


sys.addaudithook(hook)
sys.audit("pysnip.attack")
print("blocked: hook not installed")
